"""Which paths confined model code may read: system and interpreter directories, a few /etc files."""

from __future__ import annotations

import functools
import os
import sys
import sysconfig

SYSTEM_DIRS = ("/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin", "/etc/alternatives",
               "/etc/ssl", "/etc/ca-certificates", "/etc/pki", "/etc/crypto-policies", "/etc/fonts",
               "/sys/devices/system/cpu")
# Files libc and Python read: name service, time zone, certificates, MIME types. No secrets live here.
SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/localtime", "/etc/timezone", "/etc/passwd", "/etc/group",
                "/etc/nsswitch.conf", "/etc/hosts", "/etc/host.conf", "/etc/resolv.conf", "/etc/gai.conf",
                "/etc/services", "/etc/protocols", "/etc/mime.types", "/etc/locale.alias",
                "/etc/matplotlibrc", "/dev/urandom", "/dev/random", "/dev/zero")
WRITABLE_DEVICES = ("/dev/null", "/dev/full")


def interpreter_dirs() -> list[str]:
    """The interpreter's prefixes, standard library and site-packages (wherever they live)."""
    found = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
             os.path.dirname(os.path.realpath(sys.executable))]
    found += [v for k, v in sysconfig.get_paths().items() if k in ("stdlib", "platstdlib", "purelib", "platlib")]
    found += [p for p in sys.path if p and ("site-packages" in p or "dist-packages" in p)]
    return found


@functools.cache
def read_only_paths(protected: tuple[str, ...]) -> list[str]:
    """Existing read-only paths, minus any that would expose a protected directory (or one above it)."""
    keep = [p for p in (*SYSTEM_DIRS, *interpreter_dirs()) if os.path.isdir(p)]
    keep += [p for p in SYSTEM_FILES if os.path.exists(p)]
    guarded = [os.path.realpath(p) for p in protected]
    out: dict[str, str] = {}  # real path -> the spelling kept (bwrap recreates /lib -> usr/lib links)
    for path in keep:
        real = os.path.realpath(path)
        if real in out or any(_covers(real, g) for g in guarded):
            continue  # e.g. a venv created in the project folder itself: never open the whole project
        out[real] = path
    return list(out.values())


def _covers(path: str, target: str) -> bool:
    return target == path or target.startswith(path.rstrip("/") + "/")


def protected_dirs() -> list[str]:
    """Directories whose contents model code must never read: the run directory, the project, home."""
    project = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    dirs = [os.getcwd(), project, os.path.expanduser("~")]
    try:
        import pwd

        dirs.append(pwd.getpwuid(os.getuid()).pw_dir)
    except (ImportError, KeyError):
        pass
    return dirs


def hidden_dirs() -> list[str]:
    """What the Landlock backend's mount namespace covers with an empty tmpfs (mounts.py): the protected
    directories, every home and the shared scratch and runtime folders."""
    return [*protected_dirs(), "/home", "/root", "/run", "/var/run", "/tmp", "/var/tmp", "/dev/shm", "/mnt", "/media"]
