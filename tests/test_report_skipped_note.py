"""A run cap that kept tasks from starting is said in results.html too, and is kept beside the records file
(results.run.json) so `python main.py report results.jsonl` (HTML and Markdown) says it; results.jsonl keeps
one record per task, and a resumed run that skips nothing drops the note."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest

import main
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import openai_reply

MODEL = "openai:gpt-4.1-mini"  # $0.40 / $1.60 per million tokens: one call below costs $0.00056
NOTE = "task(s) not started: the run's cost cap of $0.0040 (--max-run-cost) left too little for another step"


class Text(HTMLParser):
    """The page's visible text, one string per text node, with the class of the element holding it."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.texts: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in {"br", "img", "meta", "link", "input", "hr"}:
            self.stack.append(dict(attrs).get("class") or "")

    def handle_endtag(self, tag: str) -> None:
        if self.stack and tag not in {"br", "img", "meta", "link", "input", "hr"}:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        if data.strip():
            self.texts.append((self.stack[-1] if self.stack else "", data.strip()))


def page_texts(path: Path) -> list[str]:
    parser = Text()
    parser.feed(path.read_text(encoding="utf-8"))
    return [text for _, text in parser.texts]


def answer_at_once(req: Request) -> Response:
    if req.method != "POST":
        return Response(404, "not found")
    return Response(200, openai_reply("Final Answer: done", 1000, 100).body)


@pytest.fixture()
def capped_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[int, int]:
    """Eight tasks under a $0.004 run cap: (exit code, how many were skipped)."""
    monkeypatch.chdir(tmp_path)
    tasks = [f"Question number {n}?" for n in range(1, 9)]
    Path("tasks.txt").write_text("\n\n".join(tasks) + "\n")
    with LoopbackServer(answer_at_once) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        monkeypatch.setenv("AGENT_MAX_TOKENS", "200")
        code = main.main(["tasks.txt", "--model", MODEL, "--max-run-cost", "0.004", "-q"])
    header, *records = [json.loads(x) for x in Path("results.jsonl").read_text().splitlines()]
    assert header["run"] == "stopped"  # the run line of a stopped run (report/stopped.py) ...
    assert all("status" in r for r in records)  # ... then one record per task, nothing else
    return code, len(tasks) - len(records)


def test_the_html_report_says_how_many_tasks_the_run_cap_skipped(capped_run: tuple[int, int]) -> None:
    code, skipped = capped_run
    assert code == 1 and skipped > 0
    assert any(t.startswith(f"{skipped} {NOTE}") for t in page_texts(Path("results.html")))


def test_the_report_command_rebuilds_the_note_from_the_records_file(capped_run: tuple[int, int],
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    _, skipped = capped_run
    Path("results.html").unlink()
    Path("results.md").unlink()
    assert main.main(["report", "results.jsonl"]) == 0
    assert any(t.startswith(f"{skipped} {NOTE}") for t in page_texts(Path("results.html")))
    assert f"{skipped} {NOTE}" in Path("results.md").read_text()


def test_a_resumed_run_neither_warns_about_the_note_nor_keeps_it_once_no_task_is_skipped(
        capped_run: tuple[int, int], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    with LoopbackServer(answer_at_once) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        main.main(["tasks.txt", "--model", MODEL, "--resume"])  # no cap now: the skipped tasks run
    out = capsys.readouterr()
    assert "not valid records" not in out.out + out.err
    assert NOTE not in Path("results.md").read_text()
    assert not any(NOTE in t for t in page_texts(Path("results.html")))
    assert len(Path("results.jsonl").read_text().splitlines()) == 8
    assert not Path("results.run.json").exists()
