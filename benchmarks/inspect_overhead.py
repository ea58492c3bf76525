"""Benchmark: what running the agent as an Inspect solver adds (inspect_agent.py, evals/, providers/inspect_model.py).

Run from the project root: `python benchmarks/inspect_overhead.py [--samples 20]` (needs requirements-inspect.txt;
offline: Inspect's mockllm model, scripted, with each reply's usage counted by the agent's own token estimator).
Prints:
  - the import time of inspect_agent.py once inspect_ai is imported (what `--solver inspect_agent.py@...` adds);
  - the adapter's overhead per model call beyond Inspect's own generate(): the time a call takes as the agent's
    worker thread sees it (InspectBackend.complete) minus the time inside Model.generate, split into the time the
    eval's loop (one thread serving every sample) spent meanwhile running other samples' work, mostly Inspect's
    own (queueing: it grows with the samples at once), and the rest, the adapter's own cost; and how busy the
    loop was (with a scripted model answering at once, 16 samples keep it busy: see docs/inspect.md);
  - the wall time of a scripted eval of N samples (a python-tool step, then the answer) at --max-samples 1 and
    16, after a warm-up eval (Inspect's first eval in a process sets itself up for ~15 s on a loaded machine);
  - the tokens of such a sample and what they would cost with named models (providers/pricing.py);
  - the install size of what requirements-inspect.txt adds to requirements.txt (from the installed packages'
    RECORD files: every package inspect-ai needs that the agent's own requirements do not).
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

PRICED = ("openai:gpt-4.1-mini", "openai:gpt-5.4-mini", "anthropic:claude-sonnet-5-5", "gemini:gemini-3.8-flash")


def import_time() -> tuple[float, float]:
    """Seconds to import inspect_ai's solver API, then inspect_agent.py on top of it (fresh interpreters, best of 3)."""
    code = (f"import sys, time; sys.path.insert(0, {str(ROOT)!r}); t = time.perf_counter(); import inspect_ai.solver, "
            "inspect_ai.model; a = time.perf_counter(); import inspect_agent; b = time.perf_counter(); "
            "print(a - t, b - a)")
    runs = []
    for _ in range(3):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
        runs.append(tuple(float(x) for x in out.stdout.split()))
    return min(r[0] for r in runs), min(r[1] for r in runs)


def scripted_model() -> Any:
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    from prompt.tokens import TokenEstimator

    estimator = TokenEstimator()

    def reply(messages: list[Any], *_: Any) -> ModelOutput:
        task = next(m.text for m in messages if m.role == "user")
        done = sum(1 for m in messages if m.role == "assistant")
        text = ('Thought: compute it\nAction: python\nAction Input: {"code": "print(6 * 7)"}' if done == 0 else
                "Thought: the tool printed it\nFinal Answer: 42")
        prompt = estimator.tokens([{"role": m.role, "content": m.text} for m in messages])  # type: ignore[misc]
        out = ModelOutput.from_content(model="mockllm/model", content=text)
        out.usage = ModelUsage(input_tokens=prompt, output_tokens=estimator.text_tokens(text),
                               total_tokens=prompt + estimator.text_tokens(text))
        assert task
        return out

    return get_model("mockllm/model", custom_outputs=reply)


