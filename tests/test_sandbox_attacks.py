"""The python tool's sandbox, attacked as a prompt-injected model would: each test plants its own bait."""

from __future__ import annotations

import json
import os
import pwd
import socket
import threading
import time
import uuid
from pathlib import Path

import pytest

from config import Settings
from tests.fakes.processes import alive_with, gone
from tools import processes
from tools.python_exec import PythonTool
from tools.sandbox import bwrap, landlock, paths, seccomp_problem

ABI = landlock.abi_version()
needs_landlock = pytest.mark.skipif(ABI < 4, reason=f"needs Landlock ABI >= 4 (this kernel has {ABI})")
needs_bwrap = pytest.mark.skipif(bwrap.probe() != "", reason=bwrap.probe() or "bwrap works")
needs_seccomp = pytest.mark.skipif(seccomp_problem() != "", reason=seccomp_problem() or "seccomp works")
BACKENDS = [pytest.param("landlock", marks=[needs_landlock, needs_seccomp]),
            pytest.param("bwrap", marks=[needs_bwrap, needs_seccomp])]


@pytest.fixture
def layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A run directory with a .env, another .env above it, a HOME with an SSH key; cwd is the run dir."""
    above = tmp_path / "projects"
    run = above / "run"
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    run.mkdir(parents=True)
    (above / ".env").write_text("OPENAI_API_KEY=BAIT-ABOVE-5c1d\n")
    (run / ".env").write_text("ANTHROPIC_API_KEY=BAIT-RUN-9e2f\n")
    (home / ".ssh" / "id_rsa").write_text("-----BEGIN KEY-----\nBAIT-SSH-77aa\n")
    (home / ".bashrc").write_text("# untouched\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(run)
    return {"above": above, "run": run, "home": home, "ws": run / "workspace" / "run-1" / "task-1"}


def make(layout: dict[str, Path], backend: str, **settings: object) -> PythonTool:
    return PythonTool(layout["ws"], Settings(sandbox=backend, **settings))  # type: ignore[arg-type]


def attempt(*lines: str) -> str:
    """Code that tries each expression and prints GOT: <value> or BLOCKED: <error type>."""
    body = ["def t(label, f):", "    try:", "        print('GOT', label, repr(f())[:300])",
            "    except Exception as exc:", "        print('BLOCKED', label, type(exc).__name__)"]
    return "\n".join(["import os, socket, pwd", *body, *lines])


@pytest.mark.parametrize("backend", BACKENDS)
def test_dotenv_files_of_the_run_directory_and_above_cannot_be_read(layout: dict[str, Path], backend: str) -> None:
    code = attempt("t('up2', lambda: open('../../../.env').read())",
                   "t('up3', lambda: open('../../../../.env').read())",
                   f"t('abs', lambda: open({str(layout['run'] / '.env')!r}).read())",
                   f"t('list', lambda: os.listdir({str(layout['above'])!r}))")
    out = make(layout, backend).run(code=code)
    assert "BAIT-" not in out and "'.env'" not in out, out
    assert "BLOCKED up2" in out and "BLOCKED up3" in out and "BLOCKED abs" in out


@pytest.mark.parametrize("backend", BACKENDS)
def test_ssh_key_under_home_and_the_real_home_from_pwd_are_out_of_reach(layout: dict[str, Path],
                                                                         backend: str) -> None:
    code = attempt(f"t('key', lambda: open({str(layout['home'] / '.ssh' / 'id_rsa')!r}).read())",
                   "t('pwhome', lambda: os.listdir(pwd.getpwuid(os.getuid()).pw_dir))")
    out = make(layout, backend).run(code=code)
    assert "BAIT-SSH" not in out
    assert "BLOCKED key" in out
    # The real home (from pwd, not HOME): Landlock refuses it; bwrap shows only the skeleton of bound
    # paths (e.g. the interpreter under ~/.pyenv), none of the user's own files.
    real_home = pwd.getpwuid(os.getuid()).pw_dir
    bound = {Path(p).relative_to(real_home).parts[0] for p in paths.read_only_paths(())
             if p.startswith(real_home.rstrip("/") + "/")}
    hidden = [n for n in os.listdir(real_home) if n not in bound]
    assert "BLOCKED pwhome" in out or not any(repr(n) in out for n in hidden), out


@pytest.mark.parametrize("backend", BACKENDS)
def test_agent_environ_memory_and_cwd_through_proc_are_refused(layout: dict[str, Path], backend: str,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "BAIT-ENV-31ab")  # in this (the agent's) environment only
    agent = os.getpid()
    code = attempt(f"t('environ', lambda: open('/proc/{agent}/environ', 'rb').read())",
                   f"t('cwd', lambda: open('/proc/{agent}/cwd/.env').read())",
                   "t('ppidcwd', lambda: os.listdir(f'/proc/{os.getppid()}/cwd/'))",
                   f"t('mem', lambda: open('/proc/{agent}/mem', 'rb').read(1))",
                   f"t('ptrace', lambda: __import__('ctypes').CDLL(None, use_errno=True).ptrace(16, {agent}, 0, 0)"
                   " or 'attached')")
    out = make(layout, backend).run(code=code)
    assert "BAIT-" not in out, out
    for label in ("environ", "cwd", "ppidcwd", "mem"):
        assert f"BLOCKED {label}" in out
    assert "attached" not in out  # ptrace returns -1 (seccomp EPERM; in bwrap the pid is not even there)


@pytest.mark.parametrize("backend", BACKENDS)
def test_tcp_to_a_loopback_server_and_udp_never_arrive(layout: dict[str, Path], backend: str) -> None:
    with socket.create_server(("127.0.0.1", 0)) as tcp, socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        udp.bind(("127.0.0.1", 0))
        tcp_port, udp_port = tcp.getsockname()[1], udp.getsockname()[1]
        code = attempt(f"t('tcp', lambda: socket.create_connection(('127.0.0.1', {tcp_port}), timeout=2))",
                       "import urllib.request",
                       f"t('http', lambda: urllib.request.urlopen('http://127.0.0.1:{tcp_port}/?k=x', timeout=2))",
                       f"t('udp', lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'BAIT', "
                       f"('127.0.0.1', {udp_port})))",
                       "t('unix', lambda: socket.socketpair() and 'pair ok')")
        out = make(layout, backend).run(code=code)
        tcp.settimeout(0)
        udp.settimeout(0)
        with pytest.raises(BlockingIOError):
            tcp.accept()
        with pytest.raises(BlockingIOError):
            udp.recvfrom(100)
    assert "BLOCKED tcp" in out and "BLOCKED http" in out and "BLOCKED udp" in out
    assert "GOT unix 'pair ok'" in out  # multiprocessing-style socketpairs still work


def test_network_can_be_opened_with_the_setting(layout: dict[str, Path]) -> None:
    if ABI < 4 or seccomp_problem():
        pytest.skip("needs Landlock ABI >= 4 and seccomp")
    with socket.create_server(("127.0.0.1", 0)) as tcp:
        code = attempt(f"t('tcp', lambda: socket.create_connection(('127.0.0.1', {tcp.getsockname()[1]})) "
                       "and 'connected')")
        tool = make(layout, "landlock", python_network=True)
        out = tool.run(code=code)
    assert "GOT tcp 'connected'" in out
    assert "no network access" not in tool.description


def escape_code(token: str, then: str = "") -> str:
    """Start a setsid child and a double-forked, setsid grandchild, each exec'ing sleep with the token."""
    return (
        "import os, subprocess, time\n"
        f"subprocess.Popen(['sleep', '{token}'], start_new_session=True)\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        f"        os.execvp('sleep', ['sleep', '{token}'])\n"
        "    os._exit(0)\n"
        "time.sleep(0.3)\n"
        "print('spawned', flush=True)\n" + then
    )


