"""Benchmark: the agent's own cost per step with an instant scripted model and a no-op tool.

Run from the project root: `python benchmarks/overhead.py` (add `--help` for the options).
Prints microseconds per step (wall, and the process's CPU time: on a machine other jobs load, the CPU time is
the steadier figure) and peak traced memory for the project's memory (with its running
summaries) and for a full-history memory, the same script through smolagents' ToolCallingAgent when
smolagents is installed (benchmarks/requirements.txt), and the wall time of `python main.py --help`.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

ACTION = 'Thought: keep going\nAction: noop\nAction Input: {}'
MemoryChoice = Callable[[Any], Callable[[], Any]]  # model -> memory factory
SUMMARY = "Facts found: none.\nSources visited: none.\nFailed attempts: none.\nStill to find: all."


@dataclass
class Measure:
    """One benchmark row."""

    name: str
    steps: int
    seconds: float
    cpu_seconds: float
    peak_bytes: int | None = None
    note: str = ""

    @property
    def us_per_step(self) -> float:
        """Wall microseconds per tool step."""
        return self.seconds / max(self.steps, 1) * 1e6

    @property
    def cpu_us_per_step(self) -> float:
        """The process's CPU microseconds (all its threads) per tool step."""
        return self.cpu_seconds / max(self.steps, 1) * 1e6


class InstantModel:
    """Answers every agent call with a no-op tool call at once, and the final call with an answer."""

    def __init__(self) -> None:
        self.calls = 0
        self.summaries = 0

    def complete(self, messages: list[Any], stop: list[str] | None = None, max_tokens: int | None = None,
                 temperature: float | None = None) -> Any:
        """A Completion with fixed usage; summary requests (sent without stop sequences) get notes."""
        from agent import FINISH_NOTE
        from core.chat import Completion

        if stop is None:
            self.summaries += 1
            text = SUMMARY
        else:
            self.calls += 1
            text = "Thought: done\nFinal Answer: done" if FINISH_NOTE in messages[-1]["content"] else ACTION
        return Completion(text, "stop", prompt_tokens=40 * len(messages), completion_tokens=12,
                          model="instant", cost=0.0)


def _noop_tool() -> Any:
    from tools.base import tool

    @tool
    def noop() -> str:
        """Do nothing and say so."""
        return "ok"

    return noop


def project_memory(workspace: Path) -> MemoryChoice:
    """The memory a real run uses (budget and running summaries from the default settings)."""
    from config import Settings
    from prompt.memory import memory_for_task

    return lambda model: lambda: memory_for_task(Settings(), model, workspace, "openai:instant")


def full_history(workspace: Path) -> MemoryChoice:
    """A memory with a budget too large to ever fold or drop a step: every step stays in the prompt."""
    from prompt.memory import Memory

    return lambda model: lambda: Memory(budget_tokens=10**12, workspace=workspace)


def run_ours(steps: int, memory: MemoryChoice, trace_memory: bool) -> tuple[float, float, int | None, InstantModel]:
    """Wall and CPU seconds for one task of `steps` tool steps, and the peak traced memory when asked."""
    from agent import MAX_STEPS, ReActAgent

    model = InstantModel()
    agent = ReActAgent(model, [_noop_tool()], max_steps=steps, time_limit=None, memory_factory=memory(model))
    results: list[Any] = []
    seconds, cpu, peak = _timed(lambda: results.append(agent.run("Call noop until you are told to stop.")),
                                trace_memory)
    result = results[0]
    if result.status != MAX_STEPS or result.answer != "done" or model.calls != steps + 1:
        raise RuntimeError(f"the script went wrong: {result.status}, {model.calls} calls for {steps} steps")
    return seconds, cpu, peak, model


def _timed(work: Callable[[], Any], trace_memory: bool) -> tuple[float, float, int | None]:
    gc.collect()
    if trace_memory:
        tracemalloc.start()
    started, cpu = time.perf_counter(), time.process_time()
    work()
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    peak = None
    if trace_memory:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return seconds, cpu, peak


def measure_ours(name: str, steps: int, memory: MemoryChoice) -> Measure:
    """Time without tracing (tracemalloc slows Python down), then trace the peak in a second run."""
    run_ours(5, memory, trace_memory=False)  # warm-up: first-call imports and caches are not per-step cost
    seconds, cpu, _, model = run_ours(steps, memory, trace_memory=False)
    _, _, peak, _ = run_ours(steps, memory, trace_memory=True)
    note = f"{model.summaries} summary calls" if model.summaries else "no summaries"
    return Measure(name, steps, seconds, cpu, peak, note)


