"""`main.py research` end to end: a scripted model on loopback plans, researches loopback pages and writes;
every citation of the delivered report is checked against the text those pages gave."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.cli import trust
from tests.fakes.deep_research import Sub, World, cut_reply, page
from tests.fakes.loopback import LoopbackServer, Response
from tests.fakes.providers import openai_error, openai_reply
from tests.fakes.ray_cluster import clean_env, ray_available

ROOT = Path(__file__).resolve().parent.parent
MODEL = "openai:gpt-4.1-mini"
QUESTION = "How are the Rhine and the Danube used for shipping?"
PLAN = ["How much freight does the Rhine carry?", "How long is the navigable Danube?"]
RHINE = page("Rhine freight", "The Rhine carried 187 million tonnes of freight in 2022.\n\n"
                              "Duisburg is the largest inland port on the river.")
DANUBE = page("Danube waterway", "The Danube is navigable for 2,415 km from Kelheim to the Black Sea.\n\n"
                                 "It crosses ten countries.")
FINDINGS = {PLAN[0]: Sub(["/rhine"], "The Rhine carried 187 million tonnes of freight in 2022 [1]."),
            PLAN[1]: Sub(["/danube"], "The Danube is navigable for 2,415 km [1].")}
GOOD = ("## Rhine\n\nThe Rhine carried 187 million tonnes of freight in 2022 [1].\n\n"
        "## Danube\n\nThe Danube is navigable for 2,415 km [2].\n")
BAD = GOOD + ("\n## Outlook\n\nThe Rhine carried 9 million containers in 2022 [1]. "
              "The Danube is navigable for 2,415 km [1]. Traffic doubled since 1990 [7].\n")


def world(writer: Any = None, repair: Any = None, subs: dict[str, Sub] | None = None,
          pages: dict[str, Response] | None = None, plan: list[str] | None = None) -> World:
    return World(QUESTION, plan or PLAN, subs or dict(FINDINGS), {"/rhine": RHINE, "/danube": DANUBE} if pages is None
                 else pages, writer=writer or (lambda prompt: GOOD), repair=repair)


def research(server: LoopbackServer, tmp: Path, *extra: str, question: str = QUESTION,
             env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "OPENAI_API_KEY": "sk-test", "SCRAPE_ALLOW_PRIVATE_URLS": "1", "SCRAPE_HOST_GAP": "0",
                "AGENT_SEARCH": "0", "AGENT_MAX_RETRIES": "0", **(env or {})}
    return subprocess.run([sys.executable, str(ROOT / "main.py"), "research", question, "-o", "report.md",
                           "--model", MODEL, "--base-url", server.url + "/v1", *extra],
                          cwd=tmp, env=full_env, capture_output=True, text=True, timeout=180)


def run_with(w: World, tmp: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    with LoopbackServer(w) as server:
        w.base = server.url
        return research(server, tmp, *extra)


def stored(tmp: Path) -> dict[str, Any]:
    runs = sorted((tmp / "runs").iterdir())
    return json.loads((runs[-1] / "report.json").read_text())


def test_a_report_with_sections_one_source_list_and_every_citation_checked(tmp_path: Path) -> None:
    w = world()
    proc = run_with(w, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"Plan:\n1. {PLAN[0]}\n2. {PLAN[1]}")
    assert w.calls == {"plan": 1, "task": 4, "write": 1}  # two steps per sub-question; nothing to repair
    report = (tmp_path / "report.md").read_text()
    assert report.startswith(f"# Research report: {QUESTION}")
    assert "**2 claims: 2 supported, 0 unsupported, 0 wrong source, 0 fabricated, 0 not read**" in report
    assert "## Rhine\n\nThe Rhine carried 187 million tonnes of freight in 2022 [1]." in report
    base = re.search(r"\(<(http://127\.0\.0\.1:\d+)/rhine>\)", report)
    assert base is not None
    assert f"1. [Rhine freight](<{base.group(1)}/rhine>)" in report
    assert f"2. [Danube waterway](<{base.group(1)}/danube>)" in report
    assert "⚠" not in report
    html = (tmp_path / "report.html").read_text()
    assert '<a href="#source-1">1</a>' in html and "Content-Security-Policy" in html and "<script" not in html
    # the writer saw one source list with the findings renumbered to it (the Danube's own [1] is [2])
    assert "[2] Danube waterway — " in w.prompts["write"][0]
    assert "The Danube is navigable for 2,415 km [2]." in w.prompts["write"][0]
    run = sorted((tmp_path / "runs").iterdir())[-1]
    assert "187 million tonnes" in (run / "sources" / "1.txt").read_text()  # what [1] was judged against
    listed = json.loads(main_py(tmp_path, "runs", "--json").stdout)
    assert (listed["kind"], listed["title"], listed["tasks"], listed["answered"]) == ("research", QUESTION, 2, 2)
    (tmp_path / "report.md").unlink()
    rebuilt = main_py(tmp_path, "report", run.name, "-o", "again.md")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert (tmp_path / "again.md").read_text() == report and (tmp_path / "again.html").is_file()


def main_py(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "main.py"), *args], cwd=tmp, capture_output=True, text=True,
                          timeout=60, env={**os.environ, "AGENT_ENV_FILE": str(tmp / "no.env")})


def test_estimate_prices_the_plan_the_sub_questions_and_the_writer_without_a_call(tmp_path: Path) -> None:
    proc = main_py(tmp_path, "research", QUESTION, "--model", MODEL, "--breadth", "4", "--estimate",
                   "--max-run-cost", "2")
    assert proc.returncode == 0, proc.stderr
    assert "up to 4 sub-questions" in proc.stdout and "model openai:gpt-4.1-mini, $0.40 in / $1.60 out" in proc.stdout
    assert re.search(r"expected cost: \$0\.\d{4} \(sub-questions: assumed 8 calls a task", proc.stdout)
    assert "worst case: $2.00 (--max-run-cost $2.00" in proc.stdout
    assert not (tmp_path / "runs").exists()


def test_failing_claims_go_back_once_and_what_still_fails_is_marked(tmp_path: Path) -> None:
    def repair(prompt: str) -> str:  # fixes the wrong source, leaves the invented figure, drops nothing else
        assert "wrong source: its facts are in [2], not in [1]" in prompt
        assert "fabricated: [7] is not one of the sources" in prompt and "unsupported" in prompt
        return BAD.replace("2,415 km [1]. Traffic", "2,415 km [2]. Traffic")

    w = world(writer=lambda prompt: BAD, repair=repair)
    proc = run_with(w, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert w.calls["write"] == 1 and w.calls["repair"] == 1
    report = (tmp_path / "report.md").read_text()
    assert "The Rhine carried 9 million containers in 2022 [1] ⚠ unsupported. " in report
    assert "Traffic doubled since 1990 ⚠ unsupported (fabricated)." in report  # its [7] named no source: gone
    assert "The Danube is navigable for 2,415 km [2]. Traffic" in report  # repaired by the writer
    assert "**5 claims: 3 supported, 1 unsupported, 0 wrong source, 1 fabricated, 0 not read** · 2 claims marked" \
        in report
    data = stored(tmp_path)
    assert len(data["repair"]["failing"]) == 3 and len(data["repair"]["still_failing"]) == 2
    assert "3 failed the first check, 1 repaired by the writer, 2 marked ⚠ unsupported" in proc.stderr


def test_a_cap_that_stops_the_research_midway_gives_a_partial_report_and_resume_runs_only_the_rest(
        tmp_path: Path) -> None:
    costly = {q: Sub(sub.paths, sub.answer, prompt_tokens=100_000) for q, sub in FINDINGS.items()}  # $0.04 a call
    w = world(subs=costly)
    proc = run_with(w, tmp_path, "--max-run-cost", "0.05", "--concurrency", "1")
    assert proc.returncode == 1, proc.stderr
    report = (tmp_path / "report.md").read_text()
    assert report.startswith(f"# Partial research report: {QUESTION}")
    assert ("> **Partial report:** the run's cost cap of $0.0500 (--max-run-cost) was reached; 1 of 2 "
            "sub-questions gave no findings (2: not started)") in report
    assert f"2. {PLAN[1]} — **not answered** (not started: the run's cost cap of $0.0500" in report
    assert "write" not in w.calls  # no money left for the writer: the findings are the sections
    assert "## How much freight does the Rhine carry?\n\nThe Rhine carried 187 million tonnes of freight in " \
           "2022 [1]." in report
    assert re.search(r"resume with: python \S*main.py research .* --resume", proc.stderr)
    w2 = world()
    proc = run_with(w2, tmp_path, "--resume")
    assert proc.returncode == 0, proc.stderr
    assert w2.calls == {"task": 2, "write": 1}  # no new plan; only the Danube's sub-question ran
    report = (tmp_path / "report.md").read_text()
    assert report.startswith("# Research report:") and "2,415 km [2]" in report
    assert len(list((tmp_path / "runs").iterdir())) == 1  # the same run, continued


def test_a_dead_sub_question_is_named_and_the_rest_is_reported(tmp_path: Path) -> None:
    subs = dict(FINDINGS)
    subs[PLAN[1]] = Sub([], openai_error(429, "Rate limit reached for requests", type_="requests",
                                         code="rate_limit_exceeded"))
    w = world(subs=subs, writer=lambda prompt: "## Rhine\n\nThe Rhine carried 187 million tonnes of freight in "
                                              "2022 [1].\n")
    proc = run_with(w, tmp_path)
    assert proc.returncode == 1, proc.stderr
    report = (tmp_path / "report.md").read_text()
    assert report.startswith("# Partial research report:")
    assert "1 of 2 sub-questions gave no findings (2: " in report and "Rate limit reached" in report
    assert f"2. {PLAN[1]} — **not answered** (error: " in report
    assert "**1 claims: 1 supported" in report


def test_a_writer_reply_cut_off_at_max_tokens_is_continued(tmp_path: Path) -> None:
    def writer(prompt: str) -> Any:
        if prompt.startswith("CONTINUE:"):
            return "gable for 2,415 km [2].\n"
        return cut_reply(GOOD[:GOOD.index("gable")])

    w = world(writer=writer)
    proc = run_with(w, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert w.calls["write"] == 2
    assert "The Danube is navigable for 2,415 km [2]." in (tmp_path / "report.md").read_text()


def test_a_writer_reply_still_cut_off_ends_at_a_whole_sentence_and_says_so(tmp_path: Path) -> None:
    w = world(writer=lambda prompt: cut_reply("The Rhine carried 187 million tonnes of freight in 2022 [1]. "
                                              "The Danube is navi") if not prompt.startswith("CONTINUE:")
              else cut_reply(" and so"))
    proc = run_with(w, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert w.calls["write"] == 3  # the reply and two continuations
    report = (tmp_path / "report.md").read_text()
    assert "freight in 2022 [1].\n\n*⚠ The writer's reply was cut off here at the model's output limit" in report
    assert "Danube is navi" not in report and "and so" not in report


def test_when_nothing_could_be_read_no_report_with_citations_is_made_up(tmp_path: Path) -> None:
    w = world(pages={})
    proc = run_with(w, tmp_path)
    assert proc.returncode == 1, proc.stderr
    report = (tmp_path / "report.md").read_text()
    assert report.startswith(f"# No report: nothing could be read: {QUESTION}")
    assert "Nothing could be read for this question" in report and "claims:" not in report
    assert re.search(r"- \[http://127\.0\.0\.1:\d+/rhine\]\(<[^>]+>\) — [^\n]*404", report)
    assert "write" not in w.calls and "[1]" not in report.split("## Sources")[0]


def test_ctrl_c_stops_the_research_and_the_report_is_written_from_what_was_found(tmp_path: Path) -> None:
    subs = dict(FINDINGS)
    danube = threading.Event()  # its model answers only once the Ctrl-C was taken: a busy machine cannot reorder it
    subs[PLAN[1]] = Sub(["/danube"], "The Danube is navigable for 2,415 km [1].", gate=danube)
    w = world(subs=subs)
    with LoopbackServer(w) as server:
        w.base = server.url
        env = {**os.environ, "OPENAI_API_KEY": "sk-test", "SCRAPE_ALLOW_PRIVATE_URLS": "1", "SCRAPE_HOST_GAP": "0",
               "AGENT_SEARCH": "0"}
        proc = subprocess.Popen([sys.executable, str(ROOT / "main.py"), "research", QUESTION, "-o", "report.md",
                                 "--model", MODEL, "--base-url", server.url + "/v1"], cwd=tmp_path, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stderr is not None
        for line in proc.stderr:
            if line.startswith("[1/2] sub-01-"):  # the Rhine is done, the Danube's model is still thinking
                break
        proc.send_signal(signal.SIGINT)
        for line in proc.stderr:
            if line.startswith("stopping:"):
                break
        danube.set()
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    report = (tmp_path / "report.md").read_text()
    assert report.startswith("# Partial research report:")
    assert "> **Partial report:** the research was stopped by the user (Ctrl-C) after reading 2 sources (2 web " \
           "pages), listed under Sources" in report
    assert "The Rhine carried 187 million tonnes of freight in 2022 [1]." in report
    assert f"2. {PLAN[1]} — **not answered** (stopped: after reading 1 source)" in report
    assert "write" not in w.calls


def test_files_given_with_the_question_are_in_every_sub_question_and_cited_like_pages(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("Our barges carried 41,200 tonnes on the Rhine in 2024.\n")
    (tmp_path / "costs.csv").write_text("river,eur_per_tonne\nrhine,12\n")
    subs = {PLAN[0]: Sub(["file:notes.txt"], "Our barges carried 41,200 tonnes on the Rhine in 2024 [1]."),
            PLAN[1]: Sub(["file:notes.txt", "/danube"], "The Danube is navigable for 2,415 km [2].")}
    w = world(subs=subs, writer=lambda prompt: "## Our traffic\n\nOur barges carried 41,200 tonnes on the Rhine in "
                                               "2024 [1]. The Danube is navigable for 2,415 km [2].\n")
    proc = run_with(w, tmp_path, "--file", "notes.txt", "--file", "costs.csv")
    assert proc.returncode == 0, proc.stderr
    report = (tmp_path / "report.md").read_text()
    assert "1. `notes.txt`" in report and "2. [Danube waterway]" in report  # one entry, read by both
    assert "**2 claims: 2 supported" in report
    assert "Attached files (in your workspace): notes.txt, costs.csv." in w.prompts["task"][0]
    assert "The files notes.txt, costs.csv come with the question" in w.prompts["plan"][0]
    run = sorted((tmp_path / "runs").iterdir())[-1]
    assert sorted(p.name for p in (run / "workspace").glob("sub-*/costs.csv")) == ["costs.csv", "costs.csv"]


@pytest.mark.skipif(ray_available() is not None, reason=str(ray_available()))
def test_with_executor_ray_the_sub_questions_run_on_a_cluster_and_their_sources_come_back(tmp_path: Path) -> None:
    w = world(writer=lambda prompt: BAD, repair=lambda prompt: GOOD)
    with LoopbackServer(w) as server:
        w.base = server.url
        env = clean_env(tmp_path / "home", OPENAI_API_KEY="sk-test", SCRAPE_ALLOW_PRIVATE_URLS="1",
                        SCRAPE_HOST_GAP="0", AGENT_SEARCH="0", AGENT_ENV_FILE=str(tmp_path / "no.env"))
        proc = subprocess.run([sys.executable, str(ROOT / "main.py"), "research", QUESTION, "-o", "report.md",
                               "--model", MODEL, "--base-url", server.url + "/v1", "--executor", "ray"],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert w.calls["repair"] == 1  # the texts came back from the nodes: the bad citations were found
    report = (tmp_path / "report.md").read_text()
    assert "**2 claims: 2 supported" in report and "2. [Danube waterway]" in report
    run = sorted((tmp_path / "runs").iterdir())[-1]
    assert len(list((run / "traces").glob("sub-*.jsonl"))) == 2  # written by the driver, from the nodes


def test_markup_and_escape_sequences_from_the_model_and_pages_stay_inert(tmp_path: Path) -> None:
    hostile = ('<img src="http://attacker.example/i.png" onerror="alert(1)"><script>alert(2)</script> '
               '![x](http://attacker.example/pixel.png) [y](javascript:alert(3))')
    plan = [PLAN[0] + "\x1b]0;pwned\x07\x1b[31m", PLAN[1]]
    subs = {PLAN[0] + " ]0;pwned [31m": FINDINGS[PLAN[0]], PLAN[1]: FINDINGS[PLAN[1]]}  # as the plan keeps it
    pages = {"/rhine": page("Rhine <script>alert(4)</script> freight", "The Rhine carried 187 million tonnes of "
                                                                       "freight in 2022."), "/danube": DANUBE}
    w = world(plan=plan, subs=subs, pages=pages, writer=lambda prompt: GOOD + "\n" + hostile + "\n")
    proc = run_with(w, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout + proc.stderr
    report = (tmp_path / "report.md").read_text()
    assert not re.search(r"(?<!\\)<(script|img)", report) and "](javascript:" not in report
    assert "![x]" not in report and "[x](http://attacker.example/pixel.png)" in report  # a link, never fetched
    assert "[Rhine \\<script\\>alert\\(4\\)\\</script\\> freight](<http" in report  # the page's title, as text
    html = (tmp_path / "report.html").read_text()
    assert "<script" not in html and "<img" not in html and 'href="javascript' not in html


def test_a_writer_that_cannot_be_called_leaves_the_findings_checked_as_a_partial_report(tmp_path: Path) -> None:
    w = world(writer=lambda prompt: openai_error(500, "the model server broke", type_="server_error"))
    proc = run_with(w, tmp_path)
    assert proc.returncode == 1, proc.stderr
    report = (tmp_path / "report.md").read_text()
    assert report.startswith("# Partial research report:")
    assert "> **Partial report:** the writer could not be called (" in report and "model server broke" in report
    assert f"## {PLAN[1]}\n\nThe Danube is navigable for 2,415 km [2]." in report  # its [1] renumbered
    assert "**2 claims: 2 supported" in report


def test_pages_read_but_no_sub_question_answered_gives_no_invented_report(tmp_path: Path) -> None:
    broke = openai_error(500, "the model server broke", type_="server_error")
    w = world(subs={PLAN[0]: Sub(["/rhine"], broke), PLAN[1]: Sub(["/danube"], broke)})
    proc = run_with(w, tmp_path)
    assert proc.returncode == 1, proc.stderr
    report = (tmp_path / "report.md").read_text()
    assert report.startswith("# Partial research report:") and "No sub-question's research got to an answer" in report
    assert "write" not in w.calls and "claims:" not in report
    assert "Also read, not cited:" in report and "[Rhine freight]" in report


def test_a_writer_alias_of_the_models_file_writes_on_its_own_server_and_the_researchers_stay_on_theirs(
        tmp_path: Path) -> None:
    researchers, writes = world(writer=lambda prompt: "## Wrong\n\nThe researchers' server must not write [1].\n"), []

    def writer_server(req: Any) -> Response:
        first = req.json()["messages"][0]["content"]
        writes.append((req.path, req.headers.get("authorization"), req.json()["model"], first))
        return openai_reply(GOOD)

    with LoopbackServer(researchers) as first, LoopbackServer(writer_server) as second:
        researchers.base = first.url
        (tmp_path / "models.toml").write_text(f'[writer]\nmodel = "big-writer"\nbase_url = "{second.url}/v1"\n'
                                              'api_key_env = "WRITER_KEY"\n')
        trust(tmp_path)  # its alias sends WRITER_KEY to its own base_url: the user trusted the folder
        proc = research(first, tmp_path, "--writer-model", "writer", env={"WRITER_KEY": "writer-secret-key"})
    assert proc.returncode == 0, proc.stderr
    assert researchers.calls == {"plan": 1, "task": 4}  # planning and the sub-questions: the first server
    [(path, auth, model, prompt)] = writes  # the report: the writer's server, its key, its model
    assert (path, auth, model) == ("/v1/chat/completions", "Bearer writer-secret-key", "big-writer")
    assert prompt.startswith("You write a research report")
    assert "## Rhine" in (tmp_path / "report.md").read_text()

