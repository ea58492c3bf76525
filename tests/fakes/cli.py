"""main.py as a user runs it: a subprocess in its own folder, with no key or setting from the developer's shell."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.fakes.loopback import LoopbackServer, Request, Response

ROOT = Path(__file__).resolve().parent.parent.parent
GUARD = 120.0  # a hung command fails its test instead of hanging the suite; no assertion depends on speed


def clean_env(server: LoopbackServer | None = None, **extra: str) -> dict[str, str]:
    """The environment without keys, base URLs or AGENT_* settings; OPENAI_* pointing at `server` when given."""
    env = {k: v for k, v in os.environ.items()
           if not k.endswith(("_API_KEY", "_BASE_URL", "_MAILTO"))
           and not k.startswith(("AGENT_", "SEARCH_", "SCRAPE_"))}
    env["AGENT_ENV_FILE"] = "/nonexistent.env"
    if server is not None:
        env.update(OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=server.url + "/v1")
    return {**env, **extra}


def run_main(cwd: Path, *args: str, env: dict[str, str] | None = None,
             stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """`python main.py ARGS` in `cwd`; its exit code, stdout and stderr."""
    return subprocess.run([sys.executable, str(ROOT / "main.py"), *args], cwd=cwd, env=env or clean_env(),
                          input=stdin, capture_output=True, text=True, timeout=GUARD)


def refuse_all(req: Request) -> Response:
    """A model server that must receive nothing: whatever comes gets a 500 (and stays in `server.requests`)."""
    return Response(500, "this test expects no request")


def trust(folder: Path) -> str:
    """`main.py trust` in `folder`, as a user runs it before its .env or models.toml may route keys or run commands
    (the store is in the test's own XDG_CONFIG_HOME, tests/conftest.py); what it printed."""
    proc = run_main(folder, "trust")
    assert proc.returncode == 0, proc.stderr
    return proc.stdout
