"""Size and build time of results.html for large runs (synthetic records and traces; prints figures)."""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from report.html import write_html  # noqa: E402
from tests.test_report_html import make_run  # noqa: E402


def measure(tasks: int, steps: int, obs_words: int) -> None:
    """Build one page and print its size, build time and whether timelines were inlined."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        records = make_run(root, n=tasks, steps=steps, obs="word " * obs_words)
        started = time.perf_counter()
        size = write_html(records, root / "results.html", [root / "traces"])
        took = time.perf_counter() - started
        details = root / "results_tasks"
        extra = sum(p.stat().st_size for p in details.glob("*.html")) if details.is_dir() else 0
        mode = f"per-task pages ({extra / 1e6:.1f} MB beside it)" if extra else "timelines inline"
        print(f"{tasks:>5} tasks x {steps:>2} steps, {obs_words * 5:>5}-char observations: "
              f"results.html {size / 1e6:6.2f} MB, built in {took:5.2f} s, {mode}")


if __name__ == "__main__":
    for args in ((20, 8, 400), (200, 15, 800), (2000, 5, 200), (2000, 15, 800)):
        measure(*args)
