"""results.html and results.md show the answers: Answer, Expected and Verdict columns, code as code, titled
sources, the attachment read or not (issue 26, item 4)."""

from __future__ import annotations

import html
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from report.html import write_html
from report.markdown import read_records, render_markdown
from tests.test_report_html import PAYLOADS, make_run, parse

CODE = 'import math\nrows = [1, 2]\nprint("<b>", math.pi)  # the area\n'


class Table(HTMLParser):
    """The task table's header cells and the text of each row's cells."""

    def __init__(self) -> None:
        super().__init__()
        self.head: list[str] = []
        self.rows: list[list[str]] = []
        self._in: str | None = None
        self._table = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table" and ("id", "tasks") in attrs:
            self._table = True
        elif self._table and tag == "tr" and ("class", "row") in attrs:
            self.rows.append([])
        elif self._table and tag in ("th", "td"):
            self._in = tag
            if tag == "th":
                self.head.append("")
            else:
                self.rows[-1].append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._table = False
        if tag in ("th", "td"):
            self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "th":
            self.head[-1] += data
        elif self._in == "td":
            self.rows[-1][-1] += data


def _table(page: str) -> Table:
    table = Table()
    table.feed(page)
    return table


def _rewrite(records: Path, change: Any) -> None:
    rows = [json.loads(line) for line in records.read_text().splitlines()]
    for row in rows:
        change(row)
    records.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_the_table_shows_each_answer_and_no_verdict_columns_without_expected_answers(tmp_path: Path) -> None:
    records = make_run(tmp_path, n=3)
    write_html(records, tmp_path / "results.html", [tmp_path / "traces"])
    table = _table((tmp_path / "results.html").read_text())
    assert table.head == ["#", "Task", "Answer", "Status", "Steps", "Tokens", "Cost", "Seconds"]
    assert [row[2] for row in table.rows] == ["Answer 1", "Answer 2", "Answer 3"]


def test_with_expected_answers_the_table_shows_expected_and_verdict(tmp_path: Path) -> None:
    records = make_run(tmp_path, n=3)
    _rewrite(records, lambda r: r.update(expected=f"Answer {r['index']}", correct=r["index"] != 2))
    write_html(records, tmp_path / "results.html", [tmp_path / "traces"])
    page = (tmp_path / "results.html").read_text()
    table = _table(page)
    assert table.head[:5] == ["#", "Task", "Answer", "Expected", "Verdict"]
    assert [row[2:5] for row in table.rows] == [["Answer 1", "Answer 1", "✓"], ["Answer 2", "Answer 2", "✗"],
                                                ["Answer 3", "Answer 3", "✓"]]
    assert 'id="f-correct"' in page and '<option value="none">not scored</option>' in page


def test_hostile_answers_in_the_table_stay_text(tmp_path: Path) -> None:
    records = make_run(tmp_path, n=len(PAYLOADS))
    _rewrite(records, lambda r: r.update(answer=PAYLOADS[r["index"] - 1], expected=PAYLOADS[0]))
    write_html(records, tmp_path / "results.html", [tmp_path / "traces"])
    doc = parse((tmp_path / "results.html").read_text())
    assert doc.scripts == 1 and doc.handlers == []  # only the page's own script
    assert _table((tmp_path / "results.html").read_text()).rows[0][2] == PAYLOADS[0]


def _one_tool_step(tmp_path: Path, **call: Any) -> Path:
    """A one-task, one-step run whose tool call is rewritten with these fields (tool, arguments, observation)."""
    records = make_run(tmp_path, n=1, steps=1)
    trace = tmp_path / "traces" / "task-001.jsonl"
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    for e in events:
        if e["kind"] == "tool_call":
            e.update(call)
    trace.write_text("".join(json.dumps(e) + "\n" for e in events))
    return records


def test_python_code_in_the_timeline_is_highlighted_code_with_real_line_breaks(tmp_path: Path) -> None:
    records = _one_tool_step(tmp_path, tool="python", arguments={"code": CODE}, observation="<b> 3.14159")
    write_html(records, tmp_path / "results.html", [tmp_path / "traces"])
    page = (tmp_path / "results.html").read_text()
    block = re.search(r'<pre class="code hl"><code class="language-python">(.*?)</code></pre>', page, re.S)
    assert block is not None, "no highlighted code block"
    text = html.unescape(re.sub(r"<[^>]+>", "", block.group(1)))
    assert text.splitlines() == CODE.splitlines()
    assert "&lt;b&gt;" in block.group(1)  # the code's own markup stays text
    assert '<span class="kn">import</span>' in block.group(1)  # a keyword is marked for the stylesheet
    assert "\\n" not in block.group(1) and '"code":' not in page  # no JSON string with literal \n
    assert ".hl .kn" in page  # the colours are in the page's own stylesheet, nothing fetched


def test_other_arguments_beside_code_are_still_shown(tmp_path: Path) -> None:
    records = _one_tool_step(tmp_path, tool="write_file",
                             arguments={"path": "notes.md", "content": "line one\nline two"})
    write_html(records, tmp_path / "results.html", [tmp_path / "traces"])
    page = (tmp_path / "results.html").read_text()
    assert '&quot;path&quot;: &quot;notes.md&quot;' in page
    assert '<pre class="code"><code>line one\nline two</code></pre>' in page


def test_a_shell_command_is_a_code_block_not_json(tmp_path: Path) -> None:
    records = _one_tool_step(tmp_path, tool="shell", arguments={"command": "sort data.csv | uniq -c > counts.txt"})
    write_html(records, tmp_path / "results.html", [tmp_path / "traces"])
    page = (tmp_path / "results.html").read_text()
    assert '<pre class="code"><code>sort data.csv | uniq -c &gt; counts.txt</code></pre>' in page
    assert '&quot;command&quot;' not in page


def test_the_attachment_is_listed_as_read_or_not_in_both_reports(tmp_path: Path) -> None:
    records = make_run(tmp_path, n=2)

    def attach(r: dict[str, Any]) -> None:
        r["attachment"] = "sales.xlsx"
        if r["index"] == 1:  # read with read_file: the ledger holds the name the model gave
            r["sources"] = [{"n": 1, "url": "sales.xlsx", "title": "", "read": True, "error": None}]

    _rewrite(records, attach)
    write_html(records, tmp_path / "results.html", [tmp_path / "traces"])
    page = (tmp_path / "results.html").read_text()
    first, second = page.split('id="t-1"')[1].split('id="t-2"')
    assert '<b>Attachment:</b> <code>sales.xlsx</code> <span class="yes">read</span>' in first
    assert '<span class="no">not read</span>' in second
    md = render_markdown(sorted(read_records(records)[0].values(), key=lambda r: r.index), {})
    assert "**Attachment:** sales.xlsx — read" in md and "**Attachment:** sales.xlsx — not read" in md


def test_results_md_shows_answer_expected_and_verdict_columns(tmp_path: Path) -> None:
    records = make_run(tmp_path, n=2)
    _rewrite(records, lambda r: r.update(expected="Answer 1", correct=r["index"] == 1))
    md = render_markdown(sorted(read_records(records)[0].values(), key=lambda r: r.index), {})
    assert "| # | Task | Answer | Status | Steps | Tokens | Cost | Seconds | Sources | Expected | Correct |" in md
    assert re.search(r"\| 2 \| Question 2\? \| Answer 2 \| answered \|.*\| Answer 1 \| ✗ \|", md)
