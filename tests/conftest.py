"""Shared fixtures: no API key from the developer's environment ever reaches a test."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SECRET_VARS = (
    "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
    "GEMINI_API_KEY", "GOOGLE_API_KEY", "GEMINI_BASE_URL", "SERPER_API_KEY", "SERPER_BASE_URL",
    "AGENT_MODEL", "AGENT_FALLBACK_MODELS", "AGENT_SUMMARY_MODEL", "OLLAMA_BASE_URL",
    "AGENT_CONTEXT_BUDGET", "AGENT_WORKSPACE", "AGENT_TRACE_DIR", "SCRAPE_ALLOW_PRIVATE_URLS",
)


@pytest.fixture(autouse=True)
def _no_real_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Remove API keys and agent settings from the environment; run each test in its own cwd."""
    for var in SECRET_VARS:
        monkeypatch.delenv(var, raising=False)
    # A developer's own .env must not leak into tests either.
    monkeypatch.setenv("AGENT_ENV_FILE", str(tmp_path / "no.env"))
    monkeypatch.chdir(tmp_path)
