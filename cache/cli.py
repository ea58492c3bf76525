"""`python main.py cache stats|prune --older-than 30d|clear`: look after the --cache directory."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cache.store import DB_NAME, CacheStore
from config import load_settings
from core.cli import ArgumentParser
from core.errors import ConfigError
from core.text import human_size, money, parse_age


def build_parser() -> argparse.ArgumentParser:
    """The subcommand's flags."""
    p = ArgumentParser(prog="main.py cache", description="Show, prune or clear the model/web cache.")
    p.add_argument("action", choices=["stats", "prune", "clear"])
    p.add_argument("--dir", type=Path, help="the cache directory (default: AGENT_CACHE_DIR)")
    p.add_argument("--older-than", metavar="AGE", help="prune: entries stored longer ago than this, e.g. 30d")
    return p


def describe(directory: Path | None) -> str:
    """One line for check_setup: where the cache is and how big, or that it is off."""
    if directory is None:
        return "off (--cache DIR or AGENT_CACHE_DIR records model and web calls for free re-runs)"
    path = Path(directory) / DB_NAME
    if not path.is_file():
        return f"{directory}: empty (created on the first cached call)"
    size = sum(p.stat().st_size for p in Path(directory).glob(DB_NAME + "*") if p.is_file())
    return f"{path}: {human_size(size)}"


def _when(stamp: float | None) -> str:
    return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%d %H:%M UTC") if stamp else "-"


def stats_lines(stats: dict[str, Any]) -> list[str]:
    """The stats as lines of text."""
    calls, unpriced = sum(stats["models"].values()), stats["unpriced_calls"]
    cost = money(None if calls and unpriced >= calls else stats["recorded_cost"])  # n/a: no call had a price
    lines = [f"cache {stats['path']}: {human_size(stats['bytes'])}",
             f"model calls: {calls:,} (recorded cost {cost}"
             + (f", {unpriced:,} without a known price)" if unpriced else ")")]
    lines += [f"  {model}: {n:,}" for model, n in stats["models"].items()]
    lines.append(f"network results: {sum(stats['tools'].values()):,}")
    lines += [f"  {tool}: {n:,}" for tool, n in stats["tools"].items()]
    lines.append(f"oldest entry {_when(stats['oldest'])}, newest {_when(stats['newest'])}")
    return lines


def main(argv: list[str]) -> int:
    """Run the subcommand; 0 on success, 2 on a usage error."""
    args = build_parser().parse_args(argv)
    try:
        directory = args.dir or load_settings().cache_dir
        age = parse_age(args.older_than) if args.action == "prune" and args.older_than else None
    except (ConfigError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if directory is None and args.action == "stats":  # nothing recorded yet is not an error
        print("the cache is empty: no cache directory is set (--cache DIR or AGENT_CACHE_DIR records model and "
              "web calls; `main.py cache stats --dir DIR` shows one)")
        return 0
    if directory is None:
        print("error: no cache directory: pass --dir DIR or set AGENT_CACHE_DIR", file=sys.stderr)
        return 2
    if args.action == "prune" and age is None:
        print("error: prune needs --older-than AGE, e.g. --older-than 30d", file=sys.stderr)
        return 2
    if not (Path(directory) / DB_NAME).is_file():
        print(f"the cache is empty: nothing recorded in {directory} yet")
        return 0
    store = CacheStore(Path(directory))
    try:
        if args.action == "stats":
            print("\n".join(stats_lines(store.stats())))
        elif args.action == "prune":
            assert age is not None
            print(f"removed {store.prune(age):,} entries older than {args.older_than}; "
                  f"{human_size(store.size_bytes())} left")
        else:
            print(f"removed {store.clear():,} entries; {human_size(store.size_bytes())} left")
    finally:
        store.close()
    return 0