@pytest.mark.parametrize("backend", ["none", *BACKENDS])
@pytest.mark.parametrize("ending", ["finishes", "times out"])
def test_setsid_and_double_forked_children_are_dead_after_the_call(layout: dict[str, Path], backend: str,
                                                                   ending: str) -> None:
    token = f"{300 + uuid.uuid4().int % 10_000}.{uuid.uuid4().int % 1000}"
    tool = make(layout, backend, python_timeout=3.0)
    out = tool.run(code=escape_code(token, "time.sleep(60)\n" if ending == "times out" else ""))
    try:
        assert "spawned" in out
        assert ("Timed out" in out) == (ending == "times out")
        assert "launcher.py" not in out  # the supervisor itself ends quietly
        assert gone(token), f"left running: {alive_with(token)}"
    finally:
        for pid in alive_with(token):
            os.kill(pid, 9)


def test_stopping_the_agent_kills_a_running_tool_and_its_escaped_children(layout: dict[str, Path]) -> None:
    token = f"{300 + uuid.uuid4().int % 10_000}.{uuid.uuid4().int % 1000}"
    tool = make(layout, "auto", python_timeout=60.0)
    result: list[str] = []
    worker = threading.Thread(target=lambda: result.append(tool.run(code=escape_code(token, "time.sleep(60)\n"))))
    worker.start()
    try:
        end = time.monotonic() + 20
        while len(alive_with(token)) < 2 and time.monotonic() < end:
            time.sleep(0.05)
        assert processes.running(), "the running tool registered its process"
        processes.kill_all()  # what the Ctrl-C / SIGTERM handler does
        worker.join(20)
        assert not worker.is_alive()
        assert gone(token)
    finally:
        for pid in alive_with(token):
            os.kill(pid, 9)


