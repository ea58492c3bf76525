"""Compare scoring.grade and the official GAIA rule on labelled (answer, ground truth) pairs.

Usage: python benchmarks/scoring_pairs.py [--fixture PATH] [--verbose]

Each pair in tests/fixtures/scoring_pairs.jsonl carries a human label (would a careful grader accept it?).
Printed per scorer: accuracy, false accepts (a wrong answer counted right) and false rejects; for ours also
how many verdicts were flagged `unsure`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tasks.scoring import grade  # noqa: E402

DEFAULT_FIXTURE = ROOT / "tests" / "fixtures" / "scoring_pairs.jsonl"


def load(path: Path) -> list[dict[str, Any]]:
    """The labelled pairs."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def main(argv: list[str] | None = None) -> int:
    """Print accuracy, false accepts and false rejects of both scorers."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fixture", type=Path, default=DEFAULT_FIXTURE)
    parser.add_argument("--verbose", action="store_true", help="list every pair a scorer gets wrong")
    args = parser.parse_args(argv)
    pairs = load(args.fixture)
    counts = {name: {"right": 0, "false_accept": 0, "false_reject": 0} for name in ("ours", "official")}
    unsure = 0
    for p in pairs:
        v = grade(p["answer"], p["truth"])
        unsure += v.unsure
        for name, verdict in (("ours", v.correct), ("official", v.correct_official)):
            if verdict == p["correct"]:
                counts[name]["right"] += 1
                continue
            counts[name]["false_accept" if verdict else "false_reject"] += 1
            if args.verbose:
                print(f"  {name}: {p['answer']!r} vs {p['truth']!r} labelled {p['correct']} ({p['family']})"
                      f"{' [unsure]' if v.unsure and name == 'ours' else ''}")
    for name, c in counts.items():
        print(f"{name:8} {c['right']}/{len(pairs)} right ({c['right'] / len(pairs):.1%}), "
              f"false accepts {c['false_accept']}, false rejects {c['false_reject']}"
              + (f", flagged unsure {unsure}" if name == "ours" else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
