"""Claims judged on what they say, through main.py as a user runs it: a scripted model on loopback reads a
loopback page and answers; results.jsonl, results.md and results.html give each claim supported, contradicted
or unsupported with why and the passage; `ask` the same; --judge-model adds a model's verdict beside it, on the
task's cost; a research report's repair round gets contradicted claims back and marks what stays."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.cli import clean_env, refuse_all, run_main
from tests.fakes.deep_research import Sub, World, page
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import openai_reply

RHINE = page("Rhine freight", "The Rhine carried 180 million tonnes in 2022, more than the year before.\n\n"
                              "Duisburg is the largest inland port on the river.")
CLAIMS = {  # claim -> (verdict, words of its reason)
    "The Rhine carried 180 million tonnes in 2022 [1].": ("supported", ""),
    "In 2022 the Rhine transported 180 million tonnes [1].": ("supported", ""),  # reworded, word order
    "The Danube carried 180 million tonnes in 2022 [1].": ("unsupported", "‘Danube’ is nowhere in the source"),
    "The Rhine did not carry 180 million tonnes in 2022 [1].": ("contradicted", "says ‘not’, the source does not"),
    "The Rhine didn't carry 180 million tonnes in 2022 [1].": ("contradicted", "says ‘not’, the source does not"),
    "The Rhine carried 180 million tonnes in 2022, less than the year before [1].":
        ("contradicted", "says ‘less’, the source says ‘more’"),
    "The Rhine carried 190 million tonnes in 2022 [1].": ("contradicted", "says 190 million tonnes, the source says"),
    "Duisburg is the smallest inland port on the river [1].": ("contradicted", "says ‘smallest’, the source says "
                                                                              "‘largest’"),
}
JUDGE_MARK = "You check whether a passage of a source supports a claim"


def model(answer: str, judged: list[str]) -> Any:
    """A scripted model: it scrapes /rhine, then answers; as the judge it says SUPPORTED unless the claim
    names the year 2021 (it never sees the claims the check already fails)."""

    def handle(req: Request) -> Response:
        if req.method == "GET":
            return RHINE if req.path == "/rhine" else Response(404, "not found", content_type="text/plain")
        messages = req.json()["messages"]
        first = next(str(m["content"]) for m in messages if m["role"] == "user")
        if first.startswith(JUDGE_MARK):
            judged.append(first.split("Claim:", 1)[1].split("\n", 1)[0].strip())
            return openai_reply("CONTRADICTED" if "transported" in first.split("Claim:", 1)[1] else "SUPPORTED",
                                prompt_tokens=1000)
        if sum(1 for m in messages if m["role"] == "assistant") == 0:
            return openai_reply(f'Thought: read it\nAction: scrape\nAction Input: {{"url": "{handle.base}/rhine"}}')
        return openai_reply(f"Thought: done\nFinal Answer: {answer}")

    handle.base = ""  # type: ignore[attr-defined]
    return handle


def run_batch(tmp: Path, answer: str, *extra: str) -> tuple[Any, list[str]]:
    (tmp / "tasks.txt").write_text("How much freight does the Rhine carry?\n")
    judged: list[str] = []
    handler = model(answer, judged)
    with LoopbackServer(handler) as server:
        handler.base = server.url
        proc = run_main(tmp, "tasks.txt", "-o", "results.md", "--model", "openai:gpt-4.1-mini", *extra,
                        env=clean_env(server, SCRAPE_ALLOW_PRIVATE_URLS="1", AGENT_SEARCH="0", SCRAPE_HOST_GAP="0"))
    return proc, judged


def test_each_claim_is_judged_on_what_it_says_in_every_report(tmp_path: Path) -> None:
    proc, judged = run_batch(tmp_path, "\n".join(f"- {c}" for c in CLAIMS))
    assert proc.returncode == 0, proc.stderr
    assert judged == []  # no judge model unless asked
    record = json.loads((tmp_path / "results.jsonl").read_text().splitlines()[0])
    got = {c["claim"]: c for c in record["citations"]}
    for claim, (verdict, why) in CLAIMS.items():
        assert got[claim]["verdict"] == verdict, (claim, got[claim])
        assert why in got[claim]["reason"]
        assert got[claim]["passage"].startswith("The Rhine carried 180" if "Duisburg" not in claim else "Duisburg")
    md = (tmp_path / "results.md").read_text()
    assert "**Citations:** 8 claims: 2 supported, 5 contradicted, 1 unsupported, 0 wrong source" in md
    assert ("- ✗ **unsupported** [1] The Danube carried 180 million tonnes in 2022. — ‘Danube’ is nowhere in the "
            "source") in md
    assert "- ✗ **contradicted** [1] The Rhine did not carry 180 million tonnes in 2022. — says ‘not’" in md
    assert "- ✓ supported [1] In 2022 the Rhine transported 180 million tonnes." in md
    html = (tmp_path / "results.html").read_text()
    assert '<span class="no"><b>✗ contradicted</b></span>' in html
    assert "says ‘less’, the source says ‘more’" in html
    assert '<summary class="meta">what [1] says there</summary><pre>The Rhine carried 180 million tonnes' in html
    assert "8 claims: 2 supported, 5 contradicted, 1 unsupported" in proc.stderr  # the terminal's run line


def test_a_judge_model_gives_its_verdict_beside_the_checks_and_is_paid_for(tmp_path: Path) -> None:
    answer = ("The Rhine carried 180 million tonnes in 2022 [1]. In 2022 the Rhine transported 180 million tonnes "
              "[1]. The Rhine did not carry 180 million tonnes in 2022 [1].")
    (tmp_path / "plain").mkdir()
    (tmp_path / "judged").mkdir()
    proc, _ = run_batch(tmp_path / "plain", answer)
    assert proc.returncode == 0, proc.stderr
    plain = json.loads((tmp_path / "plain" / "results.jsonl").read_text().splitlines()[0])
    proc, judged = run_batch(tmp_path / "judged", answer, "--judge-model", "openai:gpt-4.1-mini")
    assert proc.returncode == 0, proc.stderr
    # only the two claims the check supports go to the judge; the contradicted one is flagged either way
    assert judged == ["The Rhine carried 180 million tonnes in 2022.", "In 2022 the Rhine transported 180 million "
                                                                       "tonnes."]
    record = json.loads((tmp_path / "judged" / "results.jsonl").read_text().splitlines()[0])
    assert [(c["verdict"], c.get("model_verdict")) for c in record["citations"]] == [
        ("supported", "supported"), ("supported", "contradicted"), ("contradicted", None)]
    # two calls of 1,000 prompt tokens and 5 completion tokens at gpt-4.1-mini's $0.40 / $1.60 per million
    assert record["cost"] == pytest.approx(plain["cost"] + 2 * (1000 * 0.40 + 5 * 1.60) / 1e6)
    md = (tmp_path / "judged" / "results.md").read_text()
    assert "- ✓ supported (model: contradicted) [1] In 2022 the Rhine transported 180 million tonnes." in md


def test_ask_judges_the_claims_of_its_answer_the_same_way(tmp_path: Path) -> None:
    judged: list[str] = []
    handler = model("The Danube carried 180 million tonnes in 2022 [1]. The Rhine did not carry 180 million tonnes "
                    "in 2022 [1].", judged)
    with LoopbackServer(handler) as server:
        handler.base = server.url
        proc = run_main(tmp_path, "ask", "How much freight does the Rhine carry?", "--model", "openai:gpt-4.1-mini",
                        env=clean_env(server, SCRAPE_ALLOW_PRIVATE_URLS="1", AGENT_SEARCH="0", SCRAPE_HOST_GAP="0"))
    assert proc.returncode == 0, proc.stderr
    assert "Citations: 2 claims: 0 supported, 1 contradicted, 1 unsupported" in proc.stdout
    assert "✗ unsupported [1] The Danube carried 180 million tonnes in 2022. — ‘Danube’ is nowhere" in proc.stdout
    assert "✗ contradicted [1] The Rhine did not carry 180 million tonnes in 2022. — says ‘not’" in proc.stdout


BAD = ("## Rhine\n\nThe Rhine carried 180 million tonnes in 2022 [1]. The Rhine did not carry 180 million tonnes "
       "in 2022 [1]. The Danube carried 180 million tonnes in 2022 [1].\n")


def test_a_research_report_sends_contradicted_claims_back_and_marks_what_stays(tmp_path: Path) -> None:
    prompts: list[str] = []

    def repair(prompt: str) -> str:  # the writer drops the Danube claim and leaves the negated one
        prompts.append(prompt)
        return BAD.replace(" The Danube carried 180 million tonnes in 2022 [1].", "")

    w = World("How much freight does the Rhine carry?", ["How much freight does the Rhine carry in a year?"],
              {"How much freight does the Rhine carry in a year?": Sub(["/rhine"], "The Rhine carried 180 million "
                                                                                  "tonnes in 2022 [1].")},
              {"/rhine": RHINE}, writer=lambda prompt: BAD, repair=repair)
    with LoopbackServer(w) as server:
        w.base = server.url
        proc = run_main(tmp_path, "research", w.question, "-o", "report.md", "--model", "openai:gpt-4.1-mini",
                        env=clean_env(server, SCRAPE_ALLOW_PRIVATE_URLS="1", AGENT_SEARCH="0", SCRAPE_HOST_GAP="0",
                                      AGENT_MAX_RETRIES="0"))
    assert proc.returncode == 0, proc.stderr
    assert w.calls["repair"] == 1
    failures = prompts[0].split("\n\nRevise the report.")[0].splitlines()[2:]
    assert len(failures) == 2 and failures[0].startswith("- “The Rhine did not carry 180 million tonnes in 2022")
    assert "contradicted: [1] says otherwise: says ‘not’, the source does not; it says: “The Rhine carried" \
        in failures[0]
    assert failures[1].startswith("- “The Danube carried") and "unsupported: ‘Danube’ is nowhere" in failures[1]
    report = (tmp_path / "report.md").read_text()
    assert "The Rhine did not carry 180 million tonnes in 2022 [1] ⚠ contradicted." in report
    assert "Danube" not in report.split("## Citations checked")[0]
    assert "**2 claims: 1 supported, 1 contradicted, 0 unsupported" in report
    assert "- ✗ **contradicted** [1] The Rhine did not carry 180 million tonnes in 2022. — says ‘not’" in report
    html = (tmp_path / "report.html").read_text()
    assert '<summary class="meta">what [1] says there</summary><pre>The Rhine carried 180 million tonnes' in html


def test_a_judge_model_judges_the_research_reports_claims_too(tmp_path: Path) -> None:
    judged: list[str] = []

    def judge(prompt: str) -> str:
        judged.append(prompt.split("Claim:", 1)[1].split("\n", 1)[0].strip())
        return "SUPPORTED"

    w = World("How much freight does the Rhine carry?", ["How much freight does the Rhine carry in a year?"],
              {"How much freight does the Rhine carry in a year?": Sub(["/rhine"], "The Rhine carried 180 million "
                                                                                  "tonnes in 2022 [1].")},
              {"/rhine": RHINE}, writer=lambda prompt: "## Rhine\n\nIn 2022 the Rhine transported 180 million "
                                                      "tonnes [1].\n", judge=judge)
    with LoopbackServer(w) as server:
        w.base = server.url
        proc = run_main(tmp_path, "research", w.question, "-o", "report.md", "--model", "openai:gpt-4.1-mini",
                        "--judge-model", "openai:gpt-4.1-nano",
                        env=clean_env(server, SCRAPE_ALLOW_PRIVATE_URLS="1", AGENT_SEARCH="0", SCRAPE_HOST_GAP="0",
                                      AGENT_MAX_RETRIES="0"))
    assert proc.returncode == 0, proc.stderr
    # the sub-question's answer and the delivered report's one claim, each judged once
    assert judged == ["The Rhine carried 180 million tonnes in 2022.", "In 2022 the Rhine transported 180 million "
                                                                       "tonnes."]
    report = (tmp_path / "report.md").read_text()
    assert "- ✓ supported (model: supported) [1] In 2022 the Rhine transported 180 million tonnes." in report


def test_a_bad_judge_model_stops_the_run_before_any_call(tmp_path: Path) -> None:
    (tmp_path / "tasks.txt").write_text("How much freight does the Rhine carry?\n")
    with LoopbackServer(refuse_all) as server:
        proc = run_main(tmp_path, "tasks.txt", "--model", "openai:gpt-4.1-mini", "--judge-model", "nosuch:model",
                        env=clean_env(server))
    assert proc.returncode == 2 and server.requests == []
    assert proc.stderr.strip().splitlines()[-1].startswith("error: model 'nosuch:model' has no known provider")
