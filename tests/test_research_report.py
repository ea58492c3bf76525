"""What a research report says, through `main.py research` with a scripted model on loopback pages and the
document folders of the other tests: every source it counts as cited has a checked claim."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from tests.fakes.cli import GUARD, ROOT, clean_env, run_main, trust
from tests.fakes.deep_research import MARK_PLAN, MARK_WRITE, Sub, World, page
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import openai_reply
from tests.fakes.real_traffic import llama_cpp_python
from tests.test_docs_search import folder
from tests.test_research import GOOD, QUESTION, research, run_with, stored, world

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


RHINE_YEARS = [f"The Rhine carried {100 + y} million tonnes of freight in {1990 + y}." for y in range(33)]
DANUBE_YEARS = [f"The Danube carried {20 + y} million tonnes of freight in {1990 + y}." for y in range(33)]
LONG_PLAN = ["How much freight did the Rhine carry each year?", "How much freight did the Danube carry each year?"]


def long_world(writer: Any = None) -> World:
    """Two sub-questions whose findings (33 cited sentences each, about 4,000 characters) outgrow a 4,096-token
    writer's share of its window."""
    return World("How did Rhine and Danube freight develop?", LONG_PLAN, {
        LONG_PLAN[0]: Sub(["/rhine"], " ".join(f"{s[:-1]} [1]." for s in RHINE_YEARS)),
        LONG_PLAN[1]: Sub(["/danube"], " ".join(f"{s[:-1]} [1]." for s in DANUBE_YEARS))},
        {"/rhine": page("Rhine freight", "\n\n".join(RHINE_YEARS)),
         "/danube": page("Danube freight", "\n\n".join(DANUBE_YEARS))}, writer=writer or (lambda prompt: ""))


WROTE = ("## Rhine\n\nThe Rhine carried 100 million tonnes of freight in 1990 [1].\n\n"
         "## Danube\n\nThe Danube carried 20 million tonnes of freight in 1990 [2].\n")


