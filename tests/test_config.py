"""Settings: defaults, then .env, then the environment, then CLI flags win."""

from __future__ import annotations

from pathlib import Path

import pytest

from config import load_settings
from core.errors import ConfigError


def test_precedence_dotenv_environment_cli(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("AGENT_MAX_STEPS=7\nAGENT_CONCURRENCY=3\nAGENT_MODEL=openai:from-dotenv\nSERPER_API_KEY=s1\n")
    s = load_settings({"model": "anthropic:from-cli"}, environ={"AGENT_CONCURRENCY": "5"}, env_file=env_file)
    assert (s.max_steps, s.concurrency, s.model, s.serper_api_key) == (7, 5, "anthropic:from-cli", "s1")


def test_defaults_without_any_source(tmp_path: Path) -> None:
    s = load_settings({}, environ={}, env_file=tmp_path / "none")
    assert (s.max_steps, s.concurrency, s.model, s.trace_dir) == (15, 1, None, None)  # None: the run's own
    assert (s.runs_dir, s.keep_workspaces, s.traces) == (Path("runs"), 20, True)


def test_google_api_key_is_accepted_for_gemini(tmp_path: Path) -> None:
    s = load_settings({}, environ={"GOOGLE_API_KEY": "g"}, env_file=tmp_path / "none")
    assert s.api_key_for("gemini") == "g"


def test_lists_booleans_and_empty_values(tmp_path: Path) -> None:
    env = {"AGENT_FALLBACK_MODELS": "openai:a, gemini:b", "SCRAPE_ALLOW_PRIVATE_URLS": "1", "OPENAI_API_KEY": ""}
    s = load_settings({}, environ=env, env_file=tmp_path / "none")
    assert s.fallback_models == ("openai:a", "gemini:b") and s.scrape_allow_private and s.openai_api_key is None


@pytest.mark.parametrize("env, setting", [({"AGENT_MAX_STEPS": "many"}, "AGENT_MAX_STEPS"),
                                          ({"AGENT_MAX_STEPS": "0"}, "max_steps"),
                                          ({"AGENT_CONCURRENCY": "0"}, "concurrency")])
def test_bad_values_are_configuration_errors(tmp_path: Path, env: dict[str, str], setting: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_settings({}, environ=env, env_file=tmp_path / "none")
    assert err.value.setting == setting


def test_settings_are_frozen(tmp_path: Path) -> None:
    s = load_settings({}, environ={}, env_file=tmp_path / "none")
    with pytest.raises(AttributeError):
        s.max_steps = 3  # type: ignore[misc]
