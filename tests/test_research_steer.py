"""Research people can steer, through `main.py research` with a scripted model and loopback pages: the plan
first (--plan-only) and as the user edited it (--plan FILE), a follow-up round on what the first found
(--depth), and the report as PDF and DOCX (--formats), read back with pypdf and python-docx."""

from __future__ import annotations

import functools
import io
import json
import re
from pathlib import Path

import docx
import pypdf
import pytest

from tests.fakes.deep_research import Sub, World, page
from tests.fakes.loopback import LoopbackServer
from tests.test_research import DANUBE, FINDINGS, PLAN, QUESTION, RHINE, main_py, research, run_with, world
from tools.web.browser.pdf import print_pdf

OWN = "Which ports lie on the Danube?"
PORTS = page("Danube ports", "Vienna, Budapest and Constanța are the largest ports on the Danube.\n\n"
                             "Constanța handled 75.6 million tonnes in 2022.")


def test_plan_only_makes_one_call_researches_nothing_and_writes_the_plan_beside_the_report(tmp_path: Path) -> None:
    w = world()
    proc = run_with(w, tmp_path, "--plan-only")
    assert proc.returncode == 0, proc.stderr
    assert w.calls == {"plan": 1}  # no sub-question's task, no writer
    assert proc.stdout == f"Plan:\n1. {PLAN[0]}\n2. {PLAN[1]}\n"
    plan_file = tmp_path / "report.plan.txt"
    assert "plan written to report.plan.txt" in proc.stderr
    assert plan_file.read_text().splitlines()[-2:] == [f"1. {PLAN[0]}", f"2. {PLAN[1]}"]
    assert not (tmp_path / "report.md").exists() and not (tmp_path / "runs").exists()


def test_an_edited_plan_file_is_researched_exactly_as_written(tmp_path: Path) -> None:
    run_with(world(), tmp_path, "--plan-only")
    plan_file = tmp_path / "report.plan.txt"
    lines = plan_file.read_text().splitlines()
    edited = [ln for ln in lines if not ln.startswith("1. ")] + [f"- {OWN}"]  # the Rhine's removed, one of ours
    plan_file.write_text("\n".join(edited) + "\n")
    subs = {PLAN[1]: FINDINGS[PLAN[1]], OWN: Sub(["/ports"], "Constanța handled 75.6 million tonnes in 2022 [1].")}
    w = world(subs=subs, pages={"/rhine": RHINE, "/danube": DANUBE, "/ports": PORTS},
              writer=lambda prompt: "## Danube\n\nThe Danube is navigable for 2,415 km [1]. Constanța handled "
                                    "75.6 million tonnes in 2022 [2].\n")
    proc = run_with(w, tmp_path, "--plan", "report.plan.txt")
    assert proc.returncode == 0, proc.stderr
    assert "plan" not in w.calls  # no planning call
    assert {p.split("\n")[0] for p in w.prompts["task"]} == {PLAN[1], OWN}  # exactly these two, nothing of the Rhine
    assert proc.stdout.startswith(f"Plan:\n1. {PLAN[1]}\n2. {OWN}\n")
    report = (tmp_path / "report.md").read_text()
    assert f"1. {PLAN[1]} — answered" in report and f"2. {OWN} — answered" in report
    assert "**2 claims: 2 supported" in report and "Rhine freight" not in report


FIRM = page("Rhine shipping firms", "The largest Rhine barge operator, Rhenus Shipping, is led by Anna Berger.\n\n"
                                    "It runs 120 barges between Rotterdam and Basel.")
BERGER = page("Anna Berger profile", "Anna Berger was born in 1971 in Basel.\n\n"
                                     "She has led Rhenus Shipping since 2019, after 14 years at the port of Basel.")
WHO = "Who is Anna Berger, who leads Rhenus Shipping?"


def test_depth_follows_up_a_name_the_first_round_found_and_its_details_reach_the_report_cited(
        tmp_path: Path) -> None:
    followups: list[str] = []

    def followup(prompt: str) -> str:
        followups.append(prompt)
        return f"1. {WHO}" if len(followups) == 1 else "none"

    def writer(prompt: str) -> str:
        assert "She has led Rhenus Shipping since 2019" not in prompt  # findings, not pages
        assert f"### {WHO}\nAnna Berger has led Rhenus Shipping since 2019 [2]" in prompt
        return ("## Operators\n\nRhenus Shipping runs 120 barges and is led by Anna Berger [1]. "
                "Anna Berger has led Rhenus Shipping since 2019 [2].\n")

    plan = ["Which firms operate barges on the Rhine?"]
    subs = {plan[0]: Sub(["/firm"], "Rhenus Shipping, the largest operator with 120 barges, is led by Anna "
                                    "Berger [1]."),
            WHO: Sub(["/berger"], "Anna Berger has led Rhenus Shipping since 2019 [1]; she was born in 1971 [1].")}
    w = World(QUESTION, plan, subs, {"/firm": FIRM, "/berger": BERGER}, writer=writer, followup=followup)
    proc = run_with(w, tmp_path, "--depth", "3")
    assert proc.returncode == 0, proc.stderr
    assert w.calls["followup"] == 2  # after round 1 (a new sub-question), after round 2 (none): no round 3
    assert "is led by Anna Berger" in followups[0] and f"Question: {QUESTION}" in followups[0]
    assert f"Sub-question 2: {WHO}" in followups[1]
    assert f"Round 2 (follow-up):\n2. {WHO}" in proc.stdout
    report = (tmp_path / "report.md").read_text()
    assert "Anna Berger has led Rhenus Shipping since 2019 [2]." in report
    assert re.search(r"2\. \[Anna Berger profile\]\(<http://127\.0\.0\.1:\d+/berger>\)", report)  # one list
    assert "**2 claims: 2 supported" in report
    assert f"2. (round 2, a follow-up) {WHO} — answered" in report and "in 2 rounds" in report
    run = sorted((tmp_path / "runs").iterdir())[-1]
    plan_json = json.loads((run / "plan.json").read_text())
    assert plan_json["rounds"] == [1, 2] and plan_json["followed"] == [1, 2]


