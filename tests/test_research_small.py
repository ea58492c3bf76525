"""Small untruths in what research shows (issue 54, item 7), through main.py with a scripted model, loopback pages
and document folders: the DOCX's sources, claims and title, PDF pages cited as the PDF
prints them, the report's own headings in --language, the --plan-only hint, a plan made for another question,
and the models that planned and wrote a report."""

from __future__ import annotations

import io
import re
from pathlib import Path

import docx

from tests.fakes.cli import clean_env, run_main
from tests.fakes.deep_research import Sub, World
from tests.fakes.documents import pages_pdf_bytes
from tests.fakes.loopback import LoopbackServer
from tests.test_docs_search import folder
from tests.test_research import MODEL, PLAN, QUESTION, run_with, world

ISSUE = "https://github.com/nodejs/node/issues/1907"
FRONT = [[f"Preface, part {i}."] for i in range(1, 4)]  # pages i-iii
BODY = [[f"Chapter page {i}."] for i in range(1, 8)] + [["The channel is dredged to 16.5 metres every spring."]]


def labelled_docs(tmp: Path) -> Path:
    """A folder with an 11-page PDF numbered i-iii then 1-8 (its /PageLabels: the fact is on its 11th page, which
    prints "8") and Markdown notes with a section named by code."""
    docs = tmp / "docs"
    docs.mkdir()
    (docs / "manual.pdf").write_bytes(pages_pdf_bytes(FRONT + BODY, "/Nums [0 << /S /r >> 3 << /S /D >>]"))
    (docs / "api.md").write_text("# API\n\n## `subscribe(name, onMessage)`\n\nSubscribers receive every message "
                                 "published on the channel named 7f3a.\n")
    return docs


def test_pdf_pages_are_cited_as_printed_and_the_docx_shows_sources_claims_and_title_as_text(tmp_path: Path) -> None:
    docs = labelled_docs(tmp_path)
    plan = ["How deep is the channel dredged?", "What do subscribers receive?"]
    w = World("What do the manual and the API notes say?", plan, {
        plan[0]: Sub(["docs:channel dredged metres"], "The channel is dredged to 16.5 metres every spring [1]."),
        plan[1]: Sub(["docs:subscribers message"], "Subscribers receive every message on the channel 7f3a [1].")},
        {}, writer=lambda prompt: ("## Channel\n\nThe channel is dredged to 16.5 metres every spring [1].\n\n"
                                   "## API\n\nSubscribers receive every message published on the channel named 7f3a "
                                   f"([#1907]({ISSUE})) [2].\n"))
    with LoopbackServer(w) as server:
        w.base = server.url
        proc = run_main(tmp_path, "research", w.question, "-o", "report.md", "--model", MODEL, "--docs", str(docs),
                        "--formats", "md,docx", env=clean_env(server, AGENT_SEARCH="0", AGENT_MAX_RETRIES="0"))
        search = run_main(tmp_path, "docs", "search", str(docs), "dredged metres", env=clean_env())
    assert proc.returncode == 0, proc.stderr
    report = (tmp_path / "report.md").read_text()
    assert "1. `manual.pdf, p. 8`" in report and "p. 11" not in report  # the page as the PDF prints it
    assert search.stdout.startswith("1. manual.pdf, p. 8\n"), search.stdout
    document = docx.Document(io.BytesIO((tmp_path / "report.docx").read_bytes()))
    assert document.core_properties.title == f"Research report: {w.question}"
    text = [p.text for p in document.paragraphs]
    assert "[1] manual.pdf, p. 8" in text and "[2] api.md, § subscribe(name, onMessage)" in text  # no backticks
    claim = next(t for t in text if "Subscribers receive" in t and t.startswith(("✓", "✗", "·")))
    assert f"channel named 7f3a (#1907 ({ISSUE}))" in claim and "](" not in claim and "[#1907]" not in claim


GERMAN = ["Forschungsbericht", "Teilbericht der Forschung", "Kein Bericht: nichts konnte gelesen werden",
          "Teilbericht", "Quellen", "Auch gelesen, nicht zitiert", "Nicht lesbar (nie zitiert)", "Geprüfte Zitate",
          "Forschungsplan"]


def test_language_puts_the_reports_own_headings_in_it_and_the_report_names_its_planner_and_writer(
        tmp_path: Path) -> None:
    w = world()
    w.labels = lambda prompt: "\n".join(f"{i}. {h}" for i, h in enumerate(GERMAN, start=1))
    proc = run_with(w, tmp_path, "--language", "German", "--planner-model", "openai:gpt-4.1",
                    "--writer-model", "openai:gpt-4o")
    assert proc.returncode == 0, proc.stderr
    assert w.calls["labels"] == 1 and "into German" in w.prompts["labels"][0]
    report = (tmp_path / "report.md").read_text()
    assert report.startswith(f"# Forschungsbericht: {QUESTION}")
    for heading in ("## Quellen", "## Geprüfte Zitate", "## Forschungsplan"):
        assert f"\n{heading}\n" in report
    assert "## Sources" not in report and "## Research plan" not in report
    html = (tmp_path / "report.html").read_text()
    assert "<h2>Quellen</h2>" in html and "<h2>Forschungsplan</h2>" in html
    assert f" · model {MODEL} · planner openai:gpt-4.1 · writer openai:gpt-4o · " in report


def test_without_language_the_report_names_only_the_model_that_did_everything(tmp_path: Path) -> None:
    w = world()
    proc = run_with(w, tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = (tmp_path / "report.md").read_text()
    assert "labels" not in w.calls and "## Sources" in report
    assert f" · model {MODEL} · 2 sub-questions" in report and "writer " not in report.split("\n")[2]


def test_the_plan_only_hint_is_the_whole_command_and_a_plan_for_another_question_is_warned_about(
        tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    docs = folder(tmp_path)
    w = world(plan=PLAN)
    with LoopbackServer(w) as server:
        w.base = server.url
        env = clean_env(server, AGENT_SEARCH="0", AGENT_MAX_RETRIES="0", SCRAPE_ALLOW_PRIVATE_URLS="1",
                        SCRAPE_HOST_GAP="0")
        planned = run_main(tmp_path, "research", QUESTION, "-o", "out/report.md", "--model", MODEL, "--docs",
                           str(docs), "--plan-only", env=env)
        assert planned.returncode == 0, planned.stderr
        hint = re.search(r"edit it, then: (.*)$", planned.stderr, re.MULTILINE)
        assert hint is not None, planned.stderr
        rest = f"research '{QUESTION}' -o out/report.md --model {MODEL} --docs {docs} --plan out/report.plan.txt"
        assert re.fullmatch(r"python \S*main\.py " + re.escape(rest), hint.group(1)), hint.group(1)
        other = "Which ports lie on the Rhine?"
        again = run_main(tmp_path, "research", other, "--model", MODEL, "--plan", "out/report.plan.txt",
                         "--estimate", env=env)
        same = run_main(tmp_path, "research", QUESTION, "--model", MODEL, "--plan", "out/report.plan.txt",
                        "--estimate", env=env)
    assert again.returncode == 0, again.stderr
    assert (f"warning: out/report.plan.txt was made for another question (\u201c{QUESTION}\u201d); its "
            "sub-questions are researched for this one") in again.stderr
    assert same.returncode == 0 and "warning" not in same.stderr, same.stderr
