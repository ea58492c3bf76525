"""Render the run to HTML: summary, charts, the task table and each task with its step timeline."""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from pathlib import Path

from core.text import money
from report.html.assets import CSS, SCRIPT
from report.html.charts import bar_chart
from report.html.code import arguments_html, code_css
from report.html.data import Call, Run, Step, Task
from report.html.markdown import esc, render
from report.html.sources import WITHOUT_SOURCES, run_html, sources_html, unsourced
from report.markdown import shown_task, tasks_count, total_cost
from report.stopped import resume_line, title, written_at

DONE = {"answered", "answered_unformatted"}


@dataclass(frozen=True)
class Caps:
    """How much of each long text the page carries inline; the rest is one click (or file) away."""

    observation: int = 4000
    completion: int = 4000
    detail_dir: str | None = None  # timelines live in per-task files under this relative folder


def _csp(live: bool) -> str:
    digest = base64.b64encode(hashlib.sha256(SCRIPT.encode("utf-8")).digest()).decode()
    connect = "'self'" if live else "'none'"
    # Only the page's own script may run, whatever text a page or model managed to put in the report.
    return (f"default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'sha256-{digest}'; "
            f"connect-src {connect}; base-uri 'none'; form-action 'none'")


def render_page(run: Run, live: bool = False, caps: Caps = Caps(), version: str = "") -> str:
    """The whole self-contained page."""
    title = "Research results"
    live_note = _live_note(run, version) if live else ""
    body = (f"<h1>{title}</h1>{live_note}{_summary(run, live)}{_charts(run)}{_table(run)}"
            f"<h2>Tasks</h2>{''.join(_task(t, caps) for t in run.tasks)}")
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f'<meta http-equiv="Content-Security-Policy" content="{_csp(live)}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{title}</title><style>{CSS}{code_css()}</style></head><body><main id=\"app\">{body}</main>"
            f"<script>{SCRIPT}</script></body></html>\n")


def _live_note(run: Run, version: str) -> str:
    """The live page's banner: waiting for the first task, updating, or over with the final report's path."""
    state, final = run.meta.get("live_state", "running"), str(run.meta.get("results_html") or "")
    text = {"waiting": "Live: waiting for the first task to finish…",
            "running": "Live: this page updates as tasks finish."}.get(state, "The run is over. Final report: ")
    if state == "done":
        link = Path(final).resolve().as_uri() if final else ""
        text += f'<a href="{esc(link)}">{esc(Path(final).name)}</a> <code>{esc(final)}</code>' if final else "none"
    done = ' data-done="1"' if state == "done" else ""
    return f'<p id="live" class="live" data-version="{esc(version)}"{done}>{text}</p>'


def _tokens(t: Task) -> int:
    return int(t.get("prompt_tokens", 0)) + int(t.get("completion_tokens", 0))


def _summary(run: Run, live: bool = False) -> str:
    tasks = run.tasks
    statuses: dict[str, int] = {}
    for t in tasks:
        statuses[t.get("status", "?")] = statuses.get(t.get("status", "?"), 0) + 1
    total = total_cost(t.record.get("cost") for t in tasks)
    models = sorted({m for t in tasks for m in t.get("models", [])} | set(_meta_models(run)))
    count = tasks_count(len(tasks), run.meta.get("total")).rsplit(" ", 1)[0]  # "5", or "2 of 5" for a stopped run
    cards = [("tasks", count), ("tokens", f"{sum(_tokens(t) for t in tasks):,}"),
             ("cost", money(total)), ("task time", f"{sum(float(t.get('seconds', 0)) for t in tasks):,.1f} s")]
    cards += [(status, f"{n:,}") for status, n in sorted(statuses.items())]
    accuracy = _accuracy(tasks)
    if accuracy:
        cards.insert(1, ("accuracy", accuracy))
    html = '<section class="summary">' + "".join(
        f'<div class="card"><b>{esc(v)}</b><span>{esc(k)}</span></div>' for k, v in cards) + "</section>"
    when = run.meta.get("finished") or written_at(run.records_file)
    html += "" if live else _state(run, when)  # a live page is neither finished nor stopped yet
    html += f'<p class="meta">Models: {esc(", ".join(models) or "n/a")} · records: {esc(run.records_file.name)}'
    html += f" · updated {esc(when)}</p>"
    if run.meta.get("skipped"):  # tasks a spend cap kept from starting (providers/budget.py), as results.md says it
        html += f'<p class="meta skipped"><b>{esc(str(run.meta["skipped"]))}</b></p>'
    levels = _level_accuracy(tasks)
    html += run_html([t.record for t in tasks])  # citations by verdict, answers without sources
    return html + (f'<p class="meta">Accuracy by level: {esc(levels)}</p>' if levels else "")


