"""What an Inspect sample gives the agent and gets back: its files, its transcript, its metadata.

The coroutines and record_* functions here run on the eval's loop in the sample's context (the agent's worker
thread hands a coroutine over with SampleBinding.on_loop and posts a record_* call with SampleBinding.post,
without waiting), where `sandbox()`, `transcript()` and the sample's message limit are the sample's own.
"""

from __future__ import annotations

import io
import json
import re
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from core.text import truncate_middle
from report.markdown import TaskRecord
from tools.documents.detect import attachment_hint
from tools.safe_open import WorkspacePathError, replace_file

_CITED = re.compile(r"\[\d+\]")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


def sample_files() -> dict[str, str]:
    """The running sample's `files` (name: where it is or its contents); {} for a sample without."""
    from inspect_ai.log._samples import sample_active  # the only reading of a running sample's `files`

    active = sample_active()
    return dict(active.sample.files or {}) if active is not None else {}


async def stage_sample_files(workspace: Path, files: dict[str, str]) -> list[str]:
    """Copy the sample's `files` (sample_files: in its sandbox, local or Docker) into the workspace under their
    own names; the names staged. Without a sandbox, a file's value that is a path on this host is copied from
    there."""
    staged: list[str] = []
    for key, value in files.items():
        name = Path(key).name
        if not name or name in staged:
            continue
        data = await _sample_file(key, value)
        if data is None:
            continue
        try:
            replace_file(workspace, name, io.BytesIO(data))
        except WorkspacePathError:
            continue
        staged.append(name)
    return staged


async def _sample_file(key: str, value: str) -> bytes | None:
    """One file's bytes: from the sample's sandbox, else the host path or the contents the sample gave."""
    from inspect_ai.util import sandbox

    try:
        box = sandbox()
    except (ProcessLookupError, RuntimeError, ValueError):
        box = None
    if box is not None:
        try:
            data = await box.read_file(key, text=False)
            return bytes(data)
        except (FileNotFoundError, PermissionError, IsADirectoryError, UnicodeDecodeError):
            return None
    path = Path(value)
    try:
        return path.read_bytes() if len(value) < 4096 and path.is_file() else value.encode()
    except OSError:
        return None


def sample_prompt(text: str, files: list[str]) -> str:
    """The agent's task: the sample's input word for word, then the files it was given, where its tools read them."""
    if not files:
        return text
    if len(files) == 1:
        name = files[0]
        return f"{text}\n\nAttached file: {name} (in your workspace; {attachment_hint(name)})."
    return f"{text}\n\nAttached files (in your workspace; read_file reads each): {', '.join(files)}."


def record_turn(state: Any, completion: str, model: str) -> None:
    """The agent's reply as the sample's next assistant message (the sample's message limit checks it)."""
    from inspect_ai.model import ChatMessageAssistant

    state.messages.append(ChatMessageAssistant(content=completion or "(empty reply)", model=model or None))


def record_tool_call(state: Any, data: dict[str, Any]) -> None:
    """One tool call of the agent as an Inspect tool event and as the sample's tool message answering its
    assistant turn (or, after no such turn, an observation from the user)."""
    from inspect_ai.model import ChatMessageAssistant, ChatMessageTool, ChatMessageUser
    from inspect_ai.tool import ToolCall

    call_id, name, arguments, observation, error = _tool_event(data)
    last = state.messages[-1] if state.messages else None
    if isinstance(last, ChatMessageAssistant) and not last.tool_calls:
        last.tool_calls = [ToolCall(id=call_id, function=name, arguments=arguments)]
        state.messages.append(ChatMessageTool(content=observation, tool_call_id=call_id, function=name, error=error))
    else:
        state.messages.append(ChatMessageUser(content=f"Observation: {observation}"))


def record_tool_event(data: dict[str, Any]) -> None:
    """One tool call of the agent as an Inspect tool event only (a research's sub-questions run side by side)."""
    _tool_event(data)


def _tool_event(data: dict[str, Any]) -> tuple[str, str, dict[str, Any], str, Any]:
    """The tool event (name, input, observation, error) in the sample's transcript; its id and parts."""
    from inspect_ai.event import ToolEvent
    from inspect_ai.log import transcript
    from inspect_ai.tool import ToolCallError

    name = str(data.get("tool") or "(none)")
    arguments = _json_arguments(data.get("arguments"))
    observation = str(data.get("observation") or "")
    error = None
    if data.get("error"):
        line = _first_error_line(observation)
        error = ToolCallError("parsing", line) if data["error"] == "format" else ToolCallError("unknown", line)
    call_id = f"agent-{uuid.uuid4().hex[:16]}"
    transcript()._event(ToolEvent(id=call_id, function=name, arguments=arguments, result=observation, error=error,
                                  completed=datetime.now(UTC), working_time=float(data.get("duration") or 0.0)))
    return call_id, name, arguments, observation, error


def _json_arguments(arguments: Any) -> dict[str, Any]:
    """A call's arguments as JSON values (a tool given a bare string shows it as `input`)."""
    value = arguments if isinstance(arguments, dict) else {"input": arguments}
    loaded: dict[str, Any] = json.loads(json.dumps(value, default=str))
    return loaded


def _first_error_line(observation: str) -> str:
    lines = [line for line in observation.splitlines() if line.strip()]
    line = next((x for x in lines if x.startswith("Error")), lines[0] if lines else "the call failed")
    return truncate_middle(line, 500)


def agent_metadata(record: TaskRecord, files: list[str], run_id: str) -> dict[str, Any]:
    """state.metadata["agent"] of a react sample: how it ended, its steps, tokens, cost, sources and verdicts."""
    return {"status": record.status, "steps": record.steps, "prompt_tokens": record.prompt_tokens,
            "completion_tokens": record.completion_tokens, "llm_calls": record.llm_calls, "cost": record.cost,
            "seconds": record.seconds, "answer": record.answer, "error": record.error, "sources": record.sources,
            "citations": record.citations, "sourced": record.sourced, "tool_failures": record.tool_failures,
            "notes": record.notes, "files": files, "run": run_id, "workspace": record.workspace}


def short_answer(body: str) -> str:
    """A research report's answer: the first sentence of its text that carries a `[n]` (else its first)."""
    lines = [line.strip() for line in body.splitlines()
             if line.strip() and not line.lstrip().startswith(("#", "|", ">", "```"))]
    sentences = [s.strip().lstrip("-* ").strip() for line in lines for s in _SENTENCE_END.split(line)]
    sentences = [s for s in sentences if s]
    return next((s for s in sentences if _CITED.search(s)), sentences[0] if sentences else "")
