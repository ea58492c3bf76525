"""`main.py ask` and `main.py chat`: questions asked by hand, steps shown as they happen, answers on stdout."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any, TextIO

from config import Settings
from core.errors import TaskFileError
from core.text import money, report_safe, terminal_safe
from report.markdown import DONE_STATUSES, TaskRecord
from report.sources import (
    RETRACTED,
    WITHOUT_SOURCES,
    WITHOUT_SOURCES_NOTE,
    claim_text,
    reason,
    verdict_label,
    verdict_mark,
    without_sources,
)
from run.conversation import STOPPED, Conversation, StepEvent
from run.estimate import estimate
from run.stopping import Stopper
from run.store import RunStore
from sources.check import FAILING, claims_line
from sources.ledger import titled
from telemetry.setup import start_tracing

with contextlib.suppress(ImportError):  # not on every platform
    import readline  # noqa: F401  (chat's prompt gets line editing and history through input())

EXIT_OK, EXIT_NOT_ANSWERED = 0, 1
LINE_CHARS = 240  # a step's line on stderr is cut here: the trace keeps it whole
STOP_ANSWER = "stopping this answer at its next step (press Ctrl-C again to quit at once)"
CHAT_HELP = ("Ask a question, or: /sources (sources read so far), /cost (spent so far), /save FILE (the "
             "transcript as Markdown), /exit. Ctrl-C stops the current answer; Ctrl-D or /exit leaves.")


def step_printer(stream: TextIO) -> Callable[[StepEvent], None]:
    """Print each thought, action (with its input) and observation as it happens, one short line each."""

    def show(event: StepEvent) -> None:
        if event.kind == "thought" and event.text:
            line = f"  {event.step}. thought: {event.text}"
        elif event.kind == "action":
            args = event.arguments if isinstance(event.arguments, str) else json.dumps(event.arguments,
                                                                                       ensure_ascii=False)
            line = f"  {event.step}. {event.tool} {args}"
        elif event.kind == "observation":
            line = f"     → {event.text}"
        elif event.kind in ("summary", "notice"):
            line = f"  ({event.text})"
        else:
            return
        line = terminal_safe(" ⏎ ".join(line.rstrip().splitlines()), one_line=True)
        whole = len(line) <= LINE_CHARS or event.kind == "notice"  # a warning's fix is not cut off
        print(line if whole else line[:LINE_CHARS - 1] + "…", file=stream, flush=True)

    return show


def answer_text(r: TaskRecord, earlier_sources: bool = False) -> str:
    """The answer and its numbered sources as stdout shows them (control characters shown escaped); an answer
    given without reading anything is marked, as the batch marks it, unless earlier questions of the
    conversation read sources its prompt carries (`earlier_sources`)."""
    why = f": {r.error}" if r.error and r.status != STOPPED else ""  # a stopped one: the user knows why
    missing = f"(no answer: {r.status}{why})"
    lines = [terminal_safe(r.answer.strip() if r.answer else missing)]
    read = [s for s in r.sources if s.get("read", True)]
    if read:
        lines += ["", "Sources:"] + [source_line(s) for s in read]
    elif not earlier_sources and without_sources(r.sourced, r.status in DONE_STATUSES):
        lines += ["", f"⚠ {WITHOUT_SOURCES}: {WITHOUT_SOURCES_NOTE}"]
    if r.citations:  # the check of its claims: the counts, then each failing one with why, and each citing a
        lines += ["", f"Citations: {claims_line(r.citations)}"]  # retracted paper, whatever its verdict
        lines += [terminal_safe(f"{verdict_mark(str(c['verdict']))} {verdict_label(str(c['verdict']))} "
                                f"[{c.get('n') or c.get('url')}] {claim_text(c)} — {reason(c)}".rstrip(" —")
                                + (f" — {RETRACTED}: {c['retracted']}" if c.get("retracted") else ""),
                                one_line=True)
                  for c in r.citations if c.get("verdict") in FAILING or c.get("retracted")]
    return "\n".join(lines)


def source_line(s: dict[str, Any], where: str = "") -> str:
    """`[n] title — url` on one line, control characters shown escaped (a page names its own title)."""
    return terminal_safe(f"[{s.get('n')}] {titled(str(s.get('title') or ''), str(s.get('url')))}{where}",
                         one_line=True)


def _ask_once(conv: Conversation, question: str, files: list[Path], quiet: bool) -> TaskRecord:
    """One question with Ctrl-C stopping it (a second Ctrl-C quits at once); its record."""
    with Stopper(STOP_ANSWER) as stopper:
        printer = None if quiet else step_printer(sys.stderr)
        return conv.ask(question, files, on_event=printer, stop=stopper.event).record


@contextlib.contextmanager
def conversation(settings: Settings, kind: str) -> Iterator[Conversation]:
    """A conversation in the run store; with an OTLP endpoint, one trace whose task spans are its questions."""
    tracing = start_tracing(settings)
    try:
        conv = Conversation(settings, RunStore.from_settings(settings), kind=kind, tracing=tracing)
        for note in conv.budget.notes() if conv.budget else []:  # a cost cap no price lets it enforce
            print(note, file=sys.stderr)
        if tracing is not None:
            tracing.start_run(conv.spec, 0)
        yield conv
    finally:
        if tracing is not None:
            tracing.shutdown()  # every span sent before the command returns, also after Ctrl-C


def ask(args: argparse.Namespace, settings: Settings) -> int:
    """`main.py ask QUESTION`: answer and sources (or --json, the record) on stdout; 0 when answered. A question
    that got no answer says why on stderr (so `ask ... > answer.txt` never saves a failure as an answer)."""
    files = [Path(f) for f in args.files or ()]
    for f in files:
        if not f.is_file():
            raise TaskFileError(f, "no such file (--file)")
    if args.estimate:
        return print_estimate(settings)
    with conversation(settings, "ask") as conv:
        record = _ask_once(conv, args.question, files, args.quiet)
    if args.json:
        print(json.dumps({"run": conv.id, **asdict(record)}, ensure_ascii=False, indent=1))
    elif record.answer:
        print(answer_text(record))
    if not args.json and record.status not in DONE_STATUSES:  # no answer, or one from a limit: why, on stderr
        why = terminal_safe(f": {record.error}") if record.error else ""  # the error may quote a page or the model
        print(answer_text(record) if not record.answer else f"(a best-effort answer: {record.status}{why})",
              file=sys.stderr)
    if not args.quiet:
        print(f"run {conv.id} kept in {conv.run.dir if conv.run else '?'}", file=sys.stderr)
    if record.status == STOPPED:
        return 130
    return EXIT_OK if record.status in DONE_STATUSES else EXIT_NOT_ANSWERED


def chat(args: argparse.Namespace, settings: Settings) -> int:
    """`main.py chat`: questions line by line (a terminal or piped stdin) until /exit or end of input."""
    if args.estimate:
        return print_estimate(settings)
    with conversation(settings, "chat") as conv:
        return _chat(conv, args)


def print_estimate(settings: Settings) -> int:
    """--estimate: the model, its price and a question's expected and worst-case cost; no model is called."""
    print("\n".join(estimate(1, settings, noun="question").lines()))
    return EXIT_OK