def _state(run: Run, when: str) -> str:
    """Whether the run finished or was stopped (why, and the command that resumes it); nothing while live."""
    if not run.meta.get("stopped"):
        return f'<p class="run-state">{esc(title(run.meta, when))}</p>'
    resume = resume_line(run.meta)
    command = f' Resume with <code class="resume">{esc(resume)}</code>' if resume else ""
    return f'<p class="run-state stopped"><b>{esc(title(run.meta, when))}</b>.{command}</p>'


def _meta_models(run: Run) -> list[str]:
    value = run.meta.get("models") or run.meta.get("model") or []
    return [value] if isinstance(value, str) else list(value)


def _accuracy(tasks: list[Task]) -> str:
    graded = [t for t in tasks if t.record.get("correct") is not None]
    if not graded:
        return ""
    right = sum(1 for t in graded if t.record.get("correct"))
    return f"{right}/{len(graded)} = {right / len(graded):.1%}"


def _level_accuracy(tasks: list[Task]) -> str:
    graded = [t for t in tasks if t.record.get("correct") is not None and t.record.get("level") is not None]
    parts = []
    for level in sorted({str(t.record["level"]) for t in graded}):
        group = [t for t in graded if str(t.record["level"]) == level]
        right = sum(1 for t in group if t.record.get("correct"))
        parts.append(f"level {level}: {right}/{len(group)} = {right / len(group):.1%}")
    return " · ".join(parts)


def _charts(run: Run) -> str:
    def failed(t: Task) -> bool:
        return t.get("status") not in DONE or t.record.get("correct") is False

    # A task without a known price has no bar (never a guessed $0); the caption says how many.
    cost = [(f"#{t.get('index')}", float(t.record["cost"]), failed(t)) for t in run.tasks
            if t.record.get("cost") is not None]
    steps = [(f"#{t.get('index')}", float(t.get("steps", 0)), failed(t)) for t in run.tasks]
    unpriced = len(run.tasks) - len(cost)
    return ('<section class="charts"><figure>' + bar_chart(cost, "$", "cost per task")
            + "<figcaption>Cost per task (red: failed or incorrect)"
            + (f"; n/a for {unpriced} without a known price" if unpriced else "") + "</figcaption></figure><figure>"
            + bar_chart(steps, "steps", "steps per task") + "<figcaption>Steps per task</figcaption></figure>"
            "</section>")


def _correct_cell(t: Task) -> tuple[str, str]:
    correct = t.record.get("correct")
    if correct is None:
        return "none", "—"
    if t.record.get("unsure"):
        return ("yes" if correct else "no"), ("✓?" if correct else "✗?")
    return ("yes" if correct else "no"), ("✓" if correct else "✗")


def _table(run: Run) -> str:
    statuses = sorted({str(t.get("status", "")) for t in run.tasks})
    scored = any(t.record.get("expected") is not None for t in run.tasks)  # the task file gave answers
    options = "".join(f'<option value="{esc(s)}">{esc(s)}</option>' for s in statuses)
    verdicts = ('<label>Verdict <select id="f-correct"><option value="">all</option><option value="yes">correct'
                '</option><option value="no">incorrect</option><option value="none">not scored</option></select>'
                "</label>") if scored else ""
    controls = ('<div class="controls hidden"><label>Status <select id="f-status"><option value="">all</option>'
                f'{options}</select></label>{verdicts}'
                '<label>Find <input id="f-text" type="search" placeholder="text in task or answer"></label>'
                '<span id="count" class="meta"></span><span class="pager"><button id="prev" type="button">◀'
                '</button><span id="page" class="meta"></span><button id="next" type="button">▶</button></span>'
                "</div>")
    graded = '<th data-type="str">Expected</th><th data-type="str">Verdict</th>' if scored else ""
    head = ('<thead><tr><th data-type="num" class="num">#</th><th data-type="str">Task</th>'
            f'<th data-type="str">Answer</th>{graded}<th data-type="str">Status</th>'
            '<th data-type="num" class="num">Steps</th><th data-type="num" class="num">Tokens</th>'
            '<th data-type="num" class="num">Cost</th><th data-type="num" class="num">Seconds</th></tr></thead>')
    return f'<h2>Tasks at a glance</h2>{controls}<table id="tasks">{head}<tbody>' + "".join(
        _row(t, scored) for t in run.tasks) + "</tbody></table>"


def _short(text: object, width: int) -> str:
    """The first line of a text, cut to width characters."""
    lines = str(text or "").strip().splitlines()
    first = lines[0] if lines else ""
    return first if len(first) <= width else first[: width - 1] + "…"


