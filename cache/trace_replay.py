"""--replay-trace: re-run one task with the completions its trace recorded, and say where the run diverges."""

from __future__ import annotations

import argparse
import dataclasses
import json
import threading
from pathlib import Path
from typing import Any

from cache.model import nearest_difference
from config import Settings
from core.chat import Completion, Message
from core.errors import ConfigError, TaskStopError

DEFAULT_REPORT = Path("results.md")


class TraceReplayExhaustedError(TaskStopError):
    """The new run asked for more model calls than the trace recorded (the task ends with status error)."""


def read_trace_calls(path: Path) -> list[dict[str, Any]]:
    """The model calls (llm_call and summary events) of a trace file, in order; ConfigError if unreadable."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigError(f"cannot read trace {path}: {exc.strerror}", "replay_trace") from exc
    calls = []
    for number, line in enumerate(lines, 1):
        try:
            event = json.loads(line)
        except ValueError as exc:
            raise ConfigError(f"trace {path} line {number} is not JSON", "replay_trace") from exc
        if isinstance(event, dict) and event.get("kind") in ("llm_call", "summary"):
            calls.append(event)
    if not calls:
        raise ConfigError(f"trace {path} records no model call", "replay_trace")
    return calls


class TraceReplay:
    """A ChatModel that answers with a trace's recorded completions in order, noting the first divergence."""

    def __init__(self, path: Path, calls: list[dict[str, Any]], tasks: list[Any], model: str) -> None:
        self.path, self.calls, self.tasks, self.model = path, calls, tasks, model
        self.position = 0
        self.divergence: str | None = None
        self._lock = threading.Lock()

    @classmethod
    def start(cls, args: argparse.Namespace, tasks: list[Any], llm: Any) -> TraceReplay:
        """Load args.replay_trace and pick its task (by the trace's name, else by the task text it sent)."""
        path = Path(args.replay_trace)
        calls = read_trace_calls(path)
        opening = json.dumps(calls[0].get("messages", []), ensure_ascii=False)
        task = next((t for t in tasks if t.id == path.stem), None) or next(
            (t for t in tasks if json.dumps(t.text, ensure_ascii=False)[1:-1] in opening), None)
        if task is None:
            raise ConfigError(f"no task in {args.tasks} matches trace {path.name} (by id or by text)", "replay_trace")
        if args.output == DEFAULT_REPORT:  # never over the run's own report
            args.output = path.with_name(f"{path.stem}.replay.md")
        return cls(path, calls, [task], str(calls[0].get("model") or getattr(llm, "model", "")))

    def adjust(self, settings: Settings) -> Settings:
        """The new trace goes to a replayed/ folder beside the old one, which is never overwritten."""
        if not settings.traces:
            return settings
        return dataclasses.replace(settings, trace_dir=self.path.parent / "replayed")

    def complete(self, messages: list[Message], stop: list[str] | None = None,
                 max_tokens: int | None = None, temperature: float | None = None) -> Completion:
        """The next recorded completion; the first call whose messages differ is remembered."""
        with self._lock:
            n = self.position
            self.position += 1
            if n >= len(self.calls):
                self._diverge(f"model call {n + 1}: the new run makes more model calls than the "
                              f"{len(self.calls)} recorded")
                raise TraceReplayExhaustedError(f"--replay-trace: the trace has no model call {n + 1}")
            recorded = self.calls[n]
            if recorded.get("messages") != [dict(m) for m in messages]:
                self._diverge(f"step {recorded.get('step')} (model call {n + 1}, {recorded['kind']}): "
                              + nearest_difference([recorded], messages))
        cost = recorded.get("cost")
        return Completion(text=str(recorded.get("completion", "")), finish_reason=recorded.get("finish_reason"),
                          prompt_tokens=int(recorded.get("prompt_tokens") or 0),
                          completion_tokens=int(recorded.get("completion_tokens") or 0),
                          model=str(recorded.get("model") or self.model), cost=0.0, cached=True,
                          original_cost=cost if isinstance(cost, int | float) else None)

    def _diverge(self, where: str) -> None:
        if self.divergence is None:
            self.divergence = where

    @property
    def diverged(self) -> bool:
        """Whether the new run differed from the trace (different prompts or a different number of calls)."""
        return self.divergence is not None or self.position != len(self.calls)

    def verdict(self) -> list[str]:
        """The line the CLI prints after the run."""
        if self.divergence is not None:
            return [f"replay-trace: the run diverges from {self.path.name} at {self.divergence}"]
        if self.position < len(self.calls):
            return [f"replay-trace: the run ended after {self.position} model calls; {self.path.name} recorded "
                    f"{len(self.calls)} (the first {self.position} matched)"]
        return [f"replay-trace: no divergence: all {len(self.calls)} recorded model calls matched"]
