"""Choosing the wider extraction of a page, and the extraction benchmark's held-out switch."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

from tools.documents.extraction_choice import prefer_wider

ROOT = Path(__file__).resolve().parent.parent
LEAD = "The council approved the new bridge after a long debate about its cost and its design."
BODY = " ".join(f"Paragraph {i} explains another detail of the bridge plan and who will pay for it."
                for i in range(12))


def test_a_far_longer_reading_that_holds_the_fragment_wins() -> None:
    assert prefer_wider(LEAD, LEAD + " " + BODY) == LEAD + " " + BODY


def test_a_longer_reading_of_something_else_does_not() -> None:
    assert prefer_wider(LEAD, BODY) == LEAD


def test_a_slightly_longer_reading_does_not() -> None:
    assert prefer_wider(LEAD + " " + BODY, LEAD + " " + BODY + " Share this article.") == LEAD + " " + BODY


def test_benchmark_says_when_the_held_out_sets_are_missing(tmp_path: Path) -> None:
    data = tmp_path / "bundled"
    (data / "html").mkdir(parents=True)
    page = f"<html><body><article><h1>Bridge</h1><p>{LEAD}</p><p>{BODY}</p></article></body></html>"
    (data / "html" / "p1.html.gz").write_bytes(gzip.compress(page.encode()))
    (data / "ground-truth.json").write_text(json.dumps({"p1": {"articleBody": LEAD + "\n" + BODY}}))
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "extraction.py"), "--data", str(data),
                          "--heldout", str(tmp_path / "nowhere"), "--workers", "1"],
                         capture_output=True, text=True, timeout=120)
    assert "held-out set not present" in run.stdout, run.stderr
    assert run.stdout.splitlines()[1].split()[:2] == ["bundled", "1"]
