"""A task's Python session: a supervisor and the interpreter that keeps the task's variables between calls.

server.py forks supervise() for a task (Landlock or no sandbox), or hands a task to a spare it forked
ahead (supervise_spare); under bubblewrap the same code starts as `python -I -B -u -X utf8 repl.py CONFIG`
inside the namespaces. The supervisor (unconfined, a child
subreaper with PR_SET_PDEATHSIG) forks the interpreter, which confines itself (limits, Landlock, seccomp)
before it reads any model code, then relays each call of the agent to it. After a call it stops the
interpreter (SIGSTOP: its threads wait for the next call) and kills every other process of the session.
The interpreter's death, more than `procs` processes during a call, the agent's SIGTERM or socket closing,
or the server's death end the session: everything in it is killed and reaped.

Messages (wire.py): marshal from the agent and to it (both trusted), "STATUS LIMIT" text from the
interpreter, whose answers model code may forge (they only describe its own call). Only small C modules
here and in launcher.py, landlock.py and wire.py: a session is a fork of the server, and every page the
server holds is a page each fork maps.
"""

from __future__ import annotations

import _signal
import _socket
import builtins
import errno
import marshal
import os
import resource
import select
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import launcher  # noqa: E402  (this folder's launcher.py: the supervisor's helpers)
import wire  # noqa: E402

TYPE_CHECKING = False
if TYPE_CHECKING:
    from _socket import socket
    from collections.abc import Callable
    from typing import Any

# Our modules: not for model code's imports.
_HELPERS = ("launcher", "landlock", "mounts", "privileges", "repl", "server", "wire")
_MAX_ANSWER = 4096


def supervise(cfg: dict[str, Any], agent: socket) -> None:
    """Run the session until it ends, then kill and reap everything in it and exit."""
    _supervise(lambda: (cfg, agent), [agent])


def supervise_spare(spare: socket) -> None:
    """A session made ahead of its task: fork the interpreter now; the task (its configuration and the
    agent's socket) comes on `spare` when the server hands it out; say our pid to the agent then."""
    def task() -> tuple[dict[str, Any], socket]:
        msg, fds = wire.recv_message(spare, 1)
        if not msg or len(fds) != 1:
            raise launcher.Stop  # the server went away first
        spare.close()
        agent = _socket.socket(fileno=fds[0])
        wire.send_message(agent, marshal.dumps({"pid": os.getpid()}))
        return marshal.loads(msg), agent

    _supervise(task, [spare])


def _supervise(task: Callable[[], tuple[dict[str, Any], socket]], ours: list[socket]) -> None:
    launcher.become_supervisor()
    mine, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM)
    mine.settimeout(1.0)  # an answer begun is finished at once, or the session ends
    me = os.getpid()
    repl = os.fork()
    if repl == 0:
        for sock in (*ours, mine):
            sock.close()
        _interpreter(theirs, me)
    theirs.close()
    try:
        cfg, agent = task()
        launcher.join_pids(cfg)  # the interpreter joins as it confines itself, before it runs any code
        mine.settimeout(None)
        wire.send_message(mine, marshal.dumps(cfg))  # the interpreter's task: it confines itself for it
        mine.settimeout(1.0)
        _serve(cfg, agent, mine, repl)
    except (launcher.Stop, OSError):
        pass
    finally:
        _signal.signal(_signal.SIGTERM, _signal.SIG_IGN)
        _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
        launcher.kill(repl, _signal.SIGKILL)
        launcher.sweep()
    os._exit(0)


def _serve(cfg: dict[str, Any], agent: socket, repl_sock: socket, repl: int) -> None:
    """Relay calls until the agent closes its socket or the session ends."""
    while True:
        msg, fds = wire.recv_message(agent, 2)
        if not msg:
            return
        launcher.kill(repl, _signal.SIGCONT)
        try:
            wire.send_message(repl_sock, msg, fds)
        finally:
            for fd in fds:
                os.close(fd)
        reply = _wait_call(cfg, agent, repl_sock, repl)
        if "ended" not in reply:
            reply = _pause(repl) or reply
        wire.send_message(agent, marshal.dumps(reply))
        if reply.get("why") == "processes":
            launcher.stop_everything()
        if "ended" in reply:
            return