def test_sigkill_of_the_agent_kills_the_script_and_its_escaped_children(layout: dict[str, Path]) -> None:
    import subprocess
    import sys

    token = f"{300 + uuid.uuid4().int % 10_000}.{uuid.uuid4().int % 1000}"
    root = Path(__file__).resolve().parent.parent
    script = escape_code(token, "time.sleep(60)")
    agent_code = (f"import sys; sys.path.insert(0, {str(root)!r})\n"
                  "from pathlib import Path\nfrom config import Settings\nfrom tools.python_exec import PythonTool\n"
                  f"PythonTool(Path({str(layout['ws'])!r}), Settings(python_timeout=60)).run(code={script!r})\n")
    agent = subprocess.Popen([sys.executable, "-c", agent_code])
    try:
        end = time.monotonic() + 20
        while len(set(alive_with(token)) - {agent.pid}) < 2 and time.monotonic() < end:
            time.sleep(0.05)
        assert len(set(alive_with(token)) - {agent.pid}) == 2
        agent.kill()
        agent.wait()
        assert gone(token), "children outlived a SIGKILLed agent"
    finally:
        agent.kill()
        for pid in alive_with(token):
            os.kill(pid, 9)


@pytest.mark.parametrize("backend", BACKENDS)
def test_writes_to_home_dotfiles_the_project_and_dev_shm_are_refused(layout: dict[str, Path], backend: str) -> None:
    shm = f"/dev/shm/agent-bait-{uuid.uuid4().hex}"
    project_file = Path(__file__).resolve().parent.parent / "config.py"
    before = project_file.stat().st_mtime_ns
    code = attempt(f"t('bashrc', lambda: open({str(layout['home'] / '.bashrc')!r}, 'a').write('evil'))",
                   f"t('shm', lambda: open({shm!r}, 'w').write('x'))",
                   f"t('proj', lambda: open({str(project_file)!r}, 'a'))",
                   f"t('runenv', lambda: open({str(layout['run'] / 'new.py')!r}, 'w'))")
    try:
        out = make(layout, backend).run(code=code)
        if backend == "landlock":
            assert "BLOCKED bashrc" in out and "BLOCKED proj" in out and "BLOCKED runenv" in out
            assert "BLOCKED shm" in out
        # bwrap shows none of these paths (a write lands nowhere or fails on the read-only root).
        assert not os.path.exists(shm)
        assert (layout["home"] / ".bashrc").read_text() == "# untouched\n"
        assert project_file.stat().st_mtime_ns == before and not (layout["run"] / "new.py").exists()
    finally:
        if os.path.exists(shm):
            os.remove(shm)


@pytest.mark.parametrize("backend", ["none", *BACKENDS])
def test_a_many_files_disk_fill_is_stopped_by_the_workspace_budget(layout: dict[str, Path], backend: str) -> None:
    tool = make(layout, backend, workspace_budget_mb=8, python_timeout=60.0)
    fill = ("import os\nos.makedirs('fill', exist_ok=True)\ni = 0\n"
            "while True:\n    open(f'fill/{i}', 'wb').write(b'x' * 8192)\n    i += 1\n")
    out = tool.run(code=fill)
    assert "The process was stopped: the workspace holds more than its budget of 8.0 MiB" in out
    assert "Timed out" not in out and "Killed by" not in out and "launcher.py" not in out
    again = tool.run(code="print('next call')")
    assert "next call" in again and "more than its budget" in again  # still over: said again


@pytest.mark.parametrize("backend", ["none", *BACKENDS])
def test_planted_sitecustomize_and_json_in_the_workspace_never_run(layout: dict[str, Path], backend: str) -> None:
    ws = layout["ws"]
    ws.mkdir(parents=True)
    for name in ("sitecustomize.py", "usercustomize.py", "json.py"):
        (ws / name).write_text("open('PLANTED_RAN', 'w').write('x')\nprint('PLANTED CODE RAN')\n")
    (ws / "helper_mod.py").write_text("VALUE = 41\n")
    tool = make(layout, backend)
    out = tool.run(code="import json, helper_mod\nprint(json.dumps({'v': helper_mod.VALUE + 1}))")
    assert "PLANTED CODE RAN" not in out and not (ws / "PLANTED_RAN").exists()
    assert json.loads(out.split("stdout:\n", 1)[1])["v"] == 42  # the standard json, and the model's own module


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_model_is_told_to_download_with_scrape_and_what_is_killed(layout: dict[str, Path], backend: str) -> None:
    from prompt.protocol import render_system_prompt
    from tools.base import ToolRegistry

    tool = make(layout, backend)
    assert "no network access" in tool.description and 'scrape(url, save_as="name")' in tool.description
    assert "every process it started is killed" in tool.description
    assert "scrape(url, save_as=...)" in render_system_prompt(ToolRegistry([tool]))