def llama_writer(window: int | None, prompts: list[tuple[str, int]]) -> Any:
    """A writer on a llama-cpp-python server (its recorded /v1/models, its recorded refusal of a prompt over its
    window): a prompt and reply budget over `window` (chars / 4 tokens) is refused as the server refuses it."""
    def handle(req: Request) -> Response:
        if req.path == "/v1/models":
            return llama_cpp_python("models")
        if not req.path.endswith("/chat/completions"):
            return llama_cpp_python("props_404")
        body = req.json()
        prompt = str(body["messages"][0]["content"])
        prompts.append((prompt, int(body["max_tokens"])))
        if window is not None and len(prompt) // 4 + int(body["max_tokens"]) > window:
            return llama_cpp_python("context_length_exceeded")  # names a 2,048-token window
        return openai_reply(WROTE, prompt_tokens=len(prompt) // 4)
    return handle


def writer_research(tmp_path: Path, toml: str, window: int | None) -> tuple[Any, list[tuple[str, int]], World]:
    w, prompts = long_world(), []
    with LoopbackServer(w) as first, LoopbackServer(llama_writer(window, prompts)) as second:
        w.base = first.url
        (tmp_path / "models.toml").write_text(toml.replace("URL", second.url + "/v1"))
        trust(tmp_path)  # its alias's base_url applies: the user trusted the folder
        proc = research(first, tmp_path, "--writer-model", "gemma", question=w.question)
    return proc, prompts, w


def test_the_writers_prompt_is_fitted_to_its_aliases_window_and_the_cut_is_said(tmp_path: Path) -> None:
    proc, prompts, w = writer_research(
        tmp_path, '[gemma]\nmodel = "gemma-3-270m"\nbase_url = "URL"\ncontext_window = 4096\n', 4096)
    assert proc.returncode == 0, proc.stderr
    [(prompt, reply)] = prompts  # one call, not refused: prompt and reply within the 4,096 tokens
    assert len(prompt) // 4 + reply <= 4096
    assert RHINE_YEARS[0][:-1] + " [1]." in prompt and DANUBE_YEARS[0][:-1] + " [2]." in prompt
    assert RHINE_YEARS[-1][:-1] not in prompt  # the end of each finding did not fit
    report = (tmp_path / "report.md").read_text()
    note = re.search(r"The writer's model holds about 1,000 tokens of prompt: 2 of 2 findings were cut to their "
                     r"first whole sentences \(([\d,]+) of ([\d,]+) characters kept\)", report)
    assert note is not None, report
    assert int(note.group(1).replace(",", "")) < int(note.group(2).replace(",", ""))
    assert "The writer's model holds about 1,000 tokens of prompt" in proc.stderr
    assert report.startswith("# Research report:") and "**2 claims: 2 supported" in report


def test_a_writer_refused_for_its_window_is_asked_again_within_the_window_the_refusal_named(tmp_path: Path) -> None:
    proc, prompts, w = writer_research(tmp_path, '[gemma]\nmodel = "gemma-3-270m"\nbase_url = "URL"\n', 2048)
    assert proc.returncode == 0, proc.stderr
    assert len(prompts) == 2  # the window was known only from the refusal (2,048 tokens)
    assert len(prompts[1][0]) < len(prompts[0][0]) and len(prompts[1][0]) // 4 + prompts[1][1] <= 2048
    report = (tmp_path / "report.md").read_text()
    assert report.startswith("# Research report:") and "**2 claims: 2 supported" in report
    assert "The writer's model holds about 1,075 tokens of prompt" in report


class HeldCalls:
    """The world's model, holding the planning call and then the writer's until the test releases each."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.release = {"plan": threading.Event(), "write": threading.Event()}

    def __call__(self, req: Request) -> Response:
        if req.method == "POST":
            first = str(req.json()["messages"][0]["content"])
            kind = "plan" if MARK_PLAN in first else "write" if first.startswith(MARK_WRITE) else None
            if kind is not None:
                self.release[kind].wait(GUARD)
        return self.world(req)


def test_slow_planning_and_writing_calls_say_they_are_still_waiting(tmp_path: Path) -> None:
    w = world()
    held = HeldCalls(w)
    heartbeat = ("import os, runpy, sys; sys.argv = sys.argv[1:]; sys.path.insert(0, os.path.dirname(sys.argv[0])); "
                 "import agent; agent.WAIT_NOTICE = 0.05; runpy.run_path(sys.argv[0], run_name='__main__')")
    # main.py as run from the command line, with a "still waiting" line every 0.05 s instead of 30 s
    with LoopbackServer(held) as server:
        w.base = server.url
        proc = subprocess.Popen([sys.executable, "-c", heartbeat, str(ROOT / "main.py"), "research", QUESTION,
                                 "-o", "report.md", "--model", MODEL], cwd=tmp_path, text=True,
                                env=clean_env(server, SCRAPE_ALLOW_PRIVATE_URLS="1", SCRAPE_HOST_GAP="0",
                                              AGENT_SEARCH="0", AGENT_MAX_RETRIES="0"),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert proc.stderr is not None
        seen = []
        try:
            for kind, line in (("plan", f"planning · {MODEL}: still waiting for the reply ("),
                               ("write", f"writing the report · {MODEL}: still waiting for the reply (")):
                for said in proc.stderr:
                    seen.append(said)
                    if said.startswith(line):
                        break
                held.release[kind].set()
        finally:
            for release in held.release.values():
                release.set()
        _, err = proc.communicate(timeout=GUARD)
    assert proc.returncode == 0, "".join(seen) + err
    assert any(s.startswith(f"planning · {MODEL}: still waiting") for s in seen), seen
    assert any(s.startswith(f"writing the report · {MODEL}: still waiting") for s in seen), seen