def test_depth_resumes_the_round_a_cap_stopped_and_goes_on_from_there(tmp_path: Path) -> None:
    plan = ["Which firms operate barges on the Rhine?"]
    costly = {plan[0]: Sub(["/firm"], "Rhenus Shipping is led by Anna Berger [1].", prompt_tokens=50_000),
              WHO: Sub(["/berger"], "Anna Berger has led Rhenus Shipping since 2019 [1].", prompt_tokens=50_000)}
    pages = {"/firm": FIRM, "/berger": BERGER}
    w = World(QUESTION, plan, costly, pages, followup=lambda prompt: f"1. {WHO}")
    proc = run_with(w, tmp_path, "--depth", "2", "--max-run-cost", "0.05")  # $0.02 a call: round 2 is cut
    assert proc.returncode == 1, proc.stderr
    assert w.calls["followup"] == 1
    report = (tmp_path / "report.md").read_text()
    assert report.startswith("# Partial research report:") and "(round 2, a follow-up)" in report
    cheap = {q: Sub(s.paths, s.answer) for q, s in costly.items()}
    w2 = World(QUESTION, plan, cheap, pages, followup=lambda prompt: "none",
               writer=lambda prompt: "## Berger\n\nAnna Berger has led Rhenus Shipping since 2019 [2].\n")  # pool's [2]
    proc = run_with(w2, tmp_path, "--depth", "2", "--resume")
    assert proc.returncode == 0, proc.stderr
    assert "plan" not in w2.calls and "followup" not in w2.calls  # both rounds kept from the first run
    assert w2.calls["task"] == 2  # only round 2's sub-question ran (two steps)
    assert "since 2019 [1]" in (tmp_path / "report.md").read_text()


WIDE = ("## Ports\n\nThe Rhine carried 187 million tonnes of freight in 2022 [1].\n\n"
        "| River | Freight | Note |\n|---|---|---|\n| Rhine | 187 million tonnes [1] | Duisburg |\n"
        "| Danube | 2,415 km navigable [2] | ten countries | Black Sea |\n| ragged\n\n"
        "## Дунай\n\nДунай судоходен на 2,415 km [2]. Ο Δούναβης.\n")


def _docx_text(path: Path) -> tuple[list[str], str, list[list[str]]]:
    d = docx.Document(str(path))
    headings = [p.text for p in d.paragraphs if p.style.name.startswith(("Heading", "Title"))]
    return headings, "\n".join(p.text for p in d.paragraphs), [[c.text for c in r.cells] for t in d.tables
                                                                for r in t.rows]


@functools.cache
def cannot_print() -> str | None:
    """Why this machine cannot print a page to PDF in headless Chromium (no Playwright, no Chromium, or one that
    does not start, as while it is being installed), or None when it can."""
    try:
        print_pdf("<p>Can this machine print?</p>")
    except Exception as exc:  # noqa: BLE001 - BrowserUnavailableError or Playwright's failure: the reason
        return (f"no PDF can be printed here ({exc}): pip install -r requirements-browser.txt and install a "
                "Chromium to run this part")
    return None


