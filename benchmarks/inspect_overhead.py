"""Benchmark: what running the agent as an Inspect solver adds (inspect_agent.py, evals/, providers/inspect_model.py).

Run from the project root: `python benchmarks/inspect_overhead.py [--samples 20]` (needs requirements-inspect.txt;
offline: Inspect's mockllm model, scripted, with each reply's usage counted by the agent's own token estimator).
Prints:
  - the import time of inspect_agent.py once inspect_ai is imported (what `--solver inspect_agent.py@...` adds);
  - the adapter's overhead per model call beyond Inspect's own generate(): the time a call takes as the agent's
    worker thread sees it (InspectBackend.complete) minus the time inside Model.generate (its median and mean);
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


def timed_calls() -> tuple[list[float], list[float]]:
    """Wrap InspectBackend.complete and SampleBinding.on_loop: each model call's seconds beyond Inspect's
    generate() as the worker sees them, and each hand-over to the loop and back (model calls and the tool events
    and turns recorded in the transcript) without the coroutine's own time."""
    from providers import inspect_model

    beyond: list[float] = []
    handover: list[float] = []
    complete, on_loop = inspect_model.InspectBackend.complete, inspect_model.SampleBinding.on_loop

    def timed_complete(self: Any, request: Any) -> Any:
        before, start = self.binding.generate_seconds, time.perf_counter()
        try:
            return complete(self, request)
        finally:
            beyond.append(time.perf_counter() - start - (self.binding.generate_seconds - before))

    def timed_on_loop(self: Any, coro: Any) -> Any:
        box: dict[str, float] = {}

        async def inner() -> Any:
            box["start"] = time.perf_counter()
            try:
                return await coro
            finally:
                box["end"] = time.perf_counter()

        start = time.perf_counter()
        try:
            return on_loop(self, inner())
        finally:
            if "end" in box:
                handover.append((box["start"] - start) + (time.perf_counter() - box["end"]))

    inspect_model.InspectBackend.complete = timed_complete  # type: ignore[method-assign]
    inspect_model.SampleBinding.on_loop = timed_on_loop  # type: ignore[method-assign]
    return beyond, handover


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
    return (f"median {statistics.median(ordered) * 1000:.2f} ms, p95 {ordered[int(len(ordered) * 0.95)] * 1000:.2f} ms"
            f" ({len(ordered)} calls)")


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
        beyond, handover = timed_calls()
        solved = timed_samples()
        model = scripted_model()
        run(2, 2, model, logs)  # warm-up: Inspect's first eval of the process
        for concurrency in (1, 16):
            beyond.clear()
            handover.clear()
            solved.clear()
            wall, log = run(args.samples, concurrency, model, logs)
            print(f"{args.samples} samples at --max-samples {concurrency}: {wall:.2f} s wall")
            outside = [solved[s.id] - s.metadata["agent"]["seconds"] for s in log.samples]
            print(f"  a sample in the solver beyond the agent's own run (run store, files, model and sandbox checks, "
                  f"waiting for the thread): median {statistics.median(outside) * 1000:.0f} ms")
            print(f"  a model call beyond Inspect's generate(): {ms(beyond)}")
            print(f"  of which the hand-over to the eval's loop and back: {ms(handover)} (events included)")
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
