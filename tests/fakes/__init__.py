"""Test doubles: a scripted chat model and loopback HTTP servers."""