def _wait_call(cfg: dict[str, Any], agent: socket, repl_sock: socket, repl: int) -> dict[str, Any]:
    """The interpreter's answer to the call, or how the session ended first."""
    poller = select.poll()
    poller.register(repl_sock, select.POLLIN)
    poller.register(agent, 0)  # only its hang-up: the agent went away
    tick = int(launcher.TICK * 1000)
    while True:
        for fd, _ in poller.poll(tick):
            if fd == agent.fileno():
                raise launcher.Stop
            try:
                data, _ = wire.recv_message(repl_sock, limit=_MAX_ANSWER)
            except OSError:  # half an answer: the code is tampering with the session's own socket
                return {"ended": -_signal.SIGKILL, "why": "exit"}
            if data:
                return _answer(data)
            poller.unregister(repl_sock)  # closed: the interpreter is gone or going
            tick = 1
        done, status = os.waitpid(repl, os.WNOHANG)
        if done:
            return {"ended": os.waitstatus_to_exitcode(status), "why": "exit"}
        if launcher.too_many(cfg.get("procs", 0)):
            return {"ended": -_signal.SIGKILL, "why": "processes"}


def _answer(data: bytes) -> dict[str, Any]:
    """The interpreter's answer, checked: an exit status and, for a limit it hit, which one."""
    status, _, kind = data.decode("ascii", "replace").partition(" ")
    try:
        code = max(min(int(status), 255), 0)
    except ValueError:
        code = 1
    return {"status": code, "kind": kind if kind in ("memory", "file_size") else None}


def _pause(repl: int) -> dict[str, Any] | None:
    """Stop the interpreter and kill every other process of the session; how it ended if it died meanwhile."""
    launcher.kill(repl, _signal.SIGSTOP)
    try:
        _, status = os.waitpid(repl, os.WUNTRACED)
    except ChildProcessError:
        return {"ended": -_signal.SIGKILL, "why": "exit"}
    if not os.WIFSTOPPED(status):
        return {"ended": os.waitstatus_to_exitcode(status), "why": "exit"}
    me = os.getpid()
    while True:  # our children and the stopped interpreter's: no one else can reap them, so their pids hold
        victims = [p for p in launcher.children(me) if p != repl]
        victims += [p for p in launcher.children(repl) if not launcher.dead(p)]
        if not victims:
            return None
        for pid in victims:
            launcher.kill(pid, _signal.SIGKILL)
        _reap_all_but(repl)
        time.sleep(0.001)


def _reap_all_but(keep: int) -> None:
    """Reap our children that ended (orphans of the call), never waiting for the interpreter."""
    for pid in launcher.children(os.getpid()):
        if pid != keep:
            try:  # noqa: SIM105 (one import less)
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


def _interpreter(sock: socket, supervisor: int) -> None:
    """The session's interpreter: wait for its task, confine this process, then run calls until the socket
    closes."""
    launcher.default_signals()
    launcher.prctl(launcher.PR_SET_PDEATHSIG, _signal.SIGKILL)
    if os.getppid() != supervisor:
        os._exit(launcher.SANDBOX_FAILED)
    os.closerange(3, sock.fileno())
    os.closerange(sock.fileno() + 1, 1 << 20)
    null = os.open(os.devnull, os.O_WRONLY)
    msg, _ = wire.recv_message(sock)
    if not msg:
        os._exit(0)
    problem = None
    try:
        cfg = marshal.loads(msg)
        os.chdir(cfg["workspace"])
        os.environ.clear()
        os.environ.update(cfg["env"])
        launcher.confine(cfg)
        namespace = _fresh_main(cfg["workspace"])
    except BaseException as exc:  # noqa: BLE001 (said on the first call's stderr)
        problem = f"{type(exc).__name__}: {exc}"
    me = os.getpid()
    while True:
        msg, fds = wire.recv_message(sock, 2)
        if not msg or len(fds) != 2:
            os._exit(0)
        if problem is not None:
            os.write(fds[1], f"sandbox: could not start the Python session: {problem}\n".encode())
            wire.send_message(sock, str(launcher.SANDBOX_FAILED).encode())
            os._exit(launcher.SANDBOX_FAILED)
        status, kind = _call(namespace, marshal.loads(msg), fds, me, null)
        wire.send_message(sock, f"{status} {kind or '-'}".encode())


