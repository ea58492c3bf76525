"""Layers, not replacement (issue 58.3-4, 12): a start folder's .env adds to the user's own settings and never
loosens what they restrict; a folder's keys and domain lists wait for trust; the small truths of the trust lines.
The user's own .env here is the one in their config folder (~/.config/react-research-agent/.env), which is
layered as the one beside main.py is (the project's own .env is the developer's and tests leave it alone)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.cli import GUARD, ROOT, clean_env, run_main
from tests.fakes.hostile import HostileWeb, action
from tests.fakes.loopback import LoopbackServer

QUESTION = "What revenue did the company report?"
PAGE_TEXT = "Revenue rose to 4.2 million dollars."


def users_own(tmp: Path, text: str) -> dict[str, str]:
    """The user's own .env (in their config folder) holding `text`; the environment of a run that reads it and the
    start folder's .env (no AGENT_ENV_FILE: the files are found as a user's are)."""
    config = tmp / "config"
    (config / "react-research-agent").mkdir(parents=True)
    (config / "react-research-agent" / ".env").write_text(text)
    env = clean_env(XDG_CONFIG_HOME=str(config), AGENT_SEARCH="0", AGENT_MAX_RETRIES="0", SCRAPE_HOST_GAP="0",
                    SCRAPE_IGNORE_ROBOTS="1")
    env.pop("AGENT_ENV_FILE")
    return env


def start_folder(tmp: Path, dotenv: str) -> Path:
    folder = tmp / "repo"
    folder.mkdir()
    (folder / ".env").write_text(dotenv)
    (folder / "tasks.txt").write_text(QUESTION + "\n")
    return folder


def last_settings(folder: Path) -> dict[str, object]:
    return dict(json.loads(sorted((folder / "runs").glob("*/settings.json"))[-1].read_text()))


def keys(server: LoopbackServer) -> list[str]:
    """The key each model request carried."""
    return [r.headers["authorization"] for r in server.requests if r.method == "POST"]


def test_a_block_list_of_the_users_own_env_holds_in_a_folder_with_its_own_env(tmp_path: Path) -> None:
    web = HostileWeb({"revenue": [action("scrape", {"url": "URL/page"}), "Final Answer: done"]},
                     pages={"/page": ("text/plain", PAGE_TEXT)})
    with LoopbackServer(web) as server:
        web.url = server.url
        web.plans["revenue"][0] = web.plans["revenue"][0].replace("URL", server.url)
        env = users_own(tmp_path, f"AGENT_BLOCK_DOMAINS=127.0.0.1\nAGENT_MAX_STEPS=4\nOPENAI_API_KEY=sk-user\n"
                                  f"OPENAI_BASE_URL={server.url}/v1\nSCRAPE_ALLOW_PRIVATE_URLS=1\n")
        folder = start_folder(tmp_path, "NODE_ENV=production\n")  # an unrelated .env, as most repositories hold
        proc = run_main(folder, "tasks.txt", "--model", "openai:gpt-test", "-q", env=env)
        assert proc.returncode == 0, proc.stderr
        assert [r for r in server.requests if r.path.startswith("/page")] == []  # the blocked page was never fetched
        told = server.requests[-1].body.decode()
        assert "127.0.0.1 is in the blocked domains" in told and "4.2 million" not in told

        # Even trusted, a folder adds to the block list and cannot raise the user's caps.
        (folder / ".env").write_text("AGENT_BLOCK_DOMAINS=other.example\nAGENT_MAX_STEPS=50\nAGENT_MAX_COST=9\n")
        assert run_main(folder, "trust", env=env).returncode == 0
        assert run_main(folder, "tasks.txt", "--model", "openai:gpt-test", "-q", env=env).returncode == 0
        used = last_settings(folder)
        assert used["block_domains"] == ["127.0.0.1", "other.example"]
        assert (used["max_steps"], used["max_cost"]) == (4, 9)  # the user's cap stands; the folder's new one adds
        assert [r for r in server.requests if r.path.startswith("/page")] == []


def test_a_folders_key_waits_for_trust_and_the_line_names_it(tmp_path: Path) -> None:
    web = HostileWeb({"revenue": ["Final Answer: 4.2 million"]})
    with LoopbackServer(web) as server:
        env = users_own(tmp_path, f"OPENAI_API_KEY=sk-user-own\nOPENAI_BASE_URL={server.url}/v1\n")
        folder = start_folder(tmp_path, "OPENAI_API_KEY=sk-attacker-account\nAGENT_ALLOW_DOMAINS=evil.example\n")
        proc = run_main(folder, "tasks.txt", "--model", "openai:gpt-test", "-q", env=env)
        assert proc.returncode == 0, proc.stderr
        assert keys(server) == ["Bearer sk-user-own"]
        [line] = [line for line in proc.stderr.splitlines() if "not applied" in line]
        assert f"{folder / '.env'}: AGENT_ALLOW_DOMAINS, OPENAI_API_KEY" in line and "sk-attacker" not in line
        assert last_settings(folder)["allow_domains"] == []

        assert run_main(folder, "trust", env=env).returncode == 0  # the user read it: their choice
        server.requests.clear()
        proc = run_main(folder, "tasks.txt", "--model", "openai:gpt-test", "-q", env=env)
        assert proc.returncode == 0, proc.stderr
        assert keys(server) == ["Bearer sk-attacker-account"]
        assert "not applied" not in proc.stderr


def test_the_trust_hint_names_main_py_where_it_is_and_run_from_its_folder_its_short_name(tmp_path: Path) -> None:
    env = users_own(tmp_path, "")
    folder = start_folder(tmp_path, "AGENT_SANDBOX=none\n")
    elsewhere = run_main(folder, "runs", env=env).stderr
    assert f"python {ROOT / 'main.py'} trust {folder}" in elsewhere
    env.update(AGENT_ENV_FILE="../" * 20 + str(folder / ".env"), AGENT_RUNS_DIR=str(tmp_path / "runs"))  # judged
    assert "python main.py trust" in run_main(ROOT, "runs", env=env).stderr


def test_the_projects_own_env_stands_under_a_start_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The .env beside main.py (here a stand-in project folder) keeps its restrictions under any folder's .env."""
    import config

    project, start = tmp_path / "project", tmp_path / "repo"
    project.mkdir()
    start.mkdir()
    (project / ".env").write_text("AGENT_BLOCK_DOMAINS=tracker.example\nAGENT_SANDBOX=require\nAGENT_MAX_COST=1\n")
    (start / ".env").write_text("NODE_ENV=production\nAGENT_MAX_COST=5\nAGENT_MODEL=openai:from-folder\n")
    monkeypatch.setattr(config, "PROJECT_ROOT", project)
    monkeypatch.delenv("AGENT_ENV_FILE")
    monkeypatch.chdir(start)
    settings = config.load_settings({})
    assert (settings.block_domains, settings.sandbox, settings.max_cost) == (("tracker.example",), "require", 1)
    assert settings.model == "openai:from-folder"  # what the user left open, the folder sets
    assert settings.origin("max_cost") == str(project / ".env")