def _row(t: Task, scored: bool = False) -> str:
    verdict, mark = _correct_cell(t)
    status = str(t.get("status", ""))
    target = _anchor(t)
    cost = t.record.get("cost")
    text, answer = _short(t.get("task", ""), 90), _short(t.record.get("answer"), 80)
    graded = ""
    if scored:
        expected = _short(t.record.get("expected"), 60)
        graded = (f'<td data-v="{esc(expected)}" class="expected">{esc(expected)}</td>'
                  f'<td data-v="{verdict}" class="{verdict}">{mark}</td>')
    return (f'<tr class="row" data-status="{esc(status)}" data-correct="{verdict}" data-target="{target}" '
            f'data-id="{esc(t.get("id", ""))}">'
            f'<td class="num" data-v="{int(t.get("index", 0))}">{int(t.get("index", 0))}</td>'
            f'<td data-v="{esc(text)}"><a href="#{target}">{esc(text)}</a></td>'
            f'<td data-v="{esc(answer)}" class="answer">{esc(answer) or "<em>—</em>"}</td>{graded}'
            f'<td data-v="{esc(status)}" class="status s-{esc(status)}">{esc(status)}{_no_sources_tag(t)}</td>'
            f'<td class="num" data-v="{int(t.get("steps", 0))}">{int(t.get("steps", 0))}</td>'
            f'<td class="num" data-v="{_tokens(t)}">{_tokens(t):,}</td>'
            f'<td class="num" data-v="{float(cost) if cost is not None else -1}">{money(cost)}</td>'
            f'<td class="num" data-v="{float(t.get("seconds", 0)):.3f}">{float(t.get("seconds", 0)):.1f}</td></tr>')


def _no_sources_tag(t: Task) -> str:
    return f' <span class="tag warn">{esc(WITHOUT_SOURCES)}</span>' if unsourced(t.record) else ""


def _anchor(t: Task) -> str:
    return f"t-{int(t.get('index', 0))}"


def _task(t: Task, caps: Caps) -> str:
    r = t.record
    status = str(t.get("status", ""))
    answer = render(str(r["answer"])) if r.get("answer") else f"<p><em>No answer ({esc(status)}).</em></p>"
    parts = [f'<details class="task" id="{_anchor(t)}" data-id="{esc(t.get("id", ""))}"><summary>'
             f'{int(t.get("index", 0))}. {esc(_short(t.get("task", ""), 121))}'
             f' <span class="status s-{esc(status)}">{esc(status)}</span>{_no_sources_tag(t)}</summary>',
             f"<h4>Question</h4><pre>{esc(shown_task(str(t.get('task', ''))))}</pre><h4>Answer</h4>{answer}"]
    if r.get("expected") is not None:
        correct = r.get("correct")
        verdict = "not scored" if correct is None else ("correct" if correct else "incorrect")
        extra = " (scorer unsure)" if r.get("unsure") else ""
        official = r.get("correct_official")
        extra += "" if official is None else f" · official GAIA scorer: {'correct' if official else 'incorrect'}"
        parts.append(f"<p><b>Expected:</b> {esc(r['expected'])} — {verdict}{esc(extra)}</p>")
    if r.get("error"):
        parts.append(f"<p><b>Error:</b> {esc(r['error'])}</p>")
    parts.append(sources_html(r, t.source_tools))  # report/html/sources.py
    parts.append(_notes(r.get("notes") or []))
    parts.append(f'<p class="meta">{esc(_stats(t))}</p>')
    parts.append(_timeline_link(t, caps) if caps.detail_dir else timeline(t, caps))
    return "".join(parts) + "</details>"


def _notes(notes: list[str]) -> str:
    """The notes the model kept with the notes tool, numbered as it saw them."""
    if not notes:
        return ""
    return '<h4>Notes</h4><ol class="notes">' + "".join(f"<li>{esc(n)}</li>" for n in notes) + "</ol>"


def _stats(t: Task) -> str:
    return (f"{t.get('status', '')} · {t.get('steps', 0)} steps · {t.get('llm_calls', 0)} model calls · "
            f"{_tokens(t):,} tokens · {money(t.record.get('cost'))} · {float(t.get('seconds', 0)):.1f} s · "
            f"model {', '.join(t.get('models', [])) or 'n/a'}")


def _timeline_link(t: Task, caps: Caps) -> str:
    href = f"{caps.detail_dir}/{t.get('id')}.html"
    return f'<p><a href="{esc(href)}">Step timeline ({len(t.steps)} steps) →</a></p>'


