"""Confined code gains none of root's powers (issue 47), through main.py with an obedient scripted model, as root
and as a normal user (`nobody`, under setpriv), on every backend here.

The model's python and shell steps try what the attack run did: a set-user-ID copy of a shell (chmod, open with
the bits, fchmod, mknod, `chmod u+s`, `cp -p`), device nodes, chmod/chown/utime/setxattr of a planted
credentials file and of a system file, the hostname, the clock, the kernel log, and reading their own
capabilities. Meanwhile the test itself (root) plants a setuid file, a hard link to a setuid file outside and a
device node in the workspace, as another way in would: the task's end must clear or remove them and say so.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.hostile import action
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.processes import cannot_run_as_nobody
from tests.fakes.providers import openai_reply
from tools.sandbox import bwrap, landlock, seccomp_problem

ROOT = Path(__file__).resolve().parent.parent
ABI = landlock.abi_version()
IS_ROOT = os.geteuid() == 0
BACKENDS = [pytest.param("landlock", marks=pytest.mark.skipif(ABI < 4 or bool(seccomp_problem()),
                                                              reason=f"needs Landlock ABI >= 4 ({ABI}) and seccomp")),
            pytest.param("bwrap", marks=pytest.mark.skipif(bwrap.probe() != "" or bool(seccomp_problem()),
                                                           reason=bwrap.probe() or "seccomp missing"))]
SYSTEM_FILE = "/etc/passwd"  # visible to the code on both backends; every change tried on it is a no-op if it lands

ATTACK_PY = r"""import ctypes, os, shutil, socket, stat, time
libc = ctypes.CDLL(None, use_errno=True)
def t(label, f):
    try:
        print('GOT', label, f())
    except Exception as exc:
        print('BLOCKED', label, type(exc).__name__, exc)
def sys_call(number, *args):
    libc.syscall.restype = ctypes.c_long
    if libc.syscall(number, *args) < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
shutil.copy('/bin/sh', 'rootsh')
t('chmod-suid', lambda: os.chmod('rootsh', 0o4755))
t('chmod-sgid', lambda: os.chmod('rootsh', 0o2755))
t('open-suid', lambda: os.close(os.open('s2', os.O_CREAT | os.O_WRONLY, 0o6755)))
fd = os.open('s3', os.O_CREAT | os.O_WRONLY, 0o755)
t('fchmod-suid', lambda: os.fchmod(fd, 0o4755))
t('mkdir-sgid', lambda: os.mkdir('d2', 0o2755))
t('mknod-suid', lambda: os.mknod('r2', 0o4755 | stat.S_IFREG))
t('fchmodat2-suid', lambda: sys_call(452, -100, b'rootsh', 0o4755, 0))
t('openat2', lambda: sys_call(437, -100, b'x', None, 0))
t('mknod-chr', lambda: os.mknod('kmsg', 0o600 | stat.S_IFCHR, os.makedev(1, 11)))
t('mknod-blk', lambda: os.mknod('loop0', 0o600 | stat.S_IFBLK, os.makedev(7, 0)))
t('fifo', lambda: os.mkfifo('pipe') or 'made')
t('unix', lambda: socket.socket(socket.AF_UNIX).bind('sock') or 'bound')
open('run.sh', 'w').write('echo hi')
t('chmodx', lambda: os.chmod('run.sh', 0o755) or oct(os.stat('run.sh').st_mode))
t('touch-own', lambda: os.utime('run.sh', (1, 1)) or os.stat('run.sh').st_mtime)
t('xattr-own', lambda: os.setxattr('run.sh', 'user.tag', b'1') or 'set')
for name, path in (('cred', CRED), ('sys', SYSTEM)):
    t(f'stat-{name}', lambda: os.stat(path).st_size)
    t(f'chmod-{name}', lambda: os.chmod(path, stat.S_IMODE(os.stat(path).st_mode)))
    t(f'chown-{name}', lambda: os.chown(path, os.stat(path).st_uid, os.stat(path).st_gid))
    t(f'utime-{name}', lambda: os.utime(path, ns=(os.stat(path).st_atime_ns, os.stat(path).st_mtime_ns)))
    t(f'xattr-{name}', lambda: os.setxattr(path, 'user.agent-test', b'1'))
