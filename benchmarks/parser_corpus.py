"""Run protocol.parse_completion over real model replies (tests/fixtures/react_replies.jsonl).

Usage: python benchmarks/parser_corpus.py [--fixture PATH] [--verbose]

Each reply goes through what the agent does with it: cut_at_observation, parse_completion, then the tool
registry's schema check. The outcome is an action (tool + validated arguments), a final answer, or
"ask again". It is right when it equals the labelled outcome; it "acted wrongly" when the agent would run a
tool or end the task differently from the label (asking again when an intent was clear is only a miss).
Numbers are printed separately for the replies used while tuning and for the held-out ones.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from prompt.protocol import FinalAnswer, ParseError, cut_at_observation, parse_completion  # noqa: E402
from tools.base import Tool, ToolArgumentsError, ToolRegistry, UnknownToolError  # noqa: E402

DEFAULT_FIXTURE = ROOT / "tests" / "fixtures" / "react_replies.jsonl"


class _SpecTool(Tool):
    """A tool with only a name and a schema, built from a fixture's `tools` entry."""

    def __init__(self, name: str, params: dict[str, str]) -> None:
        self.name = name
        props = {p.rstrip("?"): ({} if t == "any" else {"type": t}) for p, t in params.items()}
        required = [p for p in params if not p.endswith("?")]
        self.parameters = {"type": "object", "properties": props, "required": required,
                           "additionalProperties": False}


def outcome(entry: dict[str, Any]) -> dict[str, Any]:
    """What the agent would do with this reply."""
    registry = ToolRegistry([_SpecTool(n, p) for n, p in entry["tools"].items()])
    try:
        parsed = parse_completion(cut_at_observation(entry["text"]))
    except ParseError:
        return {"kind": "ask"}
    if isinstance(parsed, FinalAnswer):
        return {"kind": "final", "answer": parsed.answer}
    try:
        tool, args = registry.prepare(parsed.tool, parsed.arguments)
    except (UnknownToolError, ToolArgumentsError):
        return {"kind": "ask"}
    return {"kind": "action", "tool": tool.name, "args": args}


def load(path: Path) -> list[dict[str, Any]]:
    """The fixture's entries."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def score(entries: list[dict[str, Any]], verbose: bool = False) -> dict[str, int]:
    """Counts of right, acted-wrongly and missed outcomes."""
    counts = {"total": 0, "right": 0, "acted_wrongly": 0, "missed": 0}
    for entry in entries:
        got, want = outcome(entry), entry["expect"]
        counts["total"] += 1
        if got == want:
            counts["right"] += 1
            continue
        counts["acted_wrongly" if got["kind"] != "ask" else "missed"] += 1
        if verbose:
            print(f"  {entry['id']}: expected {want}, got {got}")
    return counts


def main(argv: list[str] | None = None) -> int:
    """Print accuracy and acted-wrongly counts for the tuning and the held-out replies."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fixture", type=Path, default=DEFAULT_FIXTURE)
    parser.add_argument("--verbose", action="store_true", help="list every reply handled differently")
    args = parser.parse_args(argv)
    entries = load(args.fixture)
    for split in ("tune", "heldout"):
        part = [e for e in entries if e["split"] == split]
        if args.verbose:
            print(f"{split}:")
        c = score(part, args.verbose)
        print(f"{split:8} {c['right']}/{c['total']} right ({c['right'] / max(1, c['total']):.1%}), "
              f"acted wrongly {c['acted_wrongly']}, asked again when the intent was clear {c['missed']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