def timeline(t: Task, caps: Caps) -> str:
    """The step-by-step timeline of one task."""
    if not t.steps:
        where = f" (trace file: {t.trace})" if t.trace else " (no trace file found)"
        return f'<p class="meta">No step timeline{esc(where)}.</p>'
    return '<h4>Steps</h4><ol class="timeline">' + "".join(_step(s, caps) for s in t.steps) + "</ol>"


def _step(s: Step, caps: Caps) -> str:
    cls = f' class="{esc(s.error)}"' if s.error in {"format", "tool"} else ""
    tags = ""
    if s.error == "format":
        tags += '<span class="tag warn">format error</span>'
    elif s.error:
        tags += f'<span class="tag bad">{esc(s.error)} error</span>'
    head = f"step {s.number}" + (f" · {s.tool}" if s.tool else "") + (f" · {s.duration:.2f} s" if s.tool else "")
    out = [f"<li{cls}><div><b>{esc(head)}</b>{tags}</div>"]
    out += [f'<div class="meta">{_call_line(c)}</div>' for c in s.calls]
    for summary in s.summaries:
        out.append(f'<details class="obs"><summary>memory summarised earlier steps</summary><pre>'
                   f"{esc(_cut(summary, caps.completion))}</pre></details>")
    if s.thought:
        out.append(f"<pre>{esc(_cut(s.thought, caps.completion))}</pre>")
    if s.tool:
        out.append(f"<div class=\"meta\">Action: <code>{esc(s.tool)}</code></div>"
                   + arguments_html(s.tool, s.raw_arguments, s.arguments, caps.completion))
    elif s.final:
        out.append(f'<div class="meta">Final Answer</div><pre>{esc(_cut(s.final, caps.completion))}</pre>')
    elif s.completion and not s.thought:
        out.append(f"<pre>{esc(_cut(s.completion, caps.completion))}</pre>")
    if s.observation:
        out.append(_observation(s, caps))
    return "".join(out) + "</li>"


def _observation(s: Step, caps: Caps) -> str:
    note = ""
    if s.cut:
        link = f' <a href="{esc(_file_url(s.saved))}">full text</a>' if s.saved else ""
        note = f" · the model saw {len(s.observation):,} of {s.full_chars:,} chars{link}"
    shown = _cut(s.observation, caps.observation)
    more = "" if len(shown) == len(s.observation) else f" · {len(s.observation) - caps.observation:,} chars not shown"
    opened = " open" if len(s.observation) <= 300 else ""
    return (f'<details class="obs"{opened}><summary>Observation ({len(s.observation):,} chars){esc(more)}</summary>'
            f"<pre>{esc(shown)}</pre></details>" + (f'<div class="meta">{note}</div>' if note else ""))


def _file_url(path: str | None) -> str:
    return Path(path).resolve().as_uri() if path and Path(path).is_absolute() else str(path or "")


def _call_line(c: Call) -> str:
    what = {"final": "answer call", "summary": "summary call"}.get(c.purpose, "model call")
    bits = [what, c.model, f"{c.prompt_tokens:,}+{c.completion_tokens:,} tokens"]
    if c.cached_tokens:
        bits.append(f"{c.cached_tokens:,} cached")
    bits += [money(c.cost), f"{c.latency:.2f} s"]
    if c.finish_reason and c.finish_reason != "stop":
        bits.append(f"finish: {c.finish_reason}")
    tags = ""
    if c.retries:
        tags += f'<span class="tag warn">{c.retries} retr{"y" if c.retries == 1 else "ies"}</span>'
    if c.rate_wait >= 0.1:  # held by --rpm / --tpm, the provider's rate-limit headers or a 429's pause
        tags += f'<span class="tag warn">waited {c.rate_wait:.1f} s for the rate limit</span>'
    if c.cached:
        tags += '<span class="tag">from cache</span>'
    return esc(" · ".join(b for b in bits if b)) + tags


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "\n…"


def render_detail(t: Task, caps: Caps) -> str:
    """A task's own page (question, answer, timeline), for runs too large to carry every timeline inline."""
    title = f"Task {int(t.get('index', 0))}"
    body = _task(t, Caps(caps.observation, caps.completion))
    body = body.replace('<details class="task"', '<details open class="task"', 1)
    back = (caps.detail_dir or "results_tasks").removesuffix("_tasks") + ".html"
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f'<meta http-equiv="Content-Security-Policy" content="{_csp(False)}">'
            f"<title>{esc(title)}</title><style>{CSS}{code_css()}</style></head><body><main id=\"app\">"
            f'<p><a href="../{esc(back)}">← all tasks</a></p>{body}</main></body></html>\n')
