"""The per-task workspace byte budget: disk use counted in allocated blocks, at least one block per entry.

A folder the agent's user may not list (model code made it 0300) is counted all the same: its owner gives it
u+rx back first (defuse.let_owner_list), as root would list it anyway.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from tools.sandbox.defuse import let_owner_list

_BLOCK = 4096  # an empty file still costs an inode and usually a block: many tiny files add up


@dataclass(frozen=True)
class Usage:
    """Bytes and entries a workspace uses."""

    bytes: int
    entries: int


def usage(root: str, stop_above: int | None = None) -> Usage:
    """Walk root without following links; stop early once stop_above bytes are counted."""
    total = entries = 0
    try:
        stack = [(root, os.lstat(root))]
    except OSError:
        return Usage(0, 0)
    while stack:
        folder, folder_st = stack.pop()
        try:
            let_owner_list(folder, folder_st)
            it = os.scandir(folder)
        except OSError:
            continue
        with it:
            for entry in it:
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                entries += 1
                total += max(st.st_blocks * 512, _BLOCK)
                if entry.is_dir(follow_symlinks=False):
                    stack.append((entry.path, st))
                if stop_above is not None and total > stop_above:
                    return Usage(total, entries)
    return Usage(total, entries)


def human(n: int) -> str:
    """Bytes in MiB or GiB, for observations."""
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"