def measure_smolagents(steps: int) -> Measure | None:
    """smolagents' ToolCallingAgent on the same script; None when smolagents is not installed."""
    try:
        import smolagents
    except ImportError:
        return None
    _run_smolagents(5)  # warm-up, as for ReActAgent
    seconds, cpu, _ = _timed(lambda: _run_smolagents(steps), trace_memory=False)
    _, _, peak = _timed(lambda: _run_smolagents(steps), trace_memory=True)
    return Measure(f"smolagents {smolagents.__version__} ToolCallingAgent", steps, seconds, cpu, peak)


def _run_smolagents(steps: int) -> None:
    from smolagents import Tool, ToolCallingAgent
    from smolagents.models import ChatMessage, MessageRole, Model
    from smolagents.models import ChatMessageToolCall as Call
    from smolagents.models import ChatMessageToolCallFunction as Function
    from smolagents.monitoring import LogLevel, TokenUsage

    class Noop(Tool):  # type: ignore[misc]
        name, description, output_type = "noop", "Do nothing and say so.", "string"
        inputs: dict[str, Any] = {}

        def forward(self) -> str:
            return "ok"

    class Scripted(Model):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__(model_id="instant")
            self.calls = 0

        def generate(self, messages: list[Any], stop_sequences: list[str] | None = None,
                     response_format: Any = None, tools_to_call_from: list[Any] | None = None,
                     **kwargs: Any) -> ChatMessage:
            self.calls += 1
            name, args = ("noop", {}) if self.calls <= steps else ("final_answer", {"answer": "done"})
            call = Call(Function(args, name), f"call_{self.calls}", "function")
            return ChatMessage(MessageRole.ASSISTANT, "", [call],
                               token_usage=TokenUsage(input_tokens=40 * len(messages), output_tokens=12))

    model = Scripted()
    agent = ToolCallingAgent(tools=[Noop()], model=model, max_steps=steps + 5, verbosity_level=LogLevel.OFF)
    if agent.run("Call noop until you are told to stop.") != "done" or model.calls != steps + 1:
        raise RuntimeError(f"smolagents went off script: {model.calls} calls for {steps} steps")


def cli_startup(runs: int = 5) -> list[float]:
    """Wall seconds of `python main.py --help`, one fresh interpreter per run."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, str(ROOT / "main.py"), "--help"], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - started)
    return times


def bare_python(runs: int = 5) -> list[float]:
    """Wall seconds of `python -c pass`, the floor under any CLI's startup."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append(time.perf_counter() - started)
    return times


def print_table(title: str, rows: list[Measure]) -> None:
    """One Markdown table of measurements."""
    print(f"\n### {title}\n")
    print("| agent / memory | steps | total s | µs per step | CPU µs per step | peak traced MiB | note |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for r in rows:
        peak = "n/a" if r.peak_bytes is None else f"{r.peak_bytes / 2**20:.1f}"
        print(f"| {r.name} | {r.steps:,} | {r.seconds:.2f} | {r.us_per_step:,.0f} | {r.cpu_us_per_step:,.0f} | {peak} "
              f"| {r.note} |")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmarks and print the tables."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=2000, help="tool steps of the long run (default 2000)")
    p.add_argument("--compare-steps", type=int, default=500,
                   help="tool steps of the side-by-side run with smolagents (default 500)")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="overhead-") as tmp:
        ws = Path(tmp)
        print_table(f"ReActAgent, one task of {args.steps:,} no-op steps", [
            measure_ours("ReActAgent, project memory (default budget)", args.steps, project_memory(ws)),
            measure_ours("ReActAgent, full history (no budget)", args.steps, full_history(ws)),
        ])
        ours = measure_ours("ReActAgent, full history (no budget)", args.compare_steps, full_history(ws))
        mine = measure_ours("ReActAgent, project memory", args.compare_steps, project_memory(ws))
    smol = measure_smolagents(args.compare_steps)
    rows = [ours, mine] + ([smol] if smol else [])
    print_table(f"Side by side, one task of {args.compare_steps:,} no-op steps", rows)
    if smol is None:
        print("\nsmolagents is not installed: `pip install -r benchmarks/requirements.txt` to compare.")
    else:
        print(f"\nsmolagents / ReActAgent time per step: {smol.us_per_step / ours.us_per_step:.1f}x "
              f"(full history), {smol.us_per_step / mine.us_per_step:.1f}x (project memory); CPU time: "
              f"{smol.cpu_us_per_step / ours.cpu_us_per_step:.1f}x, {smol.cpu_us_per_step / mine.cpu_us_per_step:.1f}x")
    startup, floor = cli_startup(), bare_python()
    print("\n### CLI startup (median of 5)\n")
    print("| command | median s | min s | max s |\n|---|---:|---:|---:|")
    for name, times in (("python main.py --help", startup), ("python -c pass", floor)):
        print(f"| `{name}` | {statistics.median(times):.3f} | {min(times):.3f} | {max(times):.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
