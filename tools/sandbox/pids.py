"""A pids cgroup for each shell command and Python session: the kernel refuses a fork past its cap, root included.

RLIMIT_NPROC (set too, launcher.set_limits) binds everyone but root, and the supervisor's count of its
descendants (launcher.too_many) runs on a timer that a fork bomb can outrun: as root, a bomb made thousands
of processes before a count saw them. A cgroup's `pids.max` cannot be outrun. The agent makes a group under
its own cgroup before a command or session starts and removes it afterwards, killing anything left in it;
the sandbox's first process joins it before anything is confined (bubblewrap hides /sys, Landlock would
refuse the write), so every process the code starts is counted. Used where this process may make groups:
cgroup v1's pids controller writable (root), or cgroup v2 with pids enabled for its children (a delegated
cgroup). Elsewhere group() gives None and RLIMIT_NPROC with the supervisor's count bound a fork bomb.
"""

from __future__ import annotations

import functools
import itertools
import os
import signal
import threading
import time

from tools.sandbox.limits import MAX_PROCESSES

# Beyond the code's own processes: its supervisor, the interpreter, bubblewrap's two, a shell between.
SLACK = 8
PREFIX = "agent-sandbox-"
_numbers = itertools.count(1)


def _own_cgroups() -> tuple[str | None, str | None]:
    """This process's pids cgroup path under cgroup v1 and its cgroup v2 path (None: not in one)."""
    v1 = v2 = None
    with open("/proc/self/cgroup", encoding="utf-8") as fh:
        for line in fh:
            parts = line.rstrip("\n").split(":", 2)
            if len(parts) != 3:
                continue
            if parts[0] == "0" and parts[1] == "":
                v2 = parts[2]
            elif "pids" in parts[1].split(","):
                v1 = parts[2]
    return v1, v2


def _mounts() -> tuple[tuple[str, str] | None, str | None]:
    """(mount root, mount point) of cgroup v1's pids hierarchy, and cgroup v2's mount point."""
    v1 = v2 = None
    with open("/proc/self/mountinfo", encoding="utf-8") as fh:
        for line in fh:
            head, _, tail = line.partition(" - ")
            fields, kind = head.split(), tail.split()
            if len(fields) < 5 or len(kind) < 3:
                continue
            if kind[0] == "cgroup" and "pids" in kind[2].split(","):
                v1 = (fields[3], fields[4])
            elif kind[0] == "cgroup2" and v2 is None:
                v2 = fields[4]
    return v1, v2


def _find() -> str | None:
    """The folder of this process's own pids cgroup, where it may make groups; None where it may not."""
    own_v1, own_v2 = _own_cgroups()
    mount_v1, mount_v2 = _mounts()
    if own_v1 is not None and mount_v1 is not None:
        root, point = mount_v1
        rel = own_v1[len(root):] if own_v1.startswith(root) else own_v1
        folder = os.path.join(point, rel.lstrip("/"))
    elif own_v2 is not None and mount_v2 is not None:
        folder = os.path.join(mount_v2, own_v2.lstrip("/"))
        with open(os.path.join(folder, "cgroup.subtree_control"), encoding="utf-8") as fh:
            if "pids" not in fh.read().split():
                return None
    else:
        return None
    return folder if os.access(folder, os.W_OK) else None


@functools.cache
def base() -> str | None:
    """Where groups are made (found once); groups a killed agent left behind are removed on the way."""
    if not os.path.isdir("/proc"):
        return None
    try:
        folder = _find()
    except OSError:
        return None
    if folder is not None:
        for name in os.listdir(folder):
            owner = name[len(PREFIX):].split("-")[0] if name.startswith(PREFIX) else ""
            if owner.isdigit() and not os.path.exists(f"/proc/{owner}"):
                _remove(os.path.join(folder, name), wait=0.5)
    return folder


def group(cap: int = MAX_PROCESSES + SLACK) -> str | None:
    """A new, empty group that holds at most cap processes: its folder, or None where none can be made."""
    folder = base()
    if folder is None:
        return None
    path = os.path.join(folder, f"{PREFIX}{os.getpid()}-{next(_numbers)}")
    try:
        os.mkdir(path, 0o700)
    except OSError:
        return None
    try:
        with open(os.path.join(path, "pids.max"), "w", encoding="ascii") as fh:
            fh.write(str(cap))
    except OSError:
        os.rmdir(path)
        return None
    return path


def join_file(path: str) -> str:
    """The file a process writes "0" to, to join the group itself. Under cgroup v1, `tasks`: a single-threaded
    process moving itself (a shell, a freshly forked process) skips the lock that `cgroup.procs` and moving
    another process take, which waits for an RCU grace period: about 10 ms each time here."""
    tasks = os.path.join(path, "tasks")
    return tasks if os.path.exists(tasks) else os.path.join(path, "cgroup.procs")


def join_argv(path: str, argv: list[str]) -> list[str]:
    """argv run by a shell that first puts itself (and so all it execs and starts) in the group."""
    return ["/bin/sh", "-c", 'echo 0 >"$0" && exec "$@"', join_file(path), *argv]


def release(path: str | None) -> None:
    """Kill what is left in the group and remove it; what is still dying is waited for in the background."""
    if path is not None and not _remove(path, wait=0.05):
        threading.Thread(target=_remove, args=(path, 30.0), name="sandbox-pids-release", daemon=True).start()


def _remove(path: str, wait: float) -> bool:
    """Kill the group's processes until it is empty and remove it; False if it still had some after wait s."""
    deadline = time.monotonic() + wait
    while True:
        try:
            os.rmdir(path)
            return True
        except FileNotFoundError:
            return True
        except OSError:
            pass
        _kill_all(path)
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)  # the killed are reaped by their supervisor or the session server


def _kill_all(path: str) -> None:
    try:
        with open(os.path.join(path, "cgroup.kill"), "w", encoding="ascii") as fh:  # cgroup v2, Linux 5.14+
            fh.write("1")
        return
    except OSError:
        pass
    try:
        with open(os.path.join(path, "cgroup.procs"), encoding="ascii") as fh:
            members = [int(line) for line in fh if line.strip()]
    except (OSError, ValueError):
        return
    name = os.path.basename(path)
    for pid in members:
        _kill_member(pid, name)


def _kill_member(pid: int, name: str) -> None:
    """SIGKILL pid if, held by a pidfd, it is still in the group named name (a pid reused since the group was
    listed belongs to someone else)."""
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        return
    try:
        with open(f"/proc/{pid}/cgroup", encoding="utf-8") as fh:
            if f"/{name}\n" in fh.read():
                signal.pidfd_send_signal(fd, signal.SIGKILL)
    except OSError:
        pass
    finally:
        os.close(fd)
