"""The python tool's session per task: state kept between calls, never shared between tasks, reset (and said so)
after a timeout, a crash or a limit, and gone with its task whatever ended it (the answer, Ctrl-C, the task's
time limit, a SIGKILLed agent)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agent import ReActAgent
from config import Settings
from tests.fakes.scripted import ScriptedLLM
from tools import processes
from tools.python_exec import PythonTool
from tools.sandbox import MAX_PROCESSES, bwrap, landlock, pids, seccomp_problem

ROOT = Path(__file__).resolve().parent.parent
ABI = landlock.abi_version()
needs_landlock = pytest.mark.skipif(ABI < 4, reason=f"needs Landlock ABI >= 4 (this kernel has {ABI})")
needs_bwrap = pytest.mark.skipif(bwrap.probe() != "", reason=bwrap.probe() or "bwrap works")
needs_seccomp = pytest.mark.skipif(seccomp_problem() != "", reason=seccomp_problem() or "seccomp works")
BACKENDS = ["none", pytest.param("landlock", marks=[needs_landlock, needs_seccomp]),
            pytest.param("bwrap", marks=[needs_bwrap, needs_seccomp])]
PID = "import os; print('PID', os.getpid())"

# As root, only a pids cgroup bounds a fork bomb (RLIMIT_NPROC does not bind root and the supervisor's count
# can be outrun): without one, the bomb could take the machine's last process slots.
UNBOUNDED_AS_ROOT = pytest.mark.skipif(os.geteuid() == 0 and pids.base() is None,
                                       reason="root without a pids cgroup to hold a fork bomb (tools/sandbox/pids.py)")


def make(tmp_path: Path, name: str = "task-1", **settings: Any) -> PythonTool:
    return PythonTool(tmp_path / name, Settings(**settings))


def pid_in(out: str) -> int:
    return int(re.search(r"PID (\d+)", out).group(1))  # type: ignore[union-attr]


def gone(pid: int, within: float = 5.0) -> bool:
    """Whether pid has ended (a zombie counts as ended), allowing the kernel a moment."""
    end = time.monotonic() + within
    while time.monotonic() < end:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.02)
    return False


@pytest.mark.parametrize("backend", BACKENDS)
def test_variables_functions_and_imports_persist_between_calls(tmp_path: Path, backend: str) -> None:
    tool = make(tmp_path, sandbox=backend)
    try:
        first = tool.run(code="import statistics as st\ndef double(x):\n    return 2 * x\nrows = [3, 4, 5]\n" + PID)
        out = tool.run(code="rows.append(double(st.mean(rows)))\nprint(rows)\n" + PID)
        assert "[3, 4, 5, 8]" in out and "Note:" not in out
        assert pid_in(first) == pid_in(out)  # one interpreter for the task
    finally:
        tool.close()


def test_one_task_never_sees_another_tasks_variables_or_process(tmp_path: Path) -> None:
    first, second = make(tmp_path, "task-1"), make(tmp_path, "task-2")
    try:
        mine = first.run(code="secret_of_task_1 = 'BAIT-VAR-41c2'\n" + PID)
        other = pid_in(mine)
        out = second.run(code=(
            "import gc, sys\n"
            "print('names', [n for n in globals() if 'secret' in n])\n"
            "print('found', any('BAIT-VAR' in repr(o) for o in gc.get_objects() if isinstance(o, str)))\n"
            f"for path in ('/proc/{other}/environ', '/proc/{other}/mem', '../task-1/.python/step-001.py'):\n"
            "    try:\n        print('GOT', open(path, 'rb').read(200))\n"
            "    except OSError as exc:\n        print('BLOCKED', type(exc).__name__)\n" + PID))
        assert "BAIT-VAR" not in out and "GOT" not in out, out
        assert "names []" in out and "found False" in out and out.count("BLOCKED") == 3
        assert pid_in(out) != other
        assert "BAIT-VAR-41c2" in first.run(code="print(secret_of_task_1)")  # the first task's state is intact
    finally:
        first.close()
        second.close()


@pytest.mark.parametrize("ending, code, said", [
    ("timeout", "import time\ntime.sleep(30)", "Timed out after 1 s"),
    ("crash", "import ctypes\nctypes.string_at(0)", "Killed by SIGSEGV"),
    ("exit", "import os\nos._exit(4)", "Exit status 4"),
    ("memory", "x = bytearray(900 * 2**20)", "Ran out of memory (limit 256 MB"),
])
def test_a_timeout_crash_or_limit_ends_the_session_and_the_next_call_says_variables_are_gone(
        tmp_path: Path, ending: str, code: str, said: str) -> None:
    tool = make(tmp_path, python_timeout=1.0 if ending == "timeout" else 20.0, python_memory_mb=256)
    try:
        before = pid_in(tool.run(code="kept = 'here'\n" + PID))
        out = tool.run(code=code)
        assert said in out
        assert "The Python session ended with this call" in out
        assert gone(before)
        after = tool.run(code="print(kept)")
        assert "NameError: name 'kept' is not defined" in after
        assert after.startswith("Note: this call ran in a new Python session: the previous one ended")
        assert "variables, functions and imports from earlier calls are gone" in after
        assert "Note:" not in tool.run(code="print('again')")  # said once
    finally:
        tool.close()


def test_an_exception_or_sys_exit_keeps_the_session(tmp_path: Path) -> None:
    tool = make(tmp_path)
    try:
        tool.run(code="kept = 7")
        assert "ZeroDivisionError" in tool.run(code="1 / 0")
        assert "Exit status 3" in tool.run(code="import sys\nsys.exit(3)")
        out = tool.run(code="print(kept)")
        assert "stdout:\n7" in out and "session" not in out
    finally:
        tool.close()


def test_background_threads_wait_between_calls(tmp_path: Path) -> None:
    tool = make(tmp_path)
    try:
        tool.run(code="import threading, time\nticks = []\n"
                      "def tick():\n    while True:\n        ticks.append(1)\n        time.sleep(0.01)\n"
                      "threading.Thread(target=tick, daemon=True).start()\ntime.sleep(0.1)\nprint(len(ticks))")
        first = int(tool.run(code="print(len(ticks))").split("stdout:\n")[1])
        time.sleep(0.5)
        second = int(tool.run(code="print(len(ticks))").split("stdout:\n")[1])
        assert second - first < 10  # stopped between calls: the half second of sleep added (almost) nothing
    finally:
        tool.close()


@UNBOUNDED_AS_ROOT
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_fork_bomb_is_stopped_at_the_process_limit_and_nothing_is_left(tmp_path: Path, backend: str) -> None:
    tool = make(tmp_path, sandbox=backend, python_timeout=20.0)
    try:
        before = pid_in(tool.run(code=PID))
        out = tool.run(code="import os, time\nwhile True:\n    try:\n        os.fork()\n"
                            "    except OSError:\n        time.sleep(0.01)\n")
        assert f"Stopped: the code started more than {MAX_PROCESSES} processes at once" in out, out
        assert "Timed out" not in out
        assert backend == "bwrap" or gone(before)  # (under bwrap the pid is the namespace's own)
        assert "fine" in tool.run(code="print('fine')")
    finally:
        tool.close()


def test_close_ends_an_idle_session_and_everything_it_left(tmp_path: Path) -> None:
    tool = make(tmp_path)
    pid = pid_in(tool.run(code=PID))
    tool.close()
    assert gone(pid)
    assert "NameError" not in tool.run(code="print('a new session')")  # no note either: the task had ended
    tool.close()


def test_ctrl_c_kills_idle_sessions_too(tmp_path: Path) -> None:
    tool = make(tmp_path)
    try:
        pid = pid_in(tool.run(code=PID))
        assert processes.running(), "the idle session is registered"
        processes.kill_all()  # what the first Ctrl-C does
        assert gone(pid)
        assert "Note: this call ran in a new Python session" in tool.run(code="print(1)")
    finally:
        tool.close()


def _python(code: str) -> str:
    return f"Thought: compute\nAction: python\nAction Input: {json.dumps({'code': code})}"


def test_the_session_ends_with_its_task_answered_or_out_of_time(tmp_path: Path) -> None:
    pids = tmp_path / "pids.txt"
    record = f"import os; open({str(pids)!r}, 'a').write(str(os.getpid()) + chr(10))"
    # The first task answers; the second is still inside a long call when its time limit passes.
    for limit, code in ((None, record), (3.0, record + "; import time; time.sleep(60)")):
        tool = PythonTool(tmp_path / "ws", Settings(sandbox="none", python_timeout=60.0))
        ReActAgent(ScriptedLLM([_python(code), "Final Answer: done"]), [tool], time_limit=limit).run("task")
    found = [int(p) for p in pids.read_text().split()]
    assert len(found) == 2
    assert all(gone(pid) for pid in found), "a session outlived its task"


def test_sigkill_of_the_agent_ends_an_idle_session(tmp_path: Path) -> None:
    code = (f"import sys, time; sys.path.insert(0, {str(ROOT)!r})\n"
            "from pathlib import Path\nfrom config import Settings\nfrom tools.python_exec import PythonTool\n"
            f"tool = PythonTool(Path({str(tmp_path / 'ws')!r}), Settings())\n"
            "print(tool.run(code='import os; print(\"PID\", os.getpid())'), flush=True)\ntime.sleep(60)\n")
    agent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        line = ""
        while "PID" not in line:
            line = agent.stdout.readline()  # type: ignore[union-attr]
            assert line, "the agent ended early"
        pid = pid_in(line)
        assert not gone(pid, within=0.2)  # idle between calls, waiting
        agent.send_signal(signal.SIGKILL)
        agent.wait()
        assert gone(pid), "the session outlived its agent"
    finally:
        agent.kill()
        agent.wait()
