"""Benchmark: tasks per minute with threads on one node against --executor ray on one and two local nodes.

Run from the project root: `python benchmarks/cluster.py` (needs requirements-ray.txt; `--help` for options).
Every task is one model call to a loopback OpenAI-compatible server answering after `--latency` seconds,
at the same `--concurrency` everywhere (two nodes get half the CPUs each). The rate is measured at the
model server, from the first request to the last reply, so start-up (Python, Ray's connection, the nodes'
key check, worker processes) is left out and printed apart. The driver's overhead per task is the time
each of the `--concurrency` slots loses per task beyond the model's latency.
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.fakes.loopback import LoopbackServer  # noqa: E402 (needs the root on sys.path)
from tests.fakes.ray_cluster import (  # noqa: E402
    LocalCluster,
    NumberModel,
    clean_env,
    number_tasks,
    ray_available,
    remove_tree,
    short_temp_dir,
)

KEY = "sk-benchmark"


def run_batch(work: Path, url: str, count: int, concurrency: int, address: str | None) -> float:
    """Seconds main.py takes for `count` tasks (threads when address is None)."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "tasks.txt").write_text(number_tasks(count), encoding="utf-8")
    env = clean_env(work / "home", OPENAI_API_KEY=KEY, AGENT_ENV_FILE=str(work / "no.env"))
    cmd = [sys.executable, str(ROOT / "main.py"), "tasks.txt", "-o", "results.md", "--model", "openai:gpt-x",
           "--base-url", url + "/v1", "--no-search", "--no-trace", "--no-html", "-q", "--concurrency", str(concurrency)]
    if address:
        cmd += ["--executor", "ray", "--ray-address", address]
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=1800)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"the run failed ({done.returncode}): {done.stderr[-2000:]}")
    return seconds


@contextmanager
def no_cluster(root: Path, concurrency: int) -> Iterator[str | None]:
    """Threads: no cluster."""
    yield None


def cluster(nodes: int) -> Callable[[Path, int], AbstractContextManager[str | None]]:
    """A LocalCluster of `nodes` nodes sharing `concurrency` CPUs."""

    @contextmanager
    def start(root: Path, concurrency: int) -> Iterator[str | None]:
        with LocalCluster(root, env={"OPENAI_API_KEY": KEY}, workers=nodes - 1,
                          cpus=max(concurrency // nodes, 1)) as c:
            yield c.address

    return start


def main() -> None:
    """Print one line per setup."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", type=int, default=100)
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--latency", type=float, default=0.5, help="seconds the fake model takes per call")
    args = p.parse_args()
    if reason := ray_available():
        raise SystemExit(reason)
    ideal = math.ceil(args.tasks / args.concurrency) * args.latency
    print(f"{args.tasks} tasks, one model call each at {args.latency} s, concurrency {args.concurrency}: "
          f"ideally {ideal:.1f} s, {args.tasks / ideal * 60:.0f} tasks/min")
    print(f"{'setup':<14}{'run':>8}{'start-up':>10}{'tasks':>8}{'tasks/min':>11}{'overhead/task':>15}")
    root = short_temp_dir()
    try:
        model = NumberModel(latency=args.latency)
        with LoopbackServer(model) as server:
            for name, setup in (("threads", no_cluster), ("ray, 1 node", cluster(1)), ("ray, 2 nodes", cluster(2))):
                with setup(root / name.replace(" ", "").replace(",", ""), args.concurrency) as address:
                    model.arrivals.clear()
                    begun = time.monotonic()
                    total = run_batch(root / "run", server.url, args.tasks, args.concurrency, address)
                span = model.arrivals[-1] + args.latency - model.arrivals[0]
                overhead = (span - ideal) * args.concurrency / args.tasks * 1000
                print(f"{name:<14}{total:>7.1f}s{model.arrivals[0] - begun:>9.1f}s{span:>7.1f}s"
                      f"{args.tasks / span * 60:>11.0f}{overhead:>12.0f} ms")
    finally:
        remove_tree(root)


if __name__ == "__main__":
    main()
