"""The supervisor of confined code: confines one child and leaves nothing behind; its helpers serve sessions too.

Run as `python -I -S launcher.py CONFIG` (CONFIG: a marshal'ed dict, hex-encoded) for one command (the
shell tool). It becomes a child subreaper, so every process the command starts (double forks and setsid
included) is re-parented to it when orphaned; it forks the command's process, which sets its limits,
applies Landlock and the seccomp program to itself only, then execs the command. While it runs, more than
`procs` processes under it (a fork bomb) end it at once, its whole process group killed (it runs at a
raised priority where it may, so the bomb cannot starve the count); when it ends, or the agent sends SIGTERM, or the
agent dies (PR_SET_PDEATHSIG), it kills and reaps every remaining descendant, then exits with the command's
status. The python tool's sessions (repl.py) use the same helpers: children(), sweep(), confine().
Only cheap built-in modules: every millisecond here is paid on every call.
"""

from __future__ import annotations

import _signal
import ctypes
import marshal
import os
import resource
import sys

TYPE_CHECKING = False  # typing itself costs milliseconds to import
if TYPE_CHECKING:
    from collections.abc import Callable, Container
    from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # this folder's plain modules (-I leaves it out)
from limits import SANDBOX_FAILED, STOPPED_NOTE, SUPERVISOR_NICE  # noqa: E402

PR_SET_PDEATHSIG, PR_SET_DUMPABLE, _PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP = 1, 4, 38, 22
PR_SET_CHILD_SUBREAPER, _SECCOMP_MODE_FILTER = 36, 2
TICK = 0.025  # seconds between counts of the processes under the supervisor
_libc = ctypes.CDLL(None, use_errno=True)


class Stop(Exception):
    """The agent asked (SIGTERM) or died (PDEATHSIG): kill everything now."""


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def prctl(option: int, value: int) -> int:
    """prctl(option, value); -1 where there is none (elsewhere than Linux the supervisor still sweeps)."""
    call = getattr(_libc, "prctl", None)
    return int(call(option, value, 0, 0, 0)) if call is not None else -1


def malloc_trim() -> None:
    """Give the C heap's free memory back to the system (glibc's malloc_trim; nothing elsewhere)."""
    trim = getattr(_libc, "malloc_trim", None)
    if trim is not None:
        trim(0)


def children(pid: int) -> list[int]:
    """Direct children of pid, those of every thread (orphans land here when pid is a subreaper)."""
    if not _proc_children_files():
        return _children_by_scan(pid)  # a kernel without CONFIG_PROC_CHILDREN
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []  # it has just ended
    found: list[int] = []
    for tid in tasks:
        try:
            fd = os.open(f"/proc/{pid}/task/{tid}/children", os.O_RDONLY)
        except OSError:
            continue
        try:
            data = b""
            while chunk := os.read(fd, 65536):
                data += chunk
        except OSError:
            continue
        finally:
            os.close(fd)
        found += [int(p) for p in data.split()]
    return found


_CHILDREN_FILES: list[bool] = []  # [] until known: does this kernel have /proc/PID/task/TID/children?


def _proc_children_files() -> bool:
    if not _CHILDREN_FILES:
        _CHILDREN_FILES.append(os.path.exists(f"/proc/self/task/{os.getpid()}/children"))
    return _CHILDREN_FILES[0]


def _children_by_scan(parent: int) -> list[int]:
    found: list[int] = []
    if not os.path.isdir("/proc"):
        return found
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as fh:
                    if int(fh.read().rsplit(")", 1)[1].split()[1]) == parent:
                        found.append(int(name))
            except (OSError, IndexError, ValueError):
                continue
    return found


def dead(pid: int) -> bool:
    """True for a zombie or a process already gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X")
    except (OSError, IndexError):
        return True


def kill(pid: int, signum: int) -> None:
    """Signal pid; one already gone is no error."""
    try:  # noqa: SIM105 (contextlib would cost import time on every call)
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def sweep() -> None:
    """SIGKILL and reap every descendant. Only our own children are signalled: their pids stay theirs until
    we reap them, where a grandchild's could be reaped and reused by then (a fork bomb cycles through
    pid_max in seconds). A killed child's children are re-parented to us (a subreaper), so list again."""
    me = os.getpid()
    while True:
        found = children(me)
        for pid in found:
            kill(pid, _signal.SIGKILL)
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            return
        if not found:
            try:  # none listed, yet some remain: wait for them
                os.waitpid(-1, 0)
            except ChildProcessError:
                return
            except InterruptedError:
                continue
        else:
            _signal.sigtimedwait([_signal.SIGCHLD], 0.001)  # a moment for the killed to die