class LoopWatch:
    """What the eval's loop runs: each callback's span on the loop thread (asyncio's Handle._run wrapped), the
    Task it steps when it steps one; and each model call's hand-over windows (InspectBackend.complete and
    SampleBinding.on_loop wrapped), so a call's wait is split into the time the loop spent running other work
    meanwhile (other samples' steps and Inspect work, the transcript events posted: queueing, not the adapter's)
    and the rest (the adapter's own: the hand-over, the messages converted, the worker's wake-up)."""

    def __init__(self) -> None:
        import asyncio

        from providers import inspect_model

        self.spans: list[tuple[float, float, int]] = []  # start, end, id of the Task stepped or event posted, else 0
        self.cpu = 0.0  # the loop thread's CPU seconds inside callbacks
        self.calls: list[tuple[float, list[tuple[float, float, int]]]] = []  # beyond generate(); its windows
        self.handovers: list[tuple[float, float, float, float]] = []  # submit, start, end, wake of each on_loop
        self.on = False
        self.local = threading.local()
        run_handle = asyncio.events.Handle._run
        posted_call = getattr(inspect_model.SampleBinding, "_posted", None)
        complete, on_loop = inspect_model.InspectBackend.complete, inspect_model.SampleBinding.on_loop
        watch = self

        def timed_run(handle: Any) -> None:
            if not watch.on:
                return run_handle(handle)  # type: ignore[no-any-return]
            owner = getattr(handle._callback, "__self__", None)
            # A Task's step (one sample's solver or model call) or a sample's posted transcript event: work
            # another call may queue behind; any other callback (the hand-over's own machinery): 0.
            posted = posted_call is not None and getattr(handle._callback, "__func__", None) is posted_call
            task = id(owner) if isinstance(owner, asyncio.Task) else -id(handle) if posted else 0
            start, cpu = time.perf_counter(), time.thread_time()
            try:
                return run_handle(handle)  # type: ignore[no-any-return]
            finally:
                watch.cpu += time.thread_time() - cpu
                watch.spans.append((start, time.perf_counter(), task))

        def timed_complete(self: Any, request: Any) -> Any:
            windows: list[tuple[float, float, int]] = []
            watch.local.windows = windows
            before, start = self.binding.generate_seconds, time.perf_counter()
            try:
                return complete(self, request)
            finally:
                watch.calls.append((time.perf_counter() - start - (self.binding.generate_seconds - before), windows))
                watch.local.windows = None

        def timed_on_loop(self: Any, coro: Any) -> Any:
            box: dict[str, Any] = {}

            async def inner() -> Any:
                box["task"], box["start"] = id(asyncio.current_task()), time.perf_counter()
                try:
                    return await coro
                finally:
                    box["end"] = time.perf_counter()

            submit = time.perf_counter()
            try:
                return on_loop(self, inner())
            finally:
                if "end" in box:
                    wake = time.perf_counter()
                    watch.handovers.append((submit, box["start"], box["end"], wake))
                    windows = getattr(watch.local, "windows", None)
                    if windows is not None:
                        windows += [(submit, box["start"], box["task"]), (box["end"], wake, box["task"])]

        asyncio.events.Handle._run = timed_run  # type: ignore[method-assign,assignment]
        inspect_model.InspectBackend.complete = timed_complete  # type: ignore[method-assign]
        inspect_model.SampleBinding.on_loop = timed_on_loop  # type: ignore[method-assign]

    def start(self) -> None:
        self.spans.clear()
        self.calls.clear()
        self.handovers.clear()
        self.cpu, self.on = 0.0, True

    def queued(self, windows: list[tuple[float, float, int]]) -> float:
        """Seconds within these windows that the loop spent stepping other Tasks than the call's own or running
        posted transcript events."""
        total = 0.0
        for low, high, own in windows:
            for start, end, task in self.spans:
                if task and task != own and end > low and start < high:
                    total += min(end, high) - max(start, low)
        return total

    def report(self, wall: float) -> None:
        self.on = False
        beyond = [b for b, _ in self.calls]
        queued = [self.queued(w) for _, w in self.calls]
        own = [max(0.0, b - q) for b, q in zip(beyond, queued, strict=True)]
        busy = sum(end - start for start, end, _ in self.spans)
        print(f"  a model call beyond Inspect's generate(), as the agent's thread waits: {ms(beyond)}")
        print(f"    of which the loop ran other samples' work meanwhile (queueing, Inspect's own): {ms(queued)}")
        print(f"    the adapter's own (hand-over and back, messages converted, the thread's wake-up): {ms(own)}")
        print(f"  a hand-over to the eval's loop and back, without the coroutine's own time: "
              f"{ms([(s - u) + (w - e) for u, s, e, w in self.handovers])}")
        print(f"  the eval's loop ran callbacks {busy / wall:.0%} of the wall time ({busy:.2f} s; its own CPU "
              f"{self.cpu:.2f} s, the rest waiting for the interpreter lock or the OS)")