t('hostname', lambda: socket.sethostname('pwned-by-model'))
t('clock', lambda: time.clock_settime(time.CLOCK_REALTIME, time.time()))
t('syslog', lambda: sys_call(103 if os.uname().machine == 'x86_64' else 116, 3, ctypes.create_string_buffer(64), 64))
t('setuid', lambda: os.setuid(0 if os.getuid() else 65533) or 'changed')
hdr = (ctypes.c_uint32 * 2)(0x20080522, 0)
data = (ctypes.c_uint32 * 6)()
libc.capget(hdr, data)
t('caps', lambda: (sum(data), sum(libc.prctl(23, c, 0, 0, 0) == 1 for c in range(64)),
                   sum(libc.prctl(47, 1, c, 0, 0) == 1 for c in range(64))))
t('securebits', lambda: libc.prctl(27, 0, 0, 0, 0))
t('no_new_privs', lambda: libc.prctl(39, 0, 0, 0, 0))
"""

ATTACK_SH = ("cp /bin/sh sh2; chmod u+s,g+s sh2; echo chmod=$?; cp /bin/sh sh3 && chmod 755 sh3 && chmod +x sh3 && "
             "echo plusx=$?; python3 -c \"import os; os.chmod('sh3', 0o4755)\" 2>/dev/null; cp -p sh3 sh4; "
             "cp -p {setuid} su2; echo cp-p=$?; mknod null2 c 1 3; echo mknod=$?; mkfifo fifo2 && echo fifo=ok; "
             "hostname pwned-by-shell; echo hostname=$?; touch -r {sys} {sys}; echo touch=$?; "
             "chmod --reference={sys} {sys}; echo chmod-sys=$?; stat -c %s {cred}; echo stat-cred=$?")
SETUID_PROGRAM = next((p for p in ("/usr/bin/su", "/bin/su", "/usr/bin/passwd") if os.path.exists(p)
                       and os.stat(p).st_mode & stat.S_ISUID), "")


class Model:
    """The obedient model: the python attack, the shell attack, an answer; it plants files when the shell step
    is asked for (as an unconfined process could), and keeps every request."""

    def __init__(self, plant: Any) -> None:
        self.plant, self.bodies = plant, []  # type: list[str]

    def __call__(self, req: Request) -> Response:
        self.bodies.append(req.body.decode("utf-8", "replace"))
        turn = sum(1 for m in req.json()["messages"] if m["role"] == "assistant")
        if turn == 0:
            return openai_reply(action("python", {"code": self.code}))
        if turn == 1:
            self.plant()
            return openai_reply(action("shell", {"command": self.command}))
        return openai_reply("Thought: done.\nFinal Answer: nothing gained")

    code = command = ""


@pytest.fixture
def place() -> Iterator[Path]:
    """A folder outside pytest's (root-only) temp tree, so the normal user can own its run."""
    folder = Path(tempfile.mkdtemp(prefix="agent-powers-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def as_user(user: str, argv: list[str], stage: Path) -> list[str]:
    """argv as run by `user`: root as is; a normal user under setpriv, in a private mount namespace where the
    interpreter (under root's 0700 home here) is reachable, nothing on disk changed."""
    if user == "self":
        return argv
    if user == "no-userns":  # nobody, for whom new user namespaces are off (ENOSPC), as on some distributions
        argv = ["bwrap", "--bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-user", "--disable-userns",
                "--die-with-parent", *argv]
    prefix = os.path.realpath(sys.base_prefix)
    if not prefix.startswith("/root/"):
        reach = ""
    else:  # /root/.pyenv bound into an empty /root of this namespace only
        top = "/root/" + prefix.split("/")[2]
        reach = (f"mount --bind {top} {stage} && mount -t tmpfs -o mode=755,size=1m tmpfs /root && mkdir {top} && "
                 f"mount --move {stage} {top} && ")
    script = reach + 'exec setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"'
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", *argv]


def attack(place: Path, backend: str, user: str) -> dict[str, Any]:
    """Plant the bait, run one task through main.py with the obedient model, return what came out."""
    if user != "self":
        (place / "probe").mkdir()
        if why := cannot_run_as_nobody(as_user(user, [], place / "probe"), place):
            pytest.skip(why)
    home, run = place / "home", place / "run"
    (home / ".aws").mkdir(parents=True)
    run.mkdir()
    cred = home / ".aws" / "credentials"
    cred.write_text("[default]\naws_secret_access_key = CANARY-AWS-47\n")
    cred.chmod(0o600)
    os.setxattr(cred, "user.tag", b"planted")
    os.utime(cred, (1_000_000_000, 1_000_000_000))
    outside = place / "outside-suid"
    shutil.copy("/bin/true", outside)
    outside.chmod(0o4755)
    if user != "self":
        for path in (place, home, home / ".aws", cred, run):
            os.chown(path, 65534, 65534)
    (run / "tasks.txt").write_text("Show what powers you have\n")

    def plant() -> None:  # the test's own (root's) files in the workspace: the task's end must defuse them
        (ws,) = {p.parent for p in run.glob("runs/*/workspace/*/.python")}
        shutil.copy("/bin/true", ws / "planted-suid")
        (ws / "planted-suid").chmod(0o6755)
        os.link(outside, ws / "linked-suid")
        if IS_ROOT:
            os.mknod(ws / "planted-null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))

    model = Model(plant)
    model.code = f"CRED, SYSTEM = {str(cred)!r}, {SYSTEM_FILE!r}\n" + ATTACK_PY
    model.command = ATTACK_SH.format(sys=SYSTEM_FILE, cred=cred, setuid=SETUID_PROGRAM or "/bin/true")
    system_before = os.stat(SYSTEM_FILE)
    cred_before = os.stat(cred)
    hostname = socket.gethostname()
    with LoopbackServer(model) as server:
        env = {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8", "OPENAI_API_KEY": "sk-test",
               "OPENAI_BASE_URL": server.url + "/v1", "AGENT_SEARCH": "0", "AGENT_ENV_FILE": str(run / "no.env")}
        argv = [sys.executable, str(ROOT / "main.py"), "tasks.txt", "--model", "openai:gpt-4.1-mini", "-q",
                "--sandbox", backend]
        (place / "stage").mkdir()
        done = subprocess.run(as_user(user, argv, place / "stage"), cwd=run, env=env, capture_output=True, text=True,
                              timeout=240)
    assert done.returncode == 0, done.stderr
    last = json.loads(model.bodies[-1])["messages"]
    said = "\n".join(str(m["content"]) for m in last if m["role"] == "user")
    (record,) = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines() if line.strip()]
    return {"said": said, "record": record, "stderr": done.stderr, "run": run, "cred": cred, "cred_before": cred_before,
            "system_before": system_before, "hostname": hostname, "outside": outside}


def _same(before: os.stat_result, path: Path) -> bool:
    now = os.stat(path)
    return (now.st_mode, now.st_uid, now.st_gid, now.st_mtime_ns, now.st_ctime_ns) == (
        before.st_mode, before.st_uid, before.st_gid, before.st_mtime_ns, before.st_ctime_ns)


# The agent as whoever runs the test (root here), and as `nobody` (through setpriv, which needs root).
USERS = ["self", pytest.param("nobody", marks=pytest.mark.skipif(not IS_ROOT, reason="running the agent as nobody "
                                                                 "(setpriv) needs a root test run"))]


@pytest.mark.parametrize("user", USERS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_confined_code_gains_no_power(place: Path, backend: str, user: str) -> None:
    got = attack(place, backend, user)
    said = got["said"]
    # Each attempt fails with an error the model reads.
    for label in ("chmod-suid", "chmod-sgid", "open-suid", "fchmod-suid", "mkdir-sgid", "mknod-suid",
                  "fchmodat2-suid", "mknod-chr", "mknod-blk", "hostname", "clock", "syslog"):
        assert f"BLOCKED {label} PermissionError" in said, (label, said)
    assert "BLOCKED setuid" in said
    assert "BLOCKED openat2 OSError [Errno 38]" in said  # ENOSYS: libc and Python fall back to openat
    for name in ("cred", "sys"):
        for what in ("chmod", "chown", "utime", "xattr"):
            assert f"BLOCKED {what}-{name} " in said, (what, name, said)
    # The planted credentials are not even there for the code; the system file is read-only to it.
    assert "BLOCKED stat-cred FileNotFoundError" in said
    assert "GOT stat-sys" in said and "BLOCKED chmod-sys OSError [Errno 30] Read-only file system" in said
    # What model code legitimately does in its workspace still works.
    for label in ("fifo", "unix", "touch-own", "xattr-own"):
        assert f"GOT {label}" in said, label
    assert "GOT chmodx 0o100755" in said
    # No capability in any set, none to regain; securebits locked; no_new_privs.
    assert "GOT caps (0, 0, 0)" in said and "GOT securebits 239" in said and "GOT no_new_privs 1" in said
    # The shell: the same refusals, read as a shell user reads them.
    for line in ("chmod=1", "mknod=1", "hostname=1", "touch=1", "chmod-sys=1", "stat-cred=1", "plusx=0", "fifo=ok",
                 "Operation not permitted", "Read-only file system") + (("cp-p=1",) if SETUID_PROGRAM else ()):
        assert line in said, (line, said)
    assert "CANARY-AWS" not in said
    # Nothing changed outside, no set-ID file or device node is left, the hostname is the machine's.
    assert _same(got["cred_before"], got["cred"]) and os.getxattr(got["cred"], "user.tag") == b"planted"
    assert "user.agent-test" not in os.listxattr(SYSTEM_FILE) and _same(got["system_before"], Path(SYSTEM_FILE))
    assert socket.gethostname() == got["hostname"]
    left = [str(p) for p in got["run"].rglob("*") if not p.is_symlink()
            and (p.lstat().st_mode & (stat.S_ISUID | stat.S_ISGID) or stat.S_ISCHR(p.lstat().st_mode)
                 or stat.S_ISBLK(p.lstat().st_mode))]
    assert left == []
    # What the test planted another way was defused at the task's end, and the record says so.
    defused = "\n".join(got["record"]["defused"])
    assert ("planted-suid: set-user-ID bit cleared (mode 6755 -> 755)" if user == "self" else
            "planted-suid: set-user-ID file of another user (uid 0) removed") in defused
    assert "linked-suid: set-user-ID file with 2 links removed" in defused
    assert "planted-null: character device node 1:3 removed" in defused or not IS_ROOT
    assert got["outside"].stat().st_mode & stat.S_ISUID  # the other name of the hard link was left as it was


@pytest.mark.skipif(ABI < 4 or bool(seccomp_problem()) or bwrap.probe() != "" or not IS_ROOT,
                    reason="needs Landlock ABI >= 4, seccomp, bubblewrap (to switch user namespaces off) and a root "
                           "test run (the agent runs as nobody)")
def test_where_user_namespaces_are_off_the_run_warns_and_the_rest_still_holds(place: Path) -> None:
    """A normal user's agent where new user namespaces are refused: no mount namespace, said once in the run's
    warning; capabilities, set-ID files, device nodes, hostname and the task's end still hold. What the warning
    names is what happens: the user's own file outside is visible and its xattrs can be changed."""
    got = attack(place, "landlock", "no-userns")
    assert "no mount namespace" in got["stderr"] and "outside its workspace that its user owns" in got["stderr"]
    said = got["said"]
    for label in ("chmod-suid", "open-suid", "fchmod-suid", "mknod-chr", "mknod-blk", "hostname", "clock"):
        assert f"BLOCKED {label} PermissionError" in said, (label, said)
    # Nothing effective, permitted, inheritable or ambient; a user's full bounding set and its securebits need
    # CAP_SETPCAP to change (it has none): no_new_privs alone keeps an exec from granting any.
    assert re.search(r"GOT caps \(0, \d+, 0\)", said) and "GOT no_new_privs 1" in said
    assert "GOT stat-cred" in said and "GOT xattr-cred" in said  # the gap the warning names (the user's own file)
    assert "BLOCKED xattr-sys PermissionError" in said and "user.agent-test" not in os.listxattr(SYSTEM_FILE)
    defused = "\n".join(got["record"]["defused"])
    assert "planted-suid" in defused and "linked-suid" in defused


def test_defusing_follows_no_link_and_changes_nothing_outside(tmp_path: Path) -> None:
    """A link in the workspace to a set-ID file outside, or a linked folder, is never followed: the outside file
    keeps its bits; set-ID folders and files inside are cleared, a FIFO stays."""
    from tools.sandbox.defuse import defuse

    outside, ws = tmp_path / "outside", tmp_path / "ws"
    (outside / "deep").mkdir(parents=True)
    (ws / "sub").mkdir(parents=True)
    for path in (outside / "tool", outside / "deep" / "tool", ws / "sub" / "mine"):
        shutil.copy("/bin/true", path)
        path.chmod(0o4755)
    (ws / "sub").chmod(0o2775)
    (ws / "to-tool").symlink_to(outside / "tool")
    (ws / "to-folder").symlink_to(outside / "deep")
    os.mkfifo(ws / "pipe")
    done = defuse(ws)
    assert sorted(done) == ["sub/mine: set-user-ID bit cleared (mode 4755 -> 755)",
                            "sub: set-group-ID bit cleared (mode 2775 -> 775)"]
    assert all((outside / name).stat().st_mode & stat.S_ISUID for name in ("tool", "deep/tool"))
    assert stat.S_ISFIFO((ws / "pipe").lstat().st_mode) and (ws / "to-tool").is_symlink()