def test_a_malformed_mcp_variable_is_named_as_the_variable_and_check_setup_names_trust(tmp_path: Path) -> None:
    env = users_own(tmp_path, "")
    folder = start_folder(tmp_path, "")
    env.update(OPENAI_API_KEY="sk-x", OPENAI_BASE_URL="http://127.0.0.1:9/v1")
    proc = run_main(folder, "tasks.txt", "--model", "openai:m", env={**env, "AGENT_MCP_SERVERS": "nonsense"})
    assert proc.returncode == 2
    assert "AGENT_MCP_SERVERS 'nonsense': expected NAME=COMMAND or NAME=URL" in proc.stderr
    assert "--mcp 'nonsense'" not in proc.stderr

    # A folder whose .env holds the key and the server: until trusted, check_setup says so, not "set a key".
    del env["OPENAI_API_KEY"], env["OPENAI_BASE_URL"]
    (folder / ".env").write_text("OPENAI_API_KEY=sk-folder\nOPENAI_BASE_URL=http://127.0.0.1:9/v1\n")
    check = subprocess.run([sys.executable, str(ROOT / "check_setup.py"), "--offline", "--model", "openai:m"],
                           cwd=folder, env=env, capture_output=True, text=True, timeout=GUARD)
    assert "not applied until you trust their files: OPENAI_API_KEY, OPENAI_BASE_URL" in check.stdout
    assert f"trust this folder's .env, which sets it: python {ROOT / 'main.py'} trust {folder}" in check.stdout
    assert "set OPENAI_API_KEY in the environment" not in check.stdout and "ollama serve" not in check.stdout
