"""`main.py runs`: list the kept runs or prune old ones; `main.py report RUN` finds a run's records and traces."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from datetime import timedelta
from pathlib import Path

from config import load_settings
from core.cli import ArgumentParser
from core.errors import ConfigError
from core.text import money, parse_age, terminal_safe
from report.html.cli import main as report_main
from report.html.research import rebuild as rebuild_research
from run.store import Run, RunStore


def _store(runs_dir: Path | None) -> RunStore:
    settings = load_settings({"runs_dir": runs_dir})
    return RunStore.from_settings(settings)


def build_parser() -> argparse.ArgumentParser:
    """Flags of `main.py runs` and `main.py runs prune`."""
    p = ArgumentParser(prog="main.py runs", description="List the runs kept in the run store "
                       "(newest first), or prune old runs' traces and workspaces.")
    p.add_argument("--runs-dir", type=Path, metavar="DIR", help="the run store (default: AGENT_RUNS_DIR or runs/)")
    p.add_argument("--json", action="store_true", help="print each run's index entry as a JSON line")
    p.add_argument("-n", "--limit", type=int, default=50, metavar="N", help="show the newest N runs (default 50)")
    return p


def prune_parser() -> argparse.ArgumentParser:
    """Flags of `main.py runs prune`."""
    p = ArgumentParser(prog="main.py runs prune", description="Remove the traces and workspaces of "
                       "finished runs started before the given age; their records and index stay.")
    p.add_argument("--older-than", required=True, metavar="AGE", help="e.g. 30d, 12h, 2w")
    p.add_argument("--runs-dir", type=Path, metavar="DIR", help="the run store (default: AGENT_RUNS_DIR or runs/)")
    return p


def main(argv: list[str]) -> int:
    """Run `runs` or `runs prune`; exit 0."""
    if argv[:1] == ["prune"]:
        return prune(prune_parser().parse_args(argv[1:]))
    args = build_parser().parse_args(argv)
    runs = _store(args.runs_dir).list_runs()[: max(args.limit, 0)]
    if args.json:
        for r in runs:
            print(json.dumps({**asdict(r.info), "dir": str(r.dir)}, ensure_ascii=False))
        return 0
    if not runs:
        print(f"no runs kept in {_store(args.runs_dir).root} yet")
        return 0
    print(f"{'id':<22} {'when (UTC)':<16} {'kind':<8} {'status':<8} {'answered':>9} {'cost':>9}  task file / question"
          "  →  outputs")
    for r in runs:
        print(run_line(r))
    return 0


def run_line(r: Run) -> str:
    """One run as `main.py runs` lists it (run.json is stored text: control characters shown escaped)."""
    i = r.info
    status = "died" if i.status == "running" and r.ended else i.status  # its process is gone without a word
    title = i.title if len(i.title) <= 60 else i.title[:59] + "…"
    outputs = ", ".join(i.outputs) or str(r.records if r.records.is_file() else r.dir)
    return terminal_safe(f"{i.id:<22} {r.started:%Y-%m-%d %H:%M} {i.kind:<8} {status:<8} "
                         f"{f'{i.answered}/{i.tasks}':>9} {money(i.cost):>9}  {title}  →  {outputs}", one_line=True)


def prune(args: argparse.Namespace) -> int:
    """Remove old runs' traces and workspaces."""
    try:
        age = timedelta(seconds=parse_age(args.older_than))
    except ValueError as exc:
        raise ConfigError(f"--older-than: {exc}", "older_than") from exc
    pruned = _store(args.runs_dir).prune(age)
    print(f"pruned the traces and workspaces of {len(pruned)} run(s) older than {args.older_than}")
    return 0


def _positional(argv: list[str]) -> int | None:
    """Where the report's one positional argument is (the values of -o and --trace-dir are skipped)."""
    skip = False
    for i, arg in enumerate(argv):
        if skip:
            skip = False
        elif arg in ("-o", "--output", "--trace-dir"):
            skip = True
        elif not arg.startswith("-"):
            return i
    return None


def report(argv: list[str]) -> int:
    """`main.py report RUN`: RUN is a run id (or its start), a run directory, or a results.jsonl as before."""
    runs_dir, rest = None, list(argv)
    if "--runs-dir" in rest[:-1]:  # the store to look in (not a flag of the report itself)
        flag = rest.index("--runs-dir")
        runs_dir, rest = Path(rest[flag + 1]), rest[:flag] + rest[flag + 2:]
    at = _positional(rest)
    if at is None or Path(rest[at]).is_file():
        return report_main(rest)
    ref, rest = rest[at], rest[:at] + rest[at + 1:]
    if Path(ref).suffix and not Path(ref).exists():  # results.jsonl, not a run id: say the file is missing
        raise ConfigError(f"{ref}: no such file (a run's records file, or a run id as `main.py runs` lists them)",
                          "records")
    run = _store(runs_dir).open(ref)
    if run.info.kind == "research":  # its report.json, not task records, makes its report
        return rebuild_research(run.dir, rest)
    if not run.records.is_file():  # only the run's own copy: run.json's outputs may name any file
        print(f"error: run {run.id} has no records ({run.records} is missing; `main.py report FILE.jsonl` "
              "rebuilds a report from its records file)", file=sys.stderr)
        return 2
    extra = ["--trace-dir", str(run.trace_dir)] if run.trace_dir else []
    return report_main([str(run.records), *rest, *extra])