def _fresh_main(workspace: str) -> dict[str, Any]:
    """A new __main__ for model code; our own modules off sys.path and sys.modules, the workspace last."""
    folder = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if p != folder] + [workspace]
    for name in _HELPERS:
        sys.modules.pop(name, None)
    if "tempfile" in sys.modules:
        sys.modules["tempfile"].__dict__["tempdir"] = None  # found again from TMPDIR, in the workspace
    main = type(sys)("__main__")
    main.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = main
    return main.__dict__


def _call(ns: dict[str, Any], req: dict[str, Any], fds: list[int], me: int, null: int) -> tuple[int, str | None]:
    """Run one saved script in the session's namespace with its output on the call's pipes."""
    os.dup2(fds[0], 1)
    os.dup2(fds[1], 2)
    os.close(fds[0])
    os.close(fds[1])
    sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__  # a call that replaced them does not mute the next
    _cpu_budget(int(req.get("cpu", 0)))
    status, kind = _run(ns, str(req["path"]))
    if os.getpid() != me:  # a fork the code made ran off the end of it: only the session answers
        os._exit(status)
    for stream in (sys.stdout, sys.stderr):
        try:  # noqa: SIM105
            stream.flush()  # type: ignore[union-attr]
        except Exception:  # noqa: BLE001 (the code may have closed or removed it)
            pass
    os.dup2(null, 1)
    os.dup2(null, 2)
    return status, kind


def _run(ns: dict[str, Any], path: str) -> tuple[int, str | None]:
    """Exit status of the script (as `python script.py` would give) and the limit it hit, if any."""
    try:
        with open(path, "rb") as fh:
            source = fh.read()
        ns["__file__"] = path
        sys.argv[:] = [path]
        exec(compile(source, path, "exec", dont_inherit=True), ns)
    except SystemExit as exc:
        return _exit_status(exc.code), None
    except BaseException as exc:  # noqa: BLE001 (shown as Python would, without this file's frame)
        import traceback  # here, not in the server: its pages would be copied into every session

        tb = exc.__traceback__
        traceback.print_exception(type(exc), exc, tb.tb_next if tb is not None else None)
        return 1, _limit_hit(exc)
    return 0, None


def _exit_status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _limit_hit(exc: BaseException) -> str | None:
    if isinstance(exc, MemoryError) or (isinstance(exc, OSError) and exc.errno == errno.ENOMEM):
        return "memory"
    if isinstance(exc, OSError) and exc.errno == errno.EFBIG:
        return "file_size"
    return None


def _cpu_budget(seconds: int) -> None:
    """RLIMIT_CPU for this call: the CPU time used so far plus the call's allowance."""
    if seconds <= 0:
        return
    used = resource.getrusage(resource.RUSAGE_SELF)
    hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
    soft = int(used.ru_utime + used.ru_stime) + seconds
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    try:  # noqa: SIM105
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
    except (ValueError, OSError):
        pass


def main() -> int:
    """Inside bubblewrap: the session socket is inherited, its number in CONFIG."""
    cfg = marshal.loads(bytes.fromhex(sys.argv[1]))
    os.set_inheritable(cfg["fd"], False)
    launcher.prctl(launcher.PR_SET_PDEATHSIG, _signal.SIGTERM)
    supervise(cfg, _socket.socket(fileno=cfg["fd"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
