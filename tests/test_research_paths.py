"""Reports name the run store's files relative to the run store, never by the machine's path, and the example
report in docs/ says which model wrote it and links nothing a reader cannot open (issue 49, item 5)."""

from __future__ import annotations

from pathlib import Path

from tests.test_research import run_with, world

ROOT = Path(__file__).resolve().parent.parent


def test_a_research_report_names_its_sources_texts_relative_to_the_run_store(tmp_path: Path) -> None:
    proc = run_with(world(), tmp_path)
    assert proc.returncode == 0, proc.stderr
    run = sorted((tmp_path / "runs").iterdir())[-1]
    for name in ("report.md", "report.html"):
        text = (tmp_path / name).read_text()
        assert str(tmp_path) not in text and "/tmp/" not in text, name
        assert f"kept in the run store as <code>{run.name}/sources/</code>" in text or \
            f"kept in the run store as `{run.name}/sources/`" in text, name
    assert str(tmp_path) not in (run / "report.md").read_text()  # the store's own copy too


def test_the_example_report_says_which_model_wrote_it_and_links_no_loopback_page() -> None:
    text = (ROOT / "docs" / "research-example.md").read_text(encoding="utf-8")
    assert "127.0.0.1" not in text and "localhost" not in text and "/tmp/" not in text
    assert "no language model wrote it" in text.split("\n\n")[0]
    assert "model openai:scripted-benchmark-writer" in text and "cost n/a" in text
