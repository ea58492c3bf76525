"""`serve-mcp --http` serves only who sends its token, and lets a client research only the folders it was started
with (issue 52.3): a plain HTTP client (httpx) against main.py as a subprocess, and another local user."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp SDK is not installed (requirements.txt)")

from tests.fakes.loopback import LoopbackServer, Request, Response  # noqa: E402
from tests.fakes.processes import cannot_run_as_nobody  # noqa: E402
from tests.fakes.serve_mcp import INITIALIZE, ROOT, call_tool, model_env, post, serving  # noqa: E402
from tests.test_sandbox_powers import IS_ROOT, as_user, place  # noqa: E402, F401 (place: the fixture)


def _no_model(calls: list[str]) -> object:
    def reply(req: Request) -> Response:
        calls.append(req.path)
        return Response(500, {"error": {"message": "no model call was expected"}})
    return reply


def test_http_wants_the_printed_token_and_researches_only_the_docs_folders_allowed(tmp_path: Path) -> None:
    allowed, private = tmp_path / "allowed", tmp_path / "private"
    allowed.mkdir()
    private.mkdir(mode=0o700)
    (private / "passwords.csv").write_text("bank,hunter2\n")
    (allowed / "link-out").symlink_to(private)  # inside by name, outside once resolved
    calls: list[str] = []
    with LoopbackServer(_no_model(calls)) as model, serving(tmp_path, model_env(tmp_path, model.url),
                                                            "--docs", str(allowed)) as served:
        bare = post(served.url, INITIALIZE)
        wrong = post(served.url, INITIALIZE, Authorization="Bearer " + served.token[:-1] + "x")
        rebound = post(served.url, INITIALIZE, Authorization=f"Bearer {served.token}",
                       Host=f"evil.example:{served.port}")
        outside, linked = (call_tool(served.url, served.token, "deep_research", {"question": "q", "docs": [str(d)]})
                           for d in (private, allowed / "link-out"))
    assert bare.status_code == 401 and bare.headers["www-authenticate"].startswith("Bearer")
    assert "Authorization: Bearer TOKEN" in bare.text
    assert wrong.status_code == 401
    assert rebound.status_code == 421  # a page rebinding its name to 127.0.0.1 is refused even with the token
    said = "".join(served.stderr)
    assert said.count(served.token) == 1 and f"http://127.0.0.1:{served.port}/mcp" in said  # printed once, at start
    for result, named in ((outside, private), (linked, allowed / "link-out")):
        assert result["isError"] is True
        (text,) = [c["text"] for c in result["content"]]
        assert f"docs: {named} is outside the folders this server may research ({allowed.resolve()};" in text, text
        assert "\n" not in text and "hunter2" not in text
    assert calls == []  # refused before any research: no model call, nothing read


def test_the_token_can_be_set_and_a_short_one_is_refused(tmp_path: Path) -> None:
    token = "a-token-of-the-users-own-0123456789"
    with LoopbackServer(_no_model([])) as model:
        env = model_env(tmp_path, model.url, AGENT_MCP_TOKEN=token)
        with serving(tmp_path, env) as served:
            allowed = post(served.url, INITIALIZE, Authorization=f"Bearer {token}")
            bare = post(served.url, INITIALIZE)
        short = subprocess.run([sys.executable, str(ROOT / "main.py"), "serve-mcp", "--http", "1"], cwd=tmp_path,
                               env={**env, "AGENT_MCP_TOKEN": "short"}, capture_output=True, text=True, timeout=120)
    assert allowed.status_code == 200 and bare.status_code == 401
    assert token not in "".join(served.stderr)  # the user's own token is not printed
    assert short.returncode == 2 and short.stderr.startswith("error: AGENT_MCP_TOKEN must be at least 16 characters")
    assert len(short.stderr.strip().splitlines()) == 1


@pytest.mark.skipif(not IS_ROOT, reason="another local user (nobody, through setpriv) needs a root test run")
def test_another_local_user_without_the_token_gets_401(place: Path, tmp_path: Path) -> None:  # noqa: F811
    (place / "probe").mkdir()
    if why := cannot_run_as_nobody(as_user("nobody", [], place / "probe"), place):
        pytest.skip(why)
    code = ("import httpx, json, sys; print(httpx.post(sys.argv[1], json=json.loads(sys.argv[3]), headers={"
            "'Accept': 'application/json, text/event-stream', **({'Authorization': 'Bearer ' + sys.argv[2]} "
            "if sys.argv[2] else {})}).status_code)")
    with LoopbackServer(_no_model([])) as model, serving(tmp_path, model_env(tmp_path, model.url)) as served:
        statuses = []
        for i, token in enumerate(("", served.token)):  # without, then with the token it was given
            (place / f"stage{i}").mkdir()
            argv = [sys.executable, "-c", code, served.url, token, json.dumps(INITIALIZE)]
            done = subprocess.run(as_user("nobody", argv, place / f"stage{i}"), cwd=place, capture_output=True,
                                  text=True, timeout=120, env={"PATH": os.environ["PATH"], "PYTHONPATH": str(ROOT)})
            assert done.returncode == 0, done.stderr
            statuses.append(done.stdout.strip())
    assert statuses == ["401", "200"]  # the port is open to nobody: the token is what refused the first request