def _chat(conv: Conversation, args: argparse.Namespace) -> int:
    """The chat loop over one conversation."""
    tty = sys.stdin.isatty()
    if tty and not args.quiet:
        print(CHAT_HELP, file=sys.stderr)
    while True:
        line = _read_line(tty)
        if line is None:
            break
        line = line.strip()
        if not line:
            continue
        if line.startswith("/"):
            if not _command(conv, line):
                break
            continue
        earlier = bool(conv.sources())  # a follow-up's prompt carries them: it may answer from them
        print(answer_text(_ask_once(conv, line, [], args.quiet), earlier), flush=True)
        print(flush=True)
    if conv.id and not args.quiet:
        print(f"conversation {conv.id} kept in {conv.run.dir if conv.run else '?'}", file=sys.stderr)
    return EXIT_OK


def _read_line(tty: bool) -> str | None:
    """The next line; None at end of input. Ctrl-C between questions does not end the session."""
    while True:
        try:
            if not tty:
                return sys.stdin.readline() or None
            return input("? ")
        except EOFError:
            print(file=sys.stderr)
            return None
        except KeyboardInterrupt:
            print("\n(no answer is running; Ctrl-D or /exit leaves)", file=sys.stderr, flush=True)


def _command(conv: Conversation, line: str) -> bool:
    """Run a /command; False when the session should end."""
    name, _, rest = line.partition(" ")
    if name in ("/exit", "/quit"):
        return False
    if name == "/sources":
        sources = conv.sources()
        print("\n".join(source_line(s, f" (question {s['turn']})") for s in sources) or "no sources read yet",
              flush=True)
    elif name == "/cost":
        cost = conv.cost()
        print(f"{money(cost)}{' (a price is unknown)' if cost is None else ''} over {len(conv.turns)} "
              "question(s)", flush=True)
    elif name == "/save" and rest.strip():
        path = Path(rest.strip()).expanduser()
        try:
            path.write_text(report_safe(conv.transcript_markdown()), encoding="utf-8")
            print(f"saved {path}", flush=True)
        except OSError as exc:
            print(f"cannot save {path}: {exc.strerror}", file=sys.stderr, flush=True)
    elif name == "/save":
        print("/save needs a file name: /save FILE", file=sys.stderr, flush=True)
    else:  # /help, or a command there is none of
        unknown = "" if name == "/help" else f"unknown command {terminal_safe(name, one_line=True)}. "
        print(unknown + CHAT_HELP, file=sys.stderr, flush=True)
    return True
