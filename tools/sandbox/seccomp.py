"""The seccomp filter for model code, built with pyseccomp (ctypes bindings to the system's libseccomp).

libseccomp maps syscall names to numbers per architecture and kills calls made through a foreign ABI
(x32, i386's int 0x80), which a hand-written BPF program would have to get right by itself. The agent
builds the filter once and exports it as a BPF program; the launcher loads those bytes with one prctl,
so the child never imports pyseccomp (whose import alone costs about 20 ms).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import socket
import tempfile
from typing import Any

# Debugging, other processes' memory, namespaces and mounts, kernel attack surface rarely needed by scripts.
DENIED = (
    "ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "pidfd_getfd",
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen",
    "fsconfig", "fsmount", "fspick", "mount_setattr", "bpf", "io_uring_setup", "io_uring_enter",
    "io_uring_register", "keyctl", "add_key", "request_key", "perf_event_open", "userfaultfd",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "open_by_handle_at",
    "name_to_handle_at", "lookup_dcookie", "quotactl", "acct", "swapon", "swapoff", "reboot",
    # Its priority stays below its supervisor's (root could raise it again).
    "setpriority", "sched_setscheduler", "sched_setparam", "sched_setattr",
    # The machine's identity, clock and kernel (Docker's default profile refuses these too; root could).
    "sethostname", "setdomainname", "settimeofday", "stime", "clock_settime", "clock_settime64",
    "clock_adjtime", "clock_adjtime64", "adjtimex", "syslog", "vhangup", "iopl", "ioperm", "uselib",
    "create_module", "get_kernel_syms", "query_module", "nfsservctl", "_sysctl", "sysfs", "ustat", "vm86",
    "vm86old", "kcmp", "fanotify_init", "quotactl_fd", "umount", "open_tree_attr", "listmount", "statmount",
    "pciconfig_read", "pciconfig_write", "pciconfig_iobase",
)
# Where each call that sets a file's mode takes it (argument index): set-user-ID and set-group-ID bits are
# refused there, so no file the code makes can run with its owner's powers (root's, when the agent is root).
# mknod also makes character and block devices (a raw disk, /dev/kmsg): those types are refused; FIFOs,
# sockets and regular files stay. openat2 keeps its mode in a struct the filter cannot read: ENOSYS, and
# libc and Python fall back to openat.
MODE_ARG = {"chmod": 1, "fchmod": 1, "fchmodat": 2, "fchmodat2": 2, "open": 2, "openat": 3, "creat": 1,
            "mkdir": 1, "mkdirat": 2, "mknod": 1, "mknodat": 2}
_FCHMODAT2 = 452  # the same number on every architecture (after the syscall tables were unified)
S_ISUID, S_ISGID, S_IFMT, S_IFCHR, S_IFBLK = 0o4000, 0o2000, 0o170000, 0o020000, 0o060000
# clone() flags that create namespaces; clone3 hides its flags in memory, so it gets ENOSYS and libc
# falls back to clone(), whose flags the filter can see.
_CLONE_NEW = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000, 0x00000080)


def load_library() -> Any:
    """The pyseccomp module; ImportError or RuntimeError (no libseccomp) when it cannot be had."""
    import pyseccomp

    return pyseccomp


@functools.cache
def program(*, network: bool) -> bytes:
    """The filter as raw BPF instructions (struct sock_filter[]) for this machine's architecture."""
    sc = load_library()
    flt = sc.SyscallFilter(sc.ALLOW)
    for name in DENIED:
        try:
            flt.add_rule(sc.ERRNO(errno.EPERM), name)
        except (OSError, ValueError, RuntimeError):
            continue  # a syscall this architecture or libseccomp does not know: nothing to deny
    for flag in _CLONE_NEW:
        flt.add_rule(sc.ERRNO(errno.EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    # Leaving the process group becomes a no-op that reports success, so killing the group the agent
    # started also kills daemons that double-fork and setsid (the launcher's sweep is the second net).
    for name in ("setsid", "setpgid"):
        flt.add_rule(sc.ERRNO(0), name)
    with contextlib.suppress(OSError, ValueError, RuntimeError):  # a libseccomp too old to know clone3
        flt.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    _file_modes(sc, flt)
    if not network:
        # Only AF_UNIX (and socketpair, which is always AF_UNIX) stays: multiprocessing needs it.
        flt.add_rule(sc.ERRNO(errno.EACCES), "socket", sc.Arg(0, sc.NE, socket.AF_UNIX))
    with tempfile.TemporaryFile() as fh:
        flt.export_bpf(fh)
        fh.seek(0)
        return fh.read()


def _file_modes(sc: Any, flt: Any) -> None:
    """No set-user/group-ID bit through any call that sets a mode; no character or block device node."""
    for name, arg in MODE_ARG.items():
        rules = [(bit, bit) for bit in (S_ISUID, S_ISGID)]
        if name.startswith("mknod"):
            rules += [(S_IFMT, S_IFCHR), (S_IFMT, S_IFBLK)]
        try:
            for mask, value in rules:
                flt.add_rule(sc.ERRNO(errno.EPERM), name, sc.Arg(arg, sc.MASKED_EQ, mask, value))
        except (OSError, ValueError, RuntimeError):  # not on this architecture, or unknown to this libseccomp
            if name == "fchmodat2":  # (Linux 6.6) refused whole by its number: libc falls back to fchmodat
                with contextlib.suppress(OSError, ValueError, RuntimeError):
                    flt.add_rule(sc.ERRNO(errno.ENOSYS), _FCHMODAT2)
    with contextlib.suppress(OSError, ValueError, RuntimeError):  # a libseccomp too old to know openat2
        flt.add_rule(sc.ERRNO(errno.ENOSYS), "openat2")