def test_pdf_and_docx_hold_the_reports_text_headings_citations_tables_and_sources(tmp_path: Path) -> None:
    long_page = "/danube/" + "a-very-long-path-segment-" * 8 + "end"
    subs = {PLAN[0]: FINDINGS[PLAN[0]], PLAN[1]: Sub([long_page], "The Danube is navigable for 2,415 km [1].")}
    w = world(subs=subs, pages={"/rhine": RHINE, long_page: DANUBE}, writer=lambda prompt: WIDE)
    proc = run_with(w, tmp_path, "--formats", "md,pdf,docx")
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "report.html").exists()  # not asked for
    headings, text, cells = _docx_text(tmp_path / "report.docx")
    assert headings == [f"Research report: {QUESTION}", "Ports", "Дунай", "Sources", "Citations checked",
                        "Research plan"]
    assert "The Rhine carried 187 million tonnes of freight in 2022 [1]." in text
    assert "Дунай судоходен на 2,415 km [2]. Ο Δούναβης." in text
    assert ["River", "Freight", "Note"] in cells and ["Danube", "2,415 km navigable [2]", "ten countries | Black "
                                                     "Sea"] in cells and ["ragged", "", ""] in cells
    assert re.search(r"\[2\] Danube waterway — http://127\.0\.0\.1:\d+" + re.escape(long_page), text)
    assert "✓ supported [1] The Rhine carried 187 million tonnes of freight in 2022." in text
    if why := cannot_print():  # found out apart from the run: a PDF the run fails to write is still a failure
        assert len([ln for ln in proc.stderr.splitlines() if "report.pdf not written" in ln]) == 1, proc.stderr
        pytest.skip(why)
    pdf = pypdf.PdfReader(io.BytesIO((tmp_path / "report.pdf").read_bytes()))
    printed = " ".join(" ".join(p.extract_text().split()) for p in pdf.pages)
    for expected in (f"Research report: {QUESTION}", "Ports", "The Rhine carried 187 million tonnes of freight in "
                     "2022 [1]", "Дунай судоходен на 2,415 km [2]", "Sources", "Danube waterway", "Citations checked",
                     "supported", "Research plan", "Duisburg", "ten countries"):
        assert expected in printed, expected
    assert "a-very-long-path-segment-a-very" in printed.replace(" ", "")  # the long address is printed, wrapped
    assert pdf.pages[0].mediabox.width < 600  # A4, the long address did not widen the page


def test_without_chromium_one_line_says_so_and_the_other_formats_are_written(tmp_path: Path) -> None:
    w = world()
    with_env = {"SCRAPE_CHROMIUM": str(tmp_path / "no-chromium")}
    with LoopbackServer(w) as server:
        w.base = server.url
        proc = research(server, tmp_path, "--formats", "md,html,pdf,docx", env=with_env)
    assert proc.returncode == 0, proc.stderr
    said = [ln for ln in proc.stderr.splitlines() if "report.pdf not written" in ln]
    assert len(said) == 1 and "no-chromium" in said[0]
    assert not (tmp_path / "report.pdf").exists()
    assert all((tmp_path / f"report.{ext}").is_file() for ext in ("md", "html", "docx"))


def test_an_unknown_format_or_a_bad_depth_is_a_usage_error_before_any_call(tmp_path: Path) -> None:
    proc = main_py(tmp_path, "research", QUESTION, "--model", "openai:gpt-4.1-mini", "--formats", "md,odt")
    assert proc.returncode == 2 and "--formats: unknown format 'odt'" in proc.stderr
    proc = main_py(tmp_path, "research", QUESTION, "--model", "openai:gpt-4.1-mini", "--depth", "0")
    assert proc.returncode == 2 and "--depth must be 1 or more" in proc.stderr


def test_estimate_covers_every_round(tmp_path: Path) -> None:
    one = main_py(tmp_path, "research", QUESTION, "--model", "openai:gpt-4.1-mini", "--breadth", "3", "--estimate")
    two = main_py(tmp_path, "research", QUESTION, "--model", "openai:gpt-4.1-mini", "--breadth", "3", "--depth", "2",
                  "--estimate")
    assert two.returncode == 0, two.stderr
    assert "then up to 1 more round(s) (--depth 2): a follow-up call and up to 3 sub-questions each, 6 at most" \
        in two.stdout

    def cost(out: str) -> float:
        m = re.search(r"expected cost: \$(\d+\.\d+)", out)
        assert m is not None, out
        return float(m.group(1))
    assert cost(two.stdout) > 1.8 * cost(one.stdout)


GERMAN = ("## Rhein\n\nDer Rhein beförderte im Jahr 2022 187 Millionen Tonnen Fracht [1].\n\n"
          "## Donau\n\nDie Donau ist auf 2,415 km schiffbar [2]. Die Donau war im Jahr 2021 auf 2,415 km für "
          "die Schifffahrt gesperrt [1].\n")


def test_language_writes_plan_and_report_in_it_and_says_which_claims_were_judged_across_languages(
        tmp_path: Path) -> None:
    w = world(writer=lambda prompt: GERMAN, repair=lambda prompt: GERMAN)
    proc = run_with(w, tmp_path, "--language", "German")
    assert proc.returncode == 0, proc.stderr
    for kind in ("plan", "write", "repair"):
        assert "Write your reply in German, whatever the language" in w.prompts[kind][0]
    assert "Write your reply in" not in w.prompts["task"][0]  # the research itself reads the sources as they are
    report = (tmp_path / "report.md").read_text()
    assert "**3 claims: 2 supported, 1 unsupported" in report  # judged on figures and dates across languages
    assert "im Jahr 2021 auf 2,415 km für die Schifffahrt gesperrt [1] \u26a0 unsupported." in report
    assert "_3 claims could only be judged on names, figures and dates (written in another language than the " \
           "source cited):_" in report
    assert "- \\[1\\] Der Rhein beförderte im Jahr 2022 187 Millionen Tonnen Fracht." in report
