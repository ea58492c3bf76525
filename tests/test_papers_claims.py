"""Claims written as researchers write them, checked through main.py against a paper found with search_papers
(loopback stand-ins answering the services' recorded bodies): "Author et al. (Year)" right and wrong, a title and
venue named, the nouns and verbs of scholarly reporting; and the page a claim cites when its passage runs across a
page break or the abstract says it too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import main
from tests.fakes.documents import pages_pdf_bytes
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import openai_reply
from tests.fakes.scholarly import DOI, Scholarly, env_for, serve

MODEL = ["--model", "openai:gpt-4.1-mini"]
SEARCH = 'Action: search_papers\nAction Input: {"query": "language model chemistry agent tools"}'


def scripted(*replies: str) -> Any:
    """An OpenAI-compatible model answering each task's turns in order."""
    def handle(req: Request) -> Response:
        turns = sum(1 for m in req.json()["messages"] if m["role"] == "assistant")
        return openai_reply(replies[min(turns, len(replies) - 1)])
    return handle


def run(monkeypatch: pytest.MonkeyPatch, tmp: Path, world: Scholarly, model: Any) -> dict[str, Any]:
    """One task through main.py; its record in results.jsonl."""
    (tmp / "tasks.txt").write_text("What did ChemCrow do?\n")
    monkeypatch.chdir(tmp)
    with serve(world), LoopbackServer(model) as llm:
        for name, value in {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": llm.url + "/v1", **env_for(world)}.items():
            monkeypatch.setenv(name, value)
        assert main.main(["tasks.txt", *MODEL, "-q"]) == 0
    return dict(json.loads((tmp / "results.jsonl").read_text()))


def test_author_et_al_year_is_held_to_the_cited_paper(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    claims = ["Bran et al. (2024) report that ChemCrow integrates 18 expert-designed tools [1].",
              "The paper by Bran et al. in Nature Machine Intelligence shows that ChemCrow guided the discovery of "
              "a novel chromophore [1].",
              "Bran et al. (2021) report that ChemCrow integrates 18 expert-designed tools [1].",
              "Smith et al. (2024) report that ChemCrow integrates 18 expert-designed tools [1].",
              "Bran et al. (2023) report that ChemCrow integrates 18 expert-designed tools [1]."]
    record = run(monkeypatch, tmp_path, Scholarly(), scripted(SEARCH, "Final Answer: " + " ".join(claims)))
    found = {c["claim"]: c for c in record["citations"]}
    assert [found[c]["verdict"] for c in claims] == ["supported", "supported", "contradicted", "contradicted",
                                                     "wrong_source"]
    assert found[claims[2]]["reason"] == "‘Bran et al. (2021)’: the paper it cites is from 2024, not 2021"
    assert found[claims[3]]["reason"] == "‘Smith et al. (2024)’: the paper it cites is by Bran et al. (2024)"
    assert found[claims[4]]["reason"] == "‘Bran et al. (2023)’ is [2], not the paper it cites"
    md = (tmp_path / "results.md").read_text()
    assert "the paper it cites is from 2024, not 2021" in md


def test_a_claim_cites_the_page_holding_its_figures_and_a_page_before_the_abstract(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    world = Scholarly()  # the paper's PDF: a sentence running from the end of page 1 into page 2, and on page 3
    world.answers["pdf"] = Response(200, pages_pdf_bytes([  # the abstract's sentence, cut by the page's lines
        ["Augmenting large language models with chemistry tools", "In our trials ChemCrow planned the synthesis of",
         "DEET, an insect repellent, which the RoboRXN platform"],
        ["then carried out in 3 steps with a 72% yield.", "Safety checks ran before each step."],
        ["By integrating 18 expert-designed tools and using GPT-4 as the", "LLM, ChemCrow augments the LLM "
         "performance in chemistry, and new capabilities emerge."]]), content_type="application/pdf")
    claims = ["ChemCrow planned the synthesis of DEET, which the RoboRXN platform carried out in 3 steps with a 72% "
              "yield [1].",
              "By integrating 18 expert-designed tools and using GPT-4 as the LLM, ChemCrow augments the LLM "
              "performance in chemistry [1].",
              "In trials ChemCrow planned the synthesis of DEET, an insect repellent [1]."]
    record = run(monkeypatch, tmp_path, world, scripted(SEARCH, f'Action: search_papers\nAction Input: {{"read": '
                                                                f'"{DOI}"}}', "Final Answer: " + " ".join(claims)))
    found = {c["claim"]: c for c in record["citations"]}
    assert [(found[c]["verdict"], found[c].get("page")) for c in claims] == [("supported", 2), ("supported", 3),
                                                                             ("supported", 1)]
    md = (tmp_path / "results.md").read_text()
    assert "[1, p. 2] ChemCrow planned the synthesis of DEET, which the RoboRXN" in md
