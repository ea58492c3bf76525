"""The page a citation names (sources/pages.py): the page holding the claim's figures and matched words, of a
passage across a page break the part that holds them, of a paper's abstract the page of its PDF that says it
too; a research report's body shows `[n, p. X]` where the check found the page."""

from __future__ import annotations

from pathlib import Path

from sources.check import check_citations
from sources.ledger import Read, SourceLedger
from tests.fakes.cli import clean_env, run_main
from tests.fakes.deep_research import Sub, World
from tests.fakes.documents import pages_pdf_bytes
from tests.fakes.loopback import LoopbackServer, Response

ABSTRACT = ("Augmenting large language models with chemistry tools (2024)\nAbstract: By integrating 18 "
            "expert-designed tools and using GPT-4 as the LLM, ChemCrow augments the LLM performance in chemistry.")
PDF = ("--- page 1 ---\nAugmenting large language models with chemistry tools\nIn our trials ChemCrow planned the "
       "synthesis of DEET, an insect repellent,\n\n--- page 2 ---\nin 3 steps with a 72% yield on the RoboRXN "
       "platform.\nBy integrating 18 expert-designed tools and using\nGPT-4 as the LLM, ChemCrow augments the LLM "
       "performance in chemistry.")


def page(claim: str, *texts: str) -> int | None:
    ledger = SourceLedger()
    for text in texts:
        ledger.observe(text, [Read("https://doi.org/10.1038/x", "Augmenting (2024)", text)])
    [c] = check_citations(claim, ledger)
    assert c.verdict == "supported", c
    return c.page


def test_a_passage_across_a_page_break_cites_the_page_holding_the_claims_figures() -> None:
    assert page("ChemCrow planned the synthesis of DEET in 3 steps with a 72% yield [1].", PDF) == 2
    assert page("ChemCrow planned the synthesis of DEET, an insect repellent [1].", PDF) == 1


def test_a_claim_the_abstract_and_a_page_both_hold_cites_the_page() -> None:
    claim = "By integrating 18 expert-designed tools and using GPT-4, ChemCrow augments the LLM performance [1]."
    assert page(claim, ABSTRACT) is None  # the abstract alone: no page
    assert page(claim, ABSTRACT, PDF) == 2
    other = PDF.replace("By integrating 18 expert-designed tools", "By integrating 12 expert-designed tools")
    assert page(claim, ABSTRACT, other) is None  # a page saying another figure is not where the claim stands


def test_a_research_reports_body_shows_the_page_its_claim_was_found_on(tmp_path: Path) -> None:
    pdf = Response(200, pages_pdf_bytes([["Rhine freight", "The Rhine carried a record amount of freight, some"],
                                         ["180 million tonnes in 2022, more than the year before.", "Duisburg is the "
                                          "largest inland port on the river."]]), content_type="application/pdf")
    claim = "The Rhine carried 180 million tonnes of freight in 2022 [1]."
    question = "How much freight does the Rhine carry?"
    w = World(question, [question], {question: Sub(["/rhine.pdf"], claim)}, {"/rhine.pdf": pdf},
              writer=lambda prompt: "## Findings\n\n" + claim + " Duisburg is the largest inland port on the river "
                                    "[1].\n")
    with LoopbackServer(w) as server:
        w.base = server.url
        proc = run_main(tmp_path, "research", question, "-o", "report.md", "--model", "openai:gpt-4.1-mini",
                        env=clean_env(server, SCRAPE_ALLOW_PRIVATE_URLS="1", AGENT_SEARCH="0", SCRAPE_HOST_GAP="0",
                                      AGENT_MAX_RETRIES="0"))
    assert proc.returncode == 0, proc.stderr
    report = (tmp_path / "report.md").read_text()
    body = report.split("## Citations checked")[0]
    assert "The Rhine carried 180 million tonnes of freight in 2022 [1, p. 2]." in body
    assert "Duisburg is the largest inland port on the river [1, p. 2]." in body
    assert "[1, p. 2] The Rhine carried 180 million tonnes of freight in 2022." in report  # as the list shows it
    html = (tmp_path / "report.html").read_text()
    assert '<sup class="cite">[<a href="#source-1">1</a>, p. 2]</sup>' in html
