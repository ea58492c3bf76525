"""The python tool: output, failures, timeouts that kill every child, limits, output caps, env scrubbing."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

import tools.python_exec as python_exec
from config import Settings
from core.errors import ToolError
from core.text import truncate_middle
from tools.base import ToolRegistry
from tools.files import ListFilesTool, WriteFileTool
from tools.python_exec import PythonTool


def make_tool(tmp_path: Path, **settings: Any) -> PythonTool:
    return PythonTool(tmp_path / "ws", Settings(**settings))


def is_alive(pid: int) -> bool:
    """True while pid is a running process (a zombie waiting to be reaped counts as dead)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def wait_dead(pid: int, within: float = 5.0) -> bool:
    """Whether pid is gone, allowing the kernel a moment to deliver SIGKILL."""
    end = time.monotonic() + within
    while is_alive(pid):
        if time.monotonic() > end:
            return False
        time.sleep(0.01)
    return True


def read_pid(path: Path) -> int:
    return int(path.read_text().strip())


def kill_quietly(pid: int) -> None:
    """Test cleanup: never leave a stray process behind, even when an assertion failed."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def test_prints_output_and_reports_success(tmp_path: Path) -> None:
    out = make_tool(tmp_path).run(code="print(6 * 7)\nprint('done')")
    assert out.startswith("Exit status 0")
    assert "stdout:\n42\ndone" in out


def test_runs_in_the_workspace_which_is_created_on_first_use(tmp_path: Path) -> None:
    tool = make_tool(tmp_path)
    assert not (tmp_path / "ws").exists()
    out = tool.run(code="import os; print(os.getcwd())")
    assert os.path.realpath(tmp_path / "ws") in out


def test_failing_script_shows_exit_status_and_traceback_with_line_number(tmp_path: Path) -> None:
    out = make_tool(tmp_path).run(code="a = 1\nb = 0\nprint(a / b)\n")
    assert "Exit status 1" in out
    assert "line 3" in out
    assert "ZeroDivisionError: division by zero" in out
    assert ".python/step-001.py" in out


def test_exit_code_of_sys_exit_is_reported(tmp_path: Path) -> None:
    out = make_tool(tmp_path).run(code="import sys\nprint('partial')\nsys.exit(3)")
    assert "Exit status 3" in out
    assert "partial" in out


def test_killed_by_signal_names_the_signal(tmp_path: Path) -> None:
    out = make_tool(tmp_path).run(code="import os, signal\nos.kill(os.getpid(), signal.SIGTERM)")
    assert "Killed by SIGTERM" in out


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    code = (
        "import subprocess, time\n"
        "child = subprocess.Popen(['sleep', '120'])\n"  # outlives the script; holds the stdout pipe
        "open('child.pid', 'w').write(str(child.pid))\n"
        "print('started', flush=True)\n"
        "time.sleep(30)\n"
    )
    out = make_tool(tmp_path, python_timeout=1.0).run(code=code)
    assert "Timed out after 1 s" in out
    assert "process group was killed" in out
    assert "started" in out  # output printed before the hang is kept
    pid = read_pid(tmp_path / "ws" / "child.pid")
    try:
        assert wait_dead(pid)
    finally:
        kill_quietly(pid)


def test_background_process_is_stopped_when_the_code_finishes(tmp_path: Path) -> None:
    code = (
        "import subprocess\n"
        "child = subprocess.Popen(['sleep', '30'])\n"
        "open('child.pid', 'w').write(str(child.pid))\n"
        "print('left it running')\n"
    )
    # Waiting for the pipe to close would only end at the 20 s timeout and report a time-out.
    out = make_tool(tmp_path, python_timeout=20.0).run(code=code)
    assert out.startswith("Exit status 0")
    assert "left it running" in out
    pid = read_pid(tmp_path / "ws" / "child.pid")
    try:
        assert wait_dead(pid)
    finally:
        kill_quietly(pid)


@pytest.mark.parametrize("sandbox", ["none", "auto"])
def test_a_child_that_left_the_session_is_killed_when_the_code_finishes(tmp_path: Path, sandbox: str) -> None:
    code = (
        "import subprocess\n"
        "child = subprocess.Popen(['sleep', '30'], start_new_session=True)\n"
        "open('child.pid', 'w').write(str(child.pid))\n"
        "print('escaped')\n"
    )
    tool = make_tool(tmp_path, python_timeout=20.0, sandbox=sandbox)
    tool.drain_grace = 0.2
    out = tool.run(code=code)
    pid = read_pid(tmp_path / "ws" / "child.pid")
    try:
        assert out.startswith("Exit status 0")  # not a time-out: it did not wait for the child's pipe
        assert "escaped" in out
        assert wait_dead(pid)  # the launcher (a subreaper) swept it
    finally:
        kill_quietly(pid)


@pytest.mark.parametrize("code", [
    "x = bytearray(600 * 2**20)",
    "chunks = []\nwhile True:\n    chunks.append(bytearray(16 * 2**20))",
])
def test_memory_hog_reports_out_of_memory_with_the_limit(tmp_path: Path, code: str) -> None:
    out = make_tool(tmp_path, python_memory_mb=256).run(code=code)
    assert "Ran out of memory (limit 256 MB" in out
    assert "MemoryError" in out


def test_numpy_imports_and_works_under_the_default_memory_limit(tmp_path: Path) -> None:
    pytest.importorskip("numpy")
    code = "import numpy as np\na = np.ones((200, 200))\nprint((a @ a).sum())"
    out = make_tool(tmp_path).run(code=code)
    assert out.startswith("Exit status 0"), out
    assert "8000000.0" in out


def test_cpu_time_limit_is_enforced(tmp_path: Path) -> None:
    tool = make_tool(tmp_path, python_timeout=30.0)
    tool.cpu_seconds = 1
    out = tool.run(code="while True:\n    pass")
    assert "Killed by SIGXCPU" in out
    assert "CPU time limit of 1 s" in out


def test_file_size_limit_is_enforced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(python_exec, "FSIZE_LIMIT_MB", 1)
    out = make_tool(tmp_path).run(code="open('big.bin', 'wb').write(b'x' * 3 * 2**20)")
    assert "File too large" in out
    assert (tmp_path / "ws" / "big.bin").stat().st_size <= 2**20


def test_huge_output_keeps_head_and_tail_with_a_marker(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "for i in range(50_000):\n"
        "    print(f'line {i:06d} ' + 'x' * 90)\n"  # about 5 MB
        "sys.stderr.write('e' * 1_000_000 + '\\nlast error line\\n')\n"
    )
    tool = make_tool(tmp_path)
    out = tool.run(code=code)
    assert out.startswith("Exit status 0")
    assert "line 000000" in out and "line 049999" in out
    assert "line 025000" not in out
    assert "cut; plus" in out and "not kept" in out
    assert "last error line" in out
    assert len(out) < tool.stdout_chars + tool.stderr_chars + 500


def test_multibyte_output_over_the_cap_is_marked_and_decodes_cleanly(tmp_path: Path) -> None:
    tool = make_tool(tmp_path)
    out = tool.run(code="print('é' * 200_001 + 'ENDS')")  # 400 KB of two-byte characters, odd total
    assert "not kept" in out
    assert out.rstrip().endswith("éENDS")
    assert "\ufffd" not in out  # the buffers' split characters stay inside the cut
    assert len(out) < tool.stdout_chars + 500


def test_moderate_output_is_cut_by_truncate_middle_exactly(tmp_path: Path) -> None:
    tool = make_tool(tmp_path)
    text = "".join(f"{i:05d}\n" for i in range(2_500))  # 15,000 characters: over the cap, all kept
    out = tool.run(code="import sys\nsys.stdout.write(" + repr(text) + ")")
    assert truncate_middle(text, tool.stdout_chars) in out


def test_environment_is_scrubbed_and_home_is_in_the_workspace(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-123")
    monkeypatch.setenv("SOME_DB_PASSWORD", "hunter2")
    code = ("import json, os, tempfile\n"
            "print(json.dumps({'env': dict(os.environ), 'tmp': tempfile.gettempdir()}))")
    out = make_tool(tmp_path).run(code=code)
    assert "sk-secret-123" not in out and "hunter2" not in out
    seen = json.loads(out.split("stdout:\n", 1)[1])
    ws = os.path.realpath(tmp_path / "ws")
    assert seen["env"]["HOME"].startswith(ws + os.sep)
    assert seen["tmp"].startswith(ws + os.sep)
    assert "OPENAI_API_KEY" not in seen["env"]


def test_inherited_environment_passes_only_the_allowlist(tmp_path: Path) -> None:
    inherited = {"TZ": "Europe/Paris", "LC_ALL": "C.UTF-8", "PATH": "/usr/bin:/bin",
                 "ANTHROPIC_API_KEY": "sk-ant-secret", "HOME": "/root"}
    tool = PythonTool(tmp_path / "ws", Settings(), inherited_env=inherited)
    out = tool.run(code="import json, os\nprint(json.dumps(dict(os.environ)))")
    env = json.loads(out.split("stdout:\n", 1)[1])
    assert env["TZ"] == "Europe/Paris" and env["LC_ALL"] == "C.UTF-8" and env["PATH"] == "/usr/bin:/bin"
    assert "ANTHROPIC_API_KEY" not in env
    assert env["HOME"] != "/root"


def test_file_written_by_write_file_is_read_by_python(tmp_path: Path) -> None:
    WriteFileTool(tmp_path / "ws").run(path="data/nums.txt", content="1\n2\n39\n")
    out = make_tool(tmp_path).run(code="print(sum(int(x) for x in open('data/nums.txt')))")
    assert "stdout:\n42" in out


def test_module_saved_in_the_workspace_can_be_imported(tmp_path: Path) -> None:
    WriteFileTool(tmp_path / "ws").run(path="helpers.py", content="def double(x):\n    return 2 * x\n")
    out = make_tool(tmp_path).run(code="from helpers import double\nprint(double(21))")
    assert "stdout:\n42" in out


def test_files_and_variables_persist_between_calls(tmp_path: Path) -> None:
    tool = make_tool(tmp_path)
    tool.run(code="answer = 41\nopen('state.txt', 'w').write(str(answer))")
    out = tool.run(code="print(int(open('state.txt').read()) + 1)\nprint(answer)")
    assert "stdout:\n42\n41" in out


def test_no_output_says_so_and_hints_to_print(tmp_path: Path) -> None:
    out = make_tool(tmp_path).run(code="x = 1 + 1")
    assert "(no output)" in out
    assert "print()" in out


def test_markdown_code_fences_are_stripped(tmp_path: Path) -> None:
    out = make_tool(tmp_path).run(code="```python\nprint('fenced')\n```")
    assert out.startswith("Exit status 0")
    assert "fenced" in out


def test_empty_code_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="empty"):
        make_tool(tmp_path).run(code="   \n")


def test_scratch_dirs_are_hidden_from_list_files(tmp_path: Path) -> None:
    make_tool(tmp_path).run(code="open('result.csv', 'w').write('a,b\\n')")
    listing = ListFilesTool(tmp_path / "ws").run()
    assert "result.csv" in listing
    assert ".python" not in listing and ".home" not in listing and ".tmp" not in listing


def test_registered_under_its_name_and_a_plain_string_becomes_the_code(tmp_path: Path) -> None:
    registry = ToolRegistry([make_tool(tmp_path)])
    found, args = registry.prepare("python", "print('raw')")
    assert registry.names() == ["python"]
    assert "raw" in str(found.run(**args))
    assert "persist between calls" in found.description and "workspace" in found.description
    assert "save intermediate results to files" not in found.description
