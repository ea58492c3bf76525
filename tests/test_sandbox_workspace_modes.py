"""Model code cannot leave its kept workspace open to other users, nor hide files from the workspace budget
(issue 52.11), through main.py with a scripted model, as root and as a normal user (`nobody`, under setpriv).

The python step makes a folder world-writable with the sticky bit (1777, as /tmp is) and a folder 0300 (its owner
may write and enter it but not list it) holding 3 MB, over a 2 MB budget. As root, the budget could always list
it; as a normal user it counted nothing in it before.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.hostile import action
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.processes import cannot_run_as_nobody
from tests.fakes.providers import openai_reply
from tests.test_sandbox_powers import IS_ROOT, as_user, place  # noqa: F401 (place: the fixture)

ROOT = Path(__file__).resolve().parent.parent
CODE = """import os
os.mkdir('open'); os.chmod('open', 0o1777)
os.mkdir('hide')
with open('hide/blob', 'wb') as f:
    f.write(os.urandom(3 * 2**20))
os.chmod('hide', 0o300)
print('modes', oct(os.stat('open').st_mode), oct(os.stat('hide').st_mode))
"""
USERS = ["self", pytest.param("nobody", marks=pytest.mark.skipif(not IS_ROOT, reason="running the agent as nobody "
                                                                 "(setpriv) needs a root test run"))]


def _model(bodies: list[str]) -> Any:
    def reply(req: Request) -> Response:
        bodies.append(req.body.decode("utf-8", "replace"))
        if sum(1 for m in req.json()["messages"] if m["role"] == "assistant") == 0:
            return openai_reply(action("python", {"code": CODE}, "make the folders"))
        return openai_reply("Thought: done.\nFinal Answer: folders made")
    return reply


@pytest.mark.parametrize("user", USERS)
def test_kept_workspace_has_nothing_world_writable_and_hidden_bytes_count(place: Path, user: str) -> None:  # noqa: F811
    run = place / "run"
    run.mkdir()
    if user != "self":
        (place / "probe").mkdir()
        if why := cannot_run_as_nobody(as_user(user, [], place / "probe"), place):
            pytest.skip(why)
        os.chown(run, 65534, 65534)
    (run / "tasks.txt").write_text("Make two folders\n")
    bodies: list[str] = []
    with LoopbackServer(_model(bodies)) as server:
        env = {"PATH": os.environ["PATH"], "HOME": str(place), "LANG": "C.UTF-8", "OPENAI_API_KEY": "sk-test",
               "OPENAI_BASE_URL": server.url + "/v1", "AGENT_SEARCH": "0", "AGENT_ENV_FILE": str(run / "no.env"),
               "AGENT_WORKSPACE_BUDGET_MB": "2"}
        argv = [sys.executable, str(ROOT / "main.py"), "tasks.txt", "--model", "openai:gpt-4.1-mini", "-q"]
        (place / "stage").mkdir()
        done = subprocess.run(as_user(user, argv, place / "stage"), cwd=run, env=env, capture_output=True, text=True,
                              timeout=240)
    assert done.returncode == 0, done.stderr
    observation = str(json.loads(bodies[-1])["messages"][-1]["content"])
    assert "modes 0o41777 0o40300" in observation, observation  # the code did make them
    # The 3 MB the code hid from its owner's listing counted: the model was told the workspace is over its budget.
    assert "workspace holds more than its budget of 2.0 MiB" in observation, observation
    (record,) = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines() if line.strip()]
    assert "open: world-write cleared (mode 1777 -> 775)" in record["defused"], record["defused"]
    (workspace,) = list(run.glob("runs/*/workspace/*"))
    open_to_others = [str(p) for p in [workspace, *workspace.rglob("*")]
                      if not p.is_symlink() and p.lstat().st_mode & stat.S_IWOTH]
    assert open_to_others == []
    assert (workspace / "hide" / "blob").stat().st_size == 3 * 2**20  # nothing of the user's work was removed
