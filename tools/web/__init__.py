"""The tools that reach the web: search engines, the safe fetcher, and scrape.

Owns search (Serper, DuckDuckGo), the HTTP(S) fetcher with its address policy, redirect checks and
one deadline per fetch (fetch.py, addresses.py, fetch_deadline.py), and the scrape tool. Turning a
fetched body into text is tools/documents' job. May import core, config, providers, the cache, the
tools base modules and tools/documents; nothing in tools/documents or tools/media imports it except
through the fetcher (look and transcribe fetch URLs with scrape's rules).
"""
