"""The pids cgroup a shell command or Python session runs in (tools/sandbox/pids.py): the kernel refuses a
fork past the cap, root included, and releasing the group leaves no process and no group behind."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid

import pytest

from tests.fakes.processes import alive_with
from tools.sandbox import pids

pytestmark = pytest.mark.skipif(pids.base() is None, reason="no pids cgroup this process may make groups in "
                                                             "(root with cgroup v1's pids controller, or a "
                                                             "delegated cgroup v2)")

FORKS = """
import os, time
started = 0
for _ in range(20):
    try:
        pid = os.fork()
    except OSError as exc:
        print(f"refused after {started}: errno {exc.errno}", flush=True)
        break
    if pid == 0:
        os.close(1), os.close(2)  # the pipes are not held: the run returns at once
        time.sleep(30)
        os._exit(0)
    started += 1
else:
    print(f"all {started} started", flush=True)
"""


def test_a_group_refuses_forks_past_its_cap_and_release_leaves_nothing() -> None:
    token = f"pids{uuid.uuid4().hex[:8]}"
    group = pids.group(cap=6)
    assert group is not None and os.path.isdir(group)
    try:
        argv = pids.join_argv(group, [sys.executable, "-I", "-S", "-c", FORKS, token])
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
        # the interpreter itself is one of the 6: five children, then EAGAIN (root is not exempt)
        assert done.stdout.strip() == "refused after 5: errno 11", (done.stdout, done.stderr)
        assert len(alive_with(token)) == 5
    finally:
        pids.release(group)
    deadline = time.monotonic() + 10
    while (os.path.exists(group) or len(alive_with(token))) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(group) and len(alive_with(token)) == 0