def timed_samples() -> dict[Any, float]:
    """Wrap evals.solver.run_react: each sample's seconds in the solver (the agent's own run included), by id."""
    from evals import solver

    seconds: dict[Any, float] = {}
    original = solver.run_react

    async def timed(state: Any, base: Any, options: Any) -> Any:
        start = time.perf_counter()
        try:
            return await original(state, base, options)
        finally:
            seconds[state.sample_id] = time.perf_counter() - start

    solver.run_react = timed  # type: ignore[assignment]
    return seconds


def ms(values: list[float]) -> str:
    ordered = sorted(values)
    return (f"median {statistics.median(ordered) * 1000:.1f} ms, p95 {ordered[int(len(ordered) * 0.95)] * 1000:.1f} ms"
            f" ({len(ordered)})")


def run(samples: int, max_samples: int, model: Any, logs: str) -> tuple[float, Any]:
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import includes

    import inspect_agent

    task = Task(dataset=[Sample(input=f"What is 6*7? (#{n})", target="42") for n in range(samples)],
                solver=inspect_agent.react_agent(tools="python"), scorer=includes())
    start = time.perf_counter()
    log = eval(task, model=model, log_dir=logs, display="none", max_samples=max_samples)[0]
    wall = time.perf_counter() - start
    assert log.status == "success" and all(s.scores["includes"].value == "C" for s in log.samples), log.error
    return wall, log


def requirement_names(path: Path) -> list[str]:
    names = []
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line and not line.startswith("-"):
            names.append(re.split(r"[<>=!~\[; ]", line)[0])
    return names


def closure(names: list[str]) -> set[str]:
    """The installed distributions these need, themselves included (normalised names)."""
    todo, seen = [n.lower().replace("_", "-") for n in names], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue
        seen.add(name)
        for req in dist.requires or []:
            if "extra ==" in req:
                continue
            todo.append(re.split(r"[<>=!~\[; (]", req)[0].lower().replace("_", "-"))
    return seen


def install_size() -> tuple[int, int]:
    """Bytes and packages that requirements-inspect.txt installs beyond requirements.txt's closure."""
    added = closure(requirement_names(ROOT / "requirements-inspect.txt")) - closure(
        requirement_names(ROOT / "requirements.txt"))
    total = 0
    for name in added:
        dist = md.distribution(name)
        for file in dist.files or []:
            path = Path(str(dist.locate_file(file)))
            if path.is_file():
                total += path.stat().st_size
    return total, len(added)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=20)
    args = parser.parse_args()
    os.environ.setdefault("AGENT_SEARCH", "0")
    os.environ.setdefault("AGENT_PAPERS", "off")
    base, own = import_time()
    print(f"import: inspect_ai.solver + model {base * 1000:.0f} ms; inspect_agent.py on top {own * 1000:.0f} ms")
    from providers.pricing import cost_usd

    with tempfile.TemporaryDirectory() as runs:
        os.environ["AGENT_RUNS_DIR"] = runs
        logs = str(Path(runs) / "logs")
        watch = LoopWatch()
        solved = timed_samples()
        model = scripted_model()
        run(2, 2, model, logs)  # warm-up: Inspect's first eval of the process
        for concurrency in (1, 16):
            solved.clear()
            watch.start()
            wall, log = run(args.samples, concurrency, model, logs)
            print(f"{args.samples} samples at --max-samples {concurrency}: {wall:.2f} s wall")
            outside = [solved[s.id] - s.metadata["agent"]["seconds"] for s in log.samples]
            print(f"  a sample in the solver beyond the agent's own run (run store, files, model and sandbox checks, "
                  f"waiting for the thread): median {statistics.median(outside) * 1000:.0f} ms")
            watch.report(wall)
        agent = log.samples[0].metadata["agent"]
        prompt, completion = agent["prompt_tokens"], agent["completion_tokens"]
        print(f"a sample (one python step, then the answer): {prompt} prompt + {completion} completion tokens")
        for spec in PRICED:
            cost = cost_usd(spec, prompt, completion)
            print(f"  {spec}: ${cost:.5f} per sample" if cost is not None else f"  {spec}: no price")
    size, count = install_size()
    print(f"install: requirements-inspect.txt adds {count} packages, {size / 1e6:.0f} MB")


if __name__ == "__main__":
    main()