def tidy(known: Container[int], ended: Callable[[int, int], None]) -> None:
    """A server's round (server.py, fork_server.py): reap its ended children, ended(pid, status) for each, then
    kill any child not in `known` (an orphan a dead child left behind: we are its subreaper)."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if not pid:
            break
        ended(pid, status)
    for pid in children(os.getpid()):
        if pid not in known:
            kill(pid, _signal.SIGKILL)


def own_group(keep: list[int], death: int) -> bool:
    """In a server's forked child (server.py's sessions, fork_server.py's calls): signal `death` when the server
    dies, a process group of its own, and no descriptor of the server's but those in `keep`. False when the
    server died before PDEATHSIG was armed."""
    parent = os.getppid()
    prctl(PR_SET_PDEATHSIG, death)
    if os.getppid() != parent:
        return False
    os.setsid()
    low = 3
    for fd in sorted(keep):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1 << 20)
    return True


def stop_everything() -> None:
    """Kill this process's whole group at once, ourselves included: no fork escapes a group kill, and a
    fork bomb outruns any sweep. Under seccomp nothing can leave the group; without it, what left by
    setsid is re-parented to the session server (a subreaper that kills such orphans) or, for a shell
    command, to init."""
    os.killpg(0, _signal.SIGKILL)


def too_many(cap: int) -> bool:
    """Whether more than cap processes live under this one (the count stops early past the cap)."""
    if cap <= 0:
        return False
    count, queue = 0, [os.getpid()]
    while queue:
        kids = children(queue.pop())
        count += len(kids)
        if count > cap:
            return True
        queue += kids
    return False


def join_pids(cfg: dict[str, Any]) -> None:
    """Put this process in cfg's pids cgroup by writing "0" to the file cfg names for it (pids.join_file), if
    any; raises if not done."""
    join = cfg.get("pids")
    if join:
        with open(join, "w") as fh:
            fh.write("0")


def set_limits(cfg: dict[str, Any]) -> None:
    """RLIMIT_AS, RLIMIT_CPU, RLIMIT_FSIZE and RLIMIT_NPROC from cfg (0: leave as is); never above the hard."""
    names = ("RLIMIT_AS", "RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_NPROC")
    for name, value, slack in zip(names, [*cfg["limits"], cfg.get("nproc", 0)], (0, 2, 0, 0), strict=True):
        if value > 0:
            res = getattr(resource, name)
            hard = resource.getrlimit(res)[1]
            soft, top = (value, value + slack) if hard == resource.RLIM_INFINITY else (
                min(value, hard), min(value + slack, hard))
            try:  # noqa: SIM105 (as above)
                resource.setrlimit(res, (soft, top))
            except (ValueError, OSError):
                pass


def _load_bpf(prog: bytes) -> None:
    buf = ctypes.create_string_buffer(prog, len(prog))
    fprog = _SockFprog(len(prog) // 8, ctypes.cast(buf, ctypes.c_void_p))
    if prctl(_PR_SET_NO_NEW_PRIVS, 1) != 0 or _libc.prctl(
            _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"seccomp: {os.strerror(err)}")


def confine(cfg: dict[str, Any]) -> None:
    """The pids cgroup, limits and priority, then the mount namespace, Landlock, no capability, then seccomp,
    in this process only; raises when one fails."""
    import privileges  # this folder's modules, imported before the mount namespace may hide this folder

    join_pids(cfg)
    set_limits(cfg)
    # The agent's priority again, below a raised supervisor's; never above the agent's: a user other than root
    # may not lower a nice value, and `nice main.py` keeps the code niced.
    os.setpriority(os.PRIO_PROCESS, 0, int(cfg.get("nice", 0)))
    lock, ns = cfg.get("landlock"), cfg.get("mounts")
    if lock:
        import landlock  # (only when used: a shell command without Landlock skips it)
    if ns:
        import mounts

        mounts.isolate(ns["workspace"], ns["keep"], ns["hide"])
    if lock:
        landlock.restrict(lock["ro"], lock["rw"], network=lock["network"], files_rw=lock["files_rw"])
    privileges.drop_all()
    if cfg.get("seccomp"):
        _load_bpf(cfg["seccomp"])


def default_signals() -> None:
    """The dispositions and mask a confined child starts with (the supervisor's are not for it)."""
    for signum in (_signal.SIGTERM, _signal.SIGINT, _signal.SIGCHLD):
        _signal.signal(signum, _signal.SIG_DFL)
    _signal.pthread_sigmask(_signal.SIG_SETMASK, [])


def _child(cfg: dict[str, Any]) -> None:
    try:
        default_signals()
        prctl(PR_SET_PDEATHSIG, _signal.SIGKILL)
        confine(cfg)
        argv = cfg["argv"]
        os.execv(argv[0], argv)
    except BaseException as exc:  # noqa: BLE001 (the message is the only thing the agent will see)
        os.write(2, f"sandbox: could not start the script: {type(exc).__name__}: {exc}\n".encode())
    os._exit(SANDBOX_FAILED)


def _stop(signum: int, frame: Any) -> None:
    raise Stop


def watch(pid: int, cap: int) -> int | None:
    """Wait for the child pid (SIGCHLD blocked, so each child's end wakes us at once); None when more
    than cap processes appear under us first."""
    while True:
        while True:  # orphans that ended are reaped too: a dead process does not count
            done, status = os.waitpid(-1, os.WNOHANG)
            if done == pid:
                return status
            if not done:
                break
        if too_many(cap):
            return None
        _signal.sigtimedwait([_signal.SIGCHLD], TICK)


def raise_priority() -> None:
    """Run above the code we supervise where we may (root): a fork bomb cannot starve the one who counts it.
    Without the right, RLIMIT_NPROC (which binds everyone but root) keeps a fork bomb small instead."""
    try:  # noqa: SIM105
        os.setpriority(os.PRIO_PROCESS, 0, SUPERVISOR_NICE)
    except OSError:
        pass


def become_supervisor() -> None:
    """SIGTERM and SIGINT stop us, a subreaper that nobody may read or dump, at a raised priority."""
    raise_priority()
    _signal.signal(_signal.SIGTERM, _stop)
    _signal.signal(_signal.SIGINT, _stop)
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    prctl(PR_SET_DUMPABLE, 0)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def serve_until_stopped(parent: int, serve: Callable[[], None]) -> int:
    """The life of a server the agent started (server.py, fork_server.py) around `serve`: SIGTERM or the agent's
    death (PR_SET_PDEATHSIG) stops it; it supervises (become_supervisor); when `serve` returns or it is
    stopped, every process under it is killed and reaped. SANDBOX_FAILED when the agent died before."""
    _signal.signal(_signal.SIGTERM, _stop)
    prctl(PR_SET_PDEATHSIG, _signal.SIGTERM)
    if os.getppid() != parent:
        return SANDBOX_FAILED  # the agent died before PDEATHSIG was armed
    become_supervisor()
    try:
        serve()
    except Stop:
        pass
    finally:
        _signal.signal(_signal.SIGTERM, _signal.SIG_IGN)
        _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
        sweep()
    return 0


def main() -> int:
    """Supervise one command; exit with its status (a signal death is re-raised on ourselves)."""
    cfg = marshal.loads(bytes.fromhex(sys.argv[1]))
    _signal.signal(_signal.SIGTERM, _stop)
    prctl(PR_SET_PDEATHSIG, _signal.SIGTERM)
    if cfg.get("parent") and os.getppid() != cfg["parent"]:
        return SANDBOX_FAILED  # the agent died before PDEATHSIG was armed
    become_supervisor()
    _signal.pthread_sigmask(_signal.SIG_BLOCK, [_signal.SIGCHLD])
    status: int | None = 0
    try:
        pid = os.fork()
        if pid == 0:
            _child(cfg)
        status = watch(pid, cfg.get("procs", 0))
    except Stop:
        status = _signal.SIGKILL  # as if killed: the agent reports the timeout itself
    finally:
        _signal.signal(_signal.SIGTERM, _signal.SIG_IGN)
        _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
        if status is None:
            os.write(2, ("\n" + STOPPED_NOTE.format(cfg["procs"]) + "\n").encode())
            stop_everything()
        sweep()
    assert status is not None  # (stop_everything() does not return)
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        if signum != _signal.SIGKILL:  # SIGKILL's disposition cannot be set (and needs no reset)
            _signal.signal(signum, _signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main())
