"""Confined code holds no capability and cannot regain one, whoever runs the agent (root included).

Every capability set is emptied: the ambient set cleared, each capability dropped from the bounding set
(no exec can give one back, not even of a set-user-ID-root or file-capability program), the securebits that
make uid 0 special set and locked (SECBIT_NOROOT: root gets no capabilities on exec; no ambient raise; no
fix-up on setuid), then the effective, permitted and inheritable sets emptied with capset(2); no_new_privs
is set as well. A step that needs a capability the process no longer has (a normal user's bounding set,
which needs CAP_SETPCAP to change) is skipped: such a process has nothing to drop there. Imported by the
launcher and the sessions from this folder: ctypes and os only.
"""

from __future__ import annotations

import ctypes
import os

PR_CAPBSET_DROP, PR_SET_SECUREBITS, PR_GET_SECUREBITS, PR_CAP_AMBIENT = 24, 28, 27, 47
PR_CAP_AMBIENT_CLEAR_ALL, PR_SET_NO_NEW_PRIVS = 4, 38
_CAPABILITY_VERSION_3 = 0x20080522
# SECBIT_NOROOT, NO_SETUID_FIXUP and NO_CAP_AMBIENT_RAISE, each with its lock, and KEEP_CAPS locked off.
SECBITS = (1 << 0 | 1 << 1) | (1 << 2 | 1 << 3) | (1 << 5) | (1 << 6 | 1 << 7)
_LAST_CAP = 63  # the bounding set is dropped up to here; the kernel answers EINVAL past its own last one


class _Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _Data(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def drop_all() -> None:
    """Empty every capability set of this process for good; OSError when capset or no_new_privs fails."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    for cap in range(_LAST_CAP + 1):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() == 22:  # EINVAL: past the last
            break
    libc.prctl(PR_SET_SECUREBITS, SECBITS, 0, 0, 0)  # needs CAP_SETPCAP: a normal user's stay as they are
    data = (_Data * 2)()
    if libc.capset(ctypes.byref(_Header(_CAPABILITY_VERSION_3, 0)), data) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"capset: {os.strerror(err)}")
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"no_new_privs: {os.strerror(err)}")
