"""results.html: structure, escaping of hostile text, sizes of large runs, and the `report` command."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import main
from report.html import build_page, write_html
from report.html.data import load_run
from report.html.markdown import render

PAYLOADS = ['<script>alert("obs")</script>', '<img src=x onerror=alert(1)>', '"><svg onload=alert(2)>',
            "[click](javascript:alert(3))", "<a href='javascript:alert(4)'>x</a>",
            "</pre></details><script>x()</script>"]


class Page(HTMLParser):
    """Collects what a browser would treat as active content."""

    def __init__(self) -> None:
        super().__init__()
        self.scripts = 0
        self.handlers: list[str] = []
        self.hrefs: list[str] = []
        self.ids: set[str] = set()
        self.rows = 0
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.scripts += tag == "script"
        for name, value in attrs:
            if name.startswith("on"):
                self.handlers.append(f"{tag} {name}")
            if name in {"href", "src"} and value:
                self.hrefs.append(value)
            if name == "id" and value:
                self.ids.add(value)
            if name == "class" and value == "row":
                self.rows += 1


def parse(page: str) -> Page:
    parser = Page()
    parser.feed(page)
    return parser


def make_run(tmp: Path, n: int = 3, steps: int = 2, obs: str = "plain result", **extra: Any) -> Path:
    traces = tmp / "traces"
    traces.mkdir(exist_ok=True)
    lines = []
    for i in range(1, n + 1):
        rid = f"task-{i:03d}"
        record = {"key": f"k{i}", "id": rid, "index": i, "task": f"Question {i}?", "status": "answered",
                  "answer": f"Answer {i}", "sources": [f"https://example.org/{i}"], "steps": steps,
                  "prompt_tokens": 100 * i, "completion_tokens": 10, "llm_calls": steps + 1, "cost": 0.001 * i,
                  "seconds": 1.5 * i, "models": ["openai:gpt-4.1-mini"], "error": None, "level": None,
                  "workspace": str(tmp / "workspace" / rid), "expected": None, "correct": None, **extra}
        lines.append(json.dumps(record))
        events = []
        for s in range(1, steps + 1):
            events += [{"kind": "step_start", "step": s},
                       {"kind": "llm_call", "step": s, "completion": f"Thought: look up {i}.{s}\nAction: scrape\n"
                        f"Action Input: {{\"url\": \"https://example.org/{i}\"}}", "model": "openai:gpt-4.1-mini",
                        "prompt_tokens": 50, "completion_tokens": 5, "latency": 0.2, "finish_reason": "stop",
                        "cost": 0.0005},
                       {"kind": "tool_call", "step": s, "tool": "scrape", "arguments": {"url": f"https://example.org/{i}"},
                        "observation": obs, "full_observation_chars": len(obs), "duration": 0.3, "error": None}]
        events += [{"kind": "step_start", "step": steps + 1},
                   {"kind": "llm_call", "step": steps + 1, "completion": f"Thought: done\nFinal Answer: Answer {i}",
                    "model": "openai:gpt-4.1-mini", "prompt_tokens": 60, "completion_tokens": 5, "latency": 0.1,
                    "finish_reason": "stop", "cost": 0.0005},
                   {"kind": "final", "step": steps + 1, "status": "answered", "answer": f"Answer {i}"}]
        (traces / f"{rid}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    records = tmp / "results.jsonl"
    records.write_text("\n".join(lines) + "\n")
    return records


def test_page_has_summary_table_and_every_task_with_its_timeline(tmp_path: Path) -> None:
    records = make_run(tmp_path)
    out = tmp_path / "results.html"
    write_html(records, out, [tmp_path / "traces"], {"model": "openai:gpt-4.1-mini"})
    page = out.read_text()
    doc = parse(page)
    assert doc.rows == 3 and {"t-1", "t-2", "t-3", "tasks"} <= doc.ids
    assert "look up 2.1" in page and "Observation (12 chars)" in page  # thought and observation of a step
    assert "Final Answer</div><pre>Answer 2" in page  # the last step shows the answer it gave
    assert "$0.0060" in page and "openai:gpt-4.1-mini" in page  # total cost, model
    assert doc.tags.count("svg") == 2 and doc.tags.count("rect") == 6  # cost and steps charts, a bar per task
    assert '<span class="tag">scrape</span>' in page  # the source is shown with the tool that fetched it
    # Nothing is fetched from elsewhere: no external script, stylesheet, font or image.
    assert not any(h.startswith(("http", "//")) and "example.org" not in h for h in doc.hrefs)
    assert "<link" not in page and "@import" not in page and "url(" not in page


def test_hostile_text_from_pages_models_and_tasks_is_inert(tmp_path: Path) -> None:
    hostile = "\n".join(PAYLOADS)
    records = make_run(tmp_path, n=1, obs=hostile)
    rec = json.loads(records.read_text())
    rec.update(task=hostile, answer="**Bold** " + hostile, error=hostile, expected=hostile,
               sources=["javascript:alert(5)", "https://ok.example/a?x=1&y=<b>"])
    records.write_text(json.dumps(rec) + "\n")
    out = tmp_path / "results.html"
    write_html(records, out, [tmp_path / "traces"])
    doc = parse(out.read_text())
    assert doc.scripts == 1, "only the page's own script"
    assert doc.handlers == []
    assert not any(h.strip().lower().startswith("javascript:") for h in doc.hrefs)
    assert "https://ok.example/a?x=1&y=<b>" in doc.hrefs  # a real link survives, escaped in the source
    assert "<strong>Bold</strong>" in out.read_text()  # Markdown still renders around the payloads


def test_csp_allows_only_the_pages_own_script(tmp_path: Path) -> None:
    out = tmp_path / "results.html"
    write_html(make_run(tmp_path, n=1), out, [tmp_path / "traces"])
    page = out.read_text()
    csp = page.split('http-equiv="Content-Security-Policy" content="', 1)[1].split('"', 1)[0]
    assert "default-src 'none'" in csp and "script-src 'sha256-" in csp and "unsafe-inline" not in csp.split(
        "script-src", 1)[1]


def test_markdown_renders_lists_code_and_links_but_no_other_scheme() -> None:
    html = render("# Title\n- one `x<y`\n- two\n\n```\n<b>raw</b>\n```\nsee [doc](https://a.example/d) "
                  "and https://b.example/x. [bad](javascript:alert(1))")
    assert "<ul><li>one <code>x&lt;y</code></li><li>two</li></ul>" in html
    assert "<pre><code>&lt;b&gt;raw&lt;/b&gt;</code></pre>" in html
    assert 'href="https://a.example/d"' in html and 'href="https://b.example/x"' in html
    assert 'href="javascript' not in html and "[bad](javascript:alert(1))" in html  # left as text


def test_cut_observation_links_to_the_saved_full_text_and_format_errors_are_marked(tmp_path: Path) -> None:
    records = make_run(tmp_path, n=1, steps=1)
    trace = tmp_path / "traces" / "task-001.jsonl"
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    events[2].update(observation="x" * 500, full_observation_chars=90_000)
    events.insert(3, {"kind": "tool_call", "step": 2, "tool": None, "arguments": None,
                      "observation": "Error: no Action Input", "duration": 0.0, "error": "format"})
    trace.write_text("".join(json.dumps(e) + "\n" for e in events))
    saved = tmp_path / "workspace" / "task-001" / "observations"
    saved.mkdir(parents=True)
    (saved / "step-01.txt").write_text("full")
    out = tmp_path / "results.html"
    write_html(records, out, [tmp_path / "traces"])
    page = out.read_text()
    assert "the model saw 500 of 90,000 chars" in page
    assert (saved / "step-01.txt").as_uri() in parse(page).hrefs
    assert "format error" in page


def test_scored_runs_show_accuracy_per_level_and_both_verdicts(tmp_path: Path) -> None:
    records = make_run(tmp_path, n=2, expected="42", level="1", correct=True, correct_official=False)
    out = tmp_path / "results.html"
    write_html(records, out, [tmp_path / "traces"])
    page = out.read_text()
    assert "2/2 = 100.0%" in page and "level 1: 2/2" in page
    assert "official GAIA scorer: incorrect" in page


def test_a_run_too_large_to_inline_moves_timelines_to_per_task_pages(tmp_path: Path, monkeypatch: Any) -> None:
    from report import html as report_html

    monkeypatch.setattr(report_html, "MAX_PAGE_BYTES", 120_000)  # benchmarks/html_report.py measures 2,000 tasks
    records = make_run(tmp_path, n=40, steps=5, obs="word " * 800)
    out = tmp_path / "results.html"
    size = write_html(records, out, [tmp_path / "traces"])
    assert size <= 120_000 and parse(out.read_text()).rows == 40
    details = tmp_path / "results_tasks"
    assert len(list(details.glob("*.html"))) == 40
    assert "results_tasks/task-040.html" in out.read_text()
    detail = (details / "task-040.html").read_text()
    assert "look up 40.5" in detail and parse(detail).scripts == 0
    make_run(tmp_path, n=2)  # a smaller run written to the same place inlines again and drops the folder
    write_html(records, out, [tmp_path / "traces"])
    assert not details.exists()


def test_live_page_differs_only_by_its_polling_note(tmp_path: Path) -> None:
    run = load_run(make_run(tmp_path, n=1), [tmp_path / "traces"], {})
    live = build_page(run, tmp_path / "results.html", live=True, version="v1")
    assert 'id="live"' in live and 'data-version="v1"' in live and "connect-src 'self'" in live


def test_report_command_rebuilds_html_and_markdown_from_an_old_run(tmp_path: Path, capsys: Any) -> None:
    records = make_run(tmp_path, n=2)
    old = [json.loads(line) for line in records.read_text().splitlines()]
    for r in old:  # a run from before this feature had no extra fields
        r.pop("workspace")
    records.write_text("".join(json.dumps(r) + "\n" for r in old))
    assert main.main(["report", str(records)]) == 0
    assert (tmp_path / "results.html").is_file() and "Answer 2" in (tmp_path / "results.md").read_text()
    assert parse((tmp_path / "results.html").read_text()).rows == 2


def test_report_command_refuses_a_file_without_records(tmp_path: Path, capsys: Any) -> None:
    questions = tmp_path / "set.jsonl"
    questions.write_text('{"question": "q", "answer": "a"}\n')
    assert main.main(["report", str(questions)]) == 2
    assert "no task records" in capsys.readouterr().err
    assert not (tmp_path / "set.html").exists()


def test_a_run_writes_results_html_and_a_rerun_keeps_the_previous_one(tmp_path: Path, monkeypatch: Any) -> None:
    from tests.fakes.scripted import ScriptedLLM

    (tmp_path / "tasks.txt").write_text("What is 6 * 7?\n")
    for answer in ("first answer", "second answer"):
        llm = ScriptedLLM([f"Final Answer: {answer}"])
        monkeypatch.setattr("llm.build_llm", lambda settings, _llm=llm, **kw: _llm)
        assert main.main(["tasks.txt", "-o", "results.md", "-q"]) == 0
    assert "second answer" in (tmp_path / "results.html").read_text()
    assert "first answer" in (tmp_path / "results.prev.html").read_text()
    assert parse((tmp_path / "results.html").read_text()).rows == 1
    assert main.main(["tasks.txt", "-o", "other.md", "-q", "--no-html"]) == 0
    assert not (tmp_path / "other.html").exists()


def test_an_html_report_path_gets_its_own_twin_name(tmp_path: Path, monkeypatch: Any) -> None:
    from tests.fakes.scripted import ScriptedLLM

    (tmp_path / "tasks.txt").write_text("What is 6 * 7?\n")
    llm = ScriptedLLM(["Final Answer: 42"])
    monkeypatch.setattr("llm.build_llm", lambda settings, **kw: llm)
    assert main.main(["tasks.txt", "-o", "out.html", "-q"]) == 0
    assert "# Research results" in (tmp_path / "out.html").read_text()  # the Markdown report, as asked
    assert "<!DOCTYPE html>" in (tmp_path / "out.report.html").read_text()
