"""A research stopped after reading (Ctrl-C, SIGTERM), through `main.py research` with a scripted model over the
user's documents (--docs): the partial report names what was read and who stopped it. The stop comes while a
sub-question's model call is held open by the fake server, so no timing decides what was read."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.fakes.cli import GUARD, ROOT, clean_env
from tests.fakes.deep_research import MARK_TASK, Sub, World
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.test_docs_search import folder

MODEL = "openai:gpt-4.1-mini"
QUESTION = "What do the harbour's documents say about cargo?"
PLAN = ["How much cargo did the harbour handle in 2019?"]


class Held:
    """The world's model, holding each sub-question's second call (after its first search) until released."""

    def __init__(self, world: World) -> None:
        self.world, self.arrived, self.release = world, threading.Event(), threading.Event()

    def __call__(self, req: Request) -> Response:
        if req.method == "POST":
            messages = req.json()["messages"]
            first = next((str(m["content"]) for m in messages if m["role"] == "user"), "")
            if MARK_TASK in first and sum(1 for m in messages if m["role"] == "assistant") == 1:
                self.arrived.set()
                self.release.wait(GUARD)
        return self.world(req)


def held_world() -> World:
    # two searches, then an answer: the stop comes while the second search's reply is held
    return World(QUESTION, PLAN, {PLAN[0]: Sub(["docs:cargo tonnes", "docs:cargo 2019"],
                                               "The harbour handled 38.6 million tonnes of cargo in 2019 [1].")}, {})


def stopped_research(tmp: Path, signum: int) -> tuple[subprocess.CompletedProcess[str], World]:
    """`main.py research --docs` stopped by `signum` once a sub-question has searched the documents."""
    docs, world = folder(tmp), held_world()
    held = Held(world)
    with LoopbackServer(held) as server:
        world.base = server.url
        proc = subprocess.Popen([sys.executable, str(ROOT / "main.py"), "research", QUESTION, "-o", "report.md",
                                 "--model", MODEL, "--docs", str(docs)], cwd=tmp, text=True,
                                env=clean_env(server, AGENT_SEARCH="0", AGENT_MAX_RETRIES="0"),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert proc.stderr is not None
        try:
            assert held.arrived.wait(GUARD), "the sub-question never searched the documents"
            proc.send_signal(signum)
            before = []
            for line in proc.stderr:  # the stop is heard before the held reply goes out
                before.append(line)
                if line.startswith("stopping:"):
                    break
        finally:
            held.release.set()
        out, err = proc.communicate(timeout=GUARD)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, "".join(before) + err), world


@pytest.mark.parametrize(("signum", "who"), [
    (signal.SIGINT, "the user (Ctrl-C)"), (signal.SIGTERM, "a SIGTERM signal (sent by the system or another program")])
def test_a_research_stopped_after_searching_the_documents_names_what_it_read_and_who_stopped_it(
        tmp_path: Path, signum: int, who: str) -> None:
    proc, world = stopped_research(tmp_path, signum)
    assert proc.returncode == 128 + signum, proc.stderr
    report = (tmp_path / "report.md").read_text()
    assert "Nothing was read" not in report and "tried no page" not in report
    assert report.startswith(f"# Partial research report: {QUESTION}")
    assert f"> **Partial report:** the research was stopped by {who}" in report
    assert "after reading 1 source (1 document passage), listed under Sources" in report
    assert "Also read, not cited:" in report and "- `harbour-report.pdf, p. 3`" in report
    assert f"1. {PLAN[0]} — **not answered** (stopped: after reading 1 source)" in report
    if signum == signal.SIGTERM:
        assert "stopped by the user" not in report
    assert "write" not in world.calls  # nothing answered: no writer to make a report up from titles
