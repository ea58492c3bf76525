"""The citation check on real claims judged by people: benchmarks/citations.py's `--set real`.

../shared/data/claims-real holds human-labelled (claim, source) pairs from eight public research sets (its
README says what each is and where it came from). Only the tuning halves are in it (`split` dev, train or a);
the other halves are kept aside elsewhere for measuring. Each claim is judged against its source as a claim
citing one source (sources.check.verdict); a claim of several sentences (SummEdits, CLIFF, Goyal21 give whole
summaries) is cut the way an answer is cut into claims, and its worst sentence decides.

Per set: pass = share of `supported` claims judged supported; flag = share of `not_supported` ones judged
contradicted or unsupported; balanced accuracy = (pass + flag) / 2; flags right = share of flags whose label is
`not_supported`; contradicted = share of `supported` claims judged contradicted; CPU ms per claim, reading the
source included. XSum and the WiCE sub-claims hold wrong claims only: only their flag share says anything.

`--part look` / `--part measure` split every file again by a hash of the row's id: rules are adjusted looking at
the first part's misses only, and the second is only measured (a guard against tuning to rows).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sources.check import CONTRADICTED, FAILING, SUPPORTED, UNCHECKED, claims, verdict

# (name, file, holds both labels)
SETS = (("CLIFF", "aggrefact_cliff.jsonl", True), ("Goyal21", "aggrefact_goyal21.jsonl", True),
        ("BEGIN", "begin.jsonl", True), ("QAGS", "qags.jsonl", True), ("SummEdits", "summedits.jsonl", True),
        ("WiCE", "wice.jsonl", True), ("FaithBench", "faithbench_sentences.jsonl", True),
        ("XSum (wrong only)", "aggrefact_unified_xsum.jsonl", False),
        ("WiCE sub-claims (wrong only)", "wice_subclaim_partial.jsonl", False))
TUNING_SPLITS = frozenset({"dev", "train", "a"})
PARTS = ("all", "look", "measure")


def part_of(row_id: str) -> str:
    """`look` or `measure`: half of the rows each, by a hash of the id (stable across runs and machines)."""
    return "look" if hashlib.sha256(row_id.encode("utf-8")).digest()[0] < 128 else "measure"


def rows(path: Path, part: str = "all") -> Iterator[dict[str, str]]:
    """The tuning rows of one file (in the given part)."""
    with path.open(encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            if row["split"] in TUNING_SPLITS and (part == "all" or part_of(str(row["id"])) == part):
                yield row


def judge_claim(claim: str, source: str) -> tuple[str, str]:
    """(verdict, reason) of a claim of one or more sentences citing one source: its worst sentence decides."""
    found = [verdict(piece, [1], {1: source}) for piece in claims(claim)] or [verdict(claim, [1], {1: source})]
    for worst in (CONTRADICTED, *sorted(FAILING - {CONTRADICTED}), SUPPORTED, UNCHECKED):
        for j in found:
            if j.verdict == worst:
                return j.verdict, j.reason
    return found[0].verdict, found[0].reason


@dataclass
class Scored:
    """One set's verdicts: (id, label, verdict, reason, claim) per row, and the CPU time they took."""

    name: str
    both_labels: bool
    results: list[tuple[str, str, str, str, str]]
    cpu_s: float

    def share(self, label: str, verdicts: frozenset[str] | set[str]) -> float | None:
        got = [v for _, lab, v, _, _ in self.results if lab == label]
        return sum(v in verdicts for v in got) / len(got) if got else None

    @property
    def passed(self) -> float | None:
        return self.share("supported", {SUPPORTED})

    @property
    def flagged(self) -> float | None:
        return self.share("not_supported", FAILING)

    @property
    def balanced(self) -> float | None:
        return (self.passed + self.flagged) / 2 if self.passed is not None and self.flagged is not None else None

    @property
    def precision(self) -> float | None:
        flags = [lab for _, lab, v, _, _ in self.results if v in FAILING]
        return sum(lab == "not_supported" for lab in flags) / len(flags) if flags else None

    @property
    def contradicted(self) -> float | None:
        return self.share("supported", {CONTRADICTED})

    @property
    def ms(self) -> float:
        return 1000 * self.cpu_s / max(1, len(self.results))


def score(data: Path, name: str, file: str, both: bool, part: str = "all") -> Scored:
    """Judge every tuning row of one set (in the given part)."""
    out, spent = [], 0.0
    for row in rows(data / file, part):
        started = time.process_time()  # CPU time: the machine is shared
        found, reason = judge_claim(row["claim"], row["source"])
        spent += time.process_time() - started
        out.append((str(row["id"]), row["label"], found, reason, row["claim"]))
    return Scored(name, both, out, spent)


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}"


def table(scored: list[Scored], title: str) -> None:
    """The per-set table, with the mean balanced accuracy over the two-label sets and the mean ms per claim."""
    print(f"\n{title}")
    print("| set | n | balanced accuracy | correct passed | wrong flagged | flags right | correct contradicted "
          "| CPU ms/claim |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for s in scored:
        print(f"| {s.name} | {len(s.results)} | {_pct(s.balanced)} | {_pct(s.passed)} | {_pct(s.flagged)} | "
              f"{_pct(s.precision) if s.both_labels else '—'} | {_pct(s.contradicted)} | {s.ms:.2f} |")
    two = [s.balanced for s in scored if s.both_labels and s.balanced is not None]
    claims_n = sum(len(s.results) for s in scored)
    ms = 1000 * sum(s.cpu_s for s in scored) / max(1, claims_n)
    print(f"mean balanced accuracy over the {len(two)} two-label sets: {_pct(sum(two) / max(1, len(two)))}; "
          f"{claims_n} claims, {ms:.2f} ms (CPU) per claim on average")


def misses(scored: list[Scored], limit: int = 0) -> None:
    """Each wrong verdict of the sets: label, verdict, reason and the claim (for the `look` part only)."""
    for s in scored:
        wrong = [r for r in s.results if (r[1] == "supported") != (r[2] == SUPPORTED)]
        print(f"\n## {s.name}: {len(wrong)} wrong")
        for row_id, label, found, reason, claim in wrong[:limit or None]:
            print(f"- [{row_id}] {label} -> {found} ({reason}): {' '.join(claim.split())[:300]}")
