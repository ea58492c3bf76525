"""What a research report says, through `main.py research` with a scripted model on loopback pages and the
document folders of the other tests: every source it counts as cited has a checked claim."""

from __future__ import annotations

import re
from pathlib import Path

from tests.fakes.cli import clean_env, run_main
from tests.fakes.deep_research import Sub, World
from tests.fakes.loopback import LoopbackServer
from tests.test_docs_search import folder
from tests.test_research import GOOD, run_with, stored, world

MODEL = "openai:gpt-4.1-mini"


def test_a_line_of_bare_citations_is_left_out_and_a_claim_behind_its_markers_is_checked(tmp_path: Path) -> None:
    writer = (GOOD + "\n## Sources used\n\n[1] Rhine freight — http://127.0.0.1/rhine [2]\n\n[2][1]\n\n"
              "## Ports\n\n- [1] Duisburg is the largest inland port on the river.\n")
    proc = run_with(world(writer=lambda prompt: writer), tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = (tmp_path / "report.md").read_text()
    assert "Sources used" not in report and "[2][1]" not in report  # no claim in them: left out, heading too
    assert "- Duisburg is the largest inland port on the river [1]." in report  # its markers after its words
    assert "**3 claims: 3 supported, 0 unsupported" in report
    data = stored(tmp_path)
    cited = {c["n"] for c in data["citations"]}
    assert cited == {s["n"] for s in data["sources"]} == {1, 2}
    assert "· 2 sources cited ·" in report and "2 sources cited" in proc.stderr


def test_a_section_of_nothing_but_a_documents_source_line_is_not_delivered_unchecked(tmp_path: Path) -> None:
    docs = folder(tmp_path)
    plan = ["How much cargo did the harbour handle in 2019?", "How deep will the channel be dredged?"]
    w = World("What do the harbour's documents say?", plan, {
        plan[0]: Sub(["docs:cargo tonnes"], "The harbour handled 38.6 million tonnes of cargo in 2019 [1]."),
        plan[1]: Sub(["docs:dredging channel"], "Dredging will deepen the channel to 16.5 metres [1].")}, {},
        writer=lambda prompt: ("## Cargo\n\nThe harbour handled 38.6 million tonnes of cargo in 2019 [1].\n\n"
                               "## Dredging\n\n[2] notes.md, § Dred… [1]\n"))
    with LoopbackServer(w) as server:
        w.base = server.url
        proc = run_main(tmp_path, "research", w.question, "-o", "report.md", "--model", MODEL, "--docs", str(docs),
                        env=clean_env(server, AGENT_SEARCH="0", AGENT_MAX_RETRIES="0"))
    assert proc.returncode == 0, proc.stderr
    report = (tmp_path / "report.md").read_text()
    assert "## Dredging" not in report and "notes.md, § Dred…" not in report
    assert "· 1 sources cited ·" in report and "**1 claims: 1 supported" in report
    sources = report.split("## Sources", 1)[1]
    assert re.search(r"^1\. `harbour-report\.pdf, p\. 3`$", sources, re.MULTILINE)
    assert "Also read, not cited:\n\n- `notes.md, § Dredging`" in sources
