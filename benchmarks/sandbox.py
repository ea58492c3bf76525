"""Wall and CPU time per python tool call: a task's first call, its later calls, and `import pandas` across calls.

    python benchmarks/sandbox.py [--tasks 30] [--calls 200] [--backends none landlock bwrap] [--root DIR ...]
                                 [--rounds N]

Each backend (every one this machine has, by default) gets: the run's very first call (it also starts the
session server), --tasks fresh tools each making one `print(1)` call 50 ms after the previous task ended (a
task's first call, after its first model call), one tool making
--calls `print(1)` calls (later calls), and three tasks that each run `import pandas as pd` + a small
DataFrame twice (skipped without pandas: `pip install pandas`; it is not a project dependency). Wall times
are medians (p90); CPU is all the processes involved (the agent, the session server, sessions, launchers,
interpreters) from /proc, divided by the calls. A later call also takes the CPU time of 50,000 `os.stat('.')`
inside the confined interpreter (what each system call pays the seccomp filter; CPU time, not wall, so that
the machine's load weighs less; the median of 5 calls).
`--root DIR` measures another checkout's PythonTool with the same code, e.g. `git archive <commit> | tar -x -C
DIR` of main; several roots are measured in turn, `--rounds` times, each in its own process (a before and an
after in one run, on a machine whose load changes).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100  # Windows: no /proc to read it for
STATS = ("import os, time\nt = time.process_time()\nfor _ in range(50000):\n    os.stat('.')\n"
         "print('NS', int((time.process_time() - t) * 1e9 / 50000))")
PANDAS = "import pandas as pd\nprint(pd.DataFrame({'a': range(1000)}).a.sum())"


def tree_cpu(root: int | None = None) -> float:
    """CPU seconds used so far by `root` (this process by default) and everything under it (live, and reaped by
    the live)."""
    total, queue = 0, [os.getpid() if root is None else root]
    while queue:
        pid = queue.pop()
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += sum(int(v) for v in fields[11:15])  # utime, stime, cutime, cstime
            for tid in os.listdir(f"/proc/{pid}/task"):
                queue += [int(p) for p in Path(f"/proc/{pid}/task/{tid}/children").read_text().split()]
        except (OSError, IndexError, ValueError):
            continue
    return total / TICK


def timed(tool: Any, code: str) -> float:
    start = time.perf_counter()
    out = tool.run(code=code)
    took = time.perf_counter() - start
    assert "Exit status 0" in out, out
    return took


def ms(values: list[float]) -> str:
    p90 = statistics.quantiles(values, n=10)[-1] if len(values) >= 10 else max(values)
    return f"{statistics.median(values) * 1000:7.1f} ms ({p90 * 1000:.1f})"


def measure(make: Any, backend: str, tasks: int, calls: int, tmp: Path, pandas: bool) -> None:
    """Print one backend's lines."""
    first_ever = timed(make(tmp / f"{backend}-0", backend), "print(1)")
    walls: list[float] = []
    cpu = tree_cpu()
    for n in range(tasks):
        time.sleep(0.05)  # a model call comes before a task's first python call: the server is idle a moment
        tool = make(tmp / f"{backend}-{n + 1}", backend)
        walls.append(timed(tool, "print(1)"))
        close(tool)
    first_cpu = (tree_cpu() - cpu) / tasks
    tool = make(tmp / f"{backend}-later", backend)
    timed(tool, "print(1)")
    later: list[float] = []
    cpu = tree_cpu()
    for _ in range(calls):
        later.append(timed(tool, "print(1)"))
    later_cpu = (tree_cpu() - cpu) / calls
    stat_ns = statistics.median(int(tool.run(code=STATS).split("NS ")[1].split()[0]) for _ in range(5))
    close(tool)
    print(f"  {backend:9s} run's first call {first_ever * 1000:.0f} ms | task's first call {ms(walls)}, "
          f"CPU {first_cpu * 1000:.1f} ms | later calls {ms(later)}, CPU {later_cpu * 1000:.2f} ms | "
          f"os.stat in a call {stat_ns:.0f} ns of CPU")
    if pandas:
        rows = []
        for n in range(3):
            tool = make(tmp / f"{backend}-pandas-{n}", backend)
            rows.append((timed(tool, PANDAS), timed(tool, PANDAS)))
            close(tool)
        print(f"  {'':9s} import pandas + DataFrame: 1st call {ms([r[0] for r in rows])}, "
              f"2nd call {ms([r[1] for r in rows])} (median of 3 tasks)")


def close(tool: Any) -> None:
    getattr(tool, "close", lambda: None)()


def main() -> int:
    """Measure each backend and print the lines."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=30, help="tasks whose first call is timed (default 30)")
    parser.add_argument("--calls", type=int, default=200, help="later calls of one task (default 200)")
    parser.add_argument("--backends", nargs="+", help="default: none and every sandbox this machine has")
    parser.add_argument("--root", type=Path, nargs="+", default=[Path(__file__).resolve().parent.parent],
                        help="the checkouts whose PythonTool is measured, in turn (default: this one)")
    parser.add_argument("--rounds", type=int, default=1, help="times each checkout is measured (default 1)")
    args = parser.parse_args()
    if len(args.root) > 1 or args.rounds > 1:
        return _in_turn(args)
    measure_root(args.root[0], args.backends, args.tasks, args.calls)
    return 0


def _in_turn(args: argparse.Namespace) -> int:
    """Each root in its own process (a checkout's modules cannot share one), round after round."""
    rest = ["--tasks", str(args.tasks), "--calls", str(args.calls)] + (["--backends", *args.backends]
                                                                       if args.backends else [])
    for n in range(args.rounds):
        for root in args.root:
            print(f"== round {n + 1}", flush=True)
            env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}  # nothing written into the other checkout
            subprocess.run([sys.executable, __file__, "--root", str(root), *rest], env=env, check=True)
    return 0


def measure_root(root: Path, names: list[str] | None, tasks: int, calls: int) -> None:
    """Measure one checkout's PythonTool on each backend and print the lines."""
    sys.path.insert(0, str(root.resolve()))
    from config import Settings
    from tools.python_exec import PythonTool
    from tools.sandbox import SandboxUnavailableError, select

    backends = names or ["none"]
    for name in [] if names else ["landlock", "bwrap"]:
        try:
            if select(name).backend == name:
                backends.append(name)
        except SandboxUnavailableError as exc:
            print(f"{name}: skipped ({exc.reason})")
    try:
        import pandas  # noqa: F401
        pandas_here = True
    except ImportError:
        pandas_here = False
        print("pandas: not installed, its line is skipped (pip install pandas)")

    def make(workspace: Path, backend: str) -> Any:
        return PythonTool(workspace, Settings(sandbox=backend, workspace_budget_mb=1024))

    print(f"{root}: python tool calls, load average {os.getloadavg()[0]:.2f} at the start, "
          "wall median (p90) and CPU per call:")
    with tempfile.TemporaryDirectory() as tmp:
        for backend in backends:
            measure(make, backend, tasks, calls, Path(tmp), pandas_here)
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    sys.exit(main())
