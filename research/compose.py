"""From what the sub-questions found to the delivered report: pool the sources, write, check, repair once,
mark what still fails, number the sources by first use, check the delivered text again.

Without a writer (the cost cap was reached, a stop, a failed call) the sections are the sub-questions' own
findings, checked and marked the same way. When no source could be read at all, no report with citations
is made up: it says nothing could be read.
"""

from __future__ import annotations

import contextlib
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from core.errors import ContextWindowError, LLMError, StopRequested
from prompt.tokens import TokenEstimator
from report.markdown import plural
from report.research import ResearchReport, SubQuestion
from report.sources import is_web
from research.fit import Fitted, fit
from research.language import with_language
from research.pool import Found, first_use, pool, remap_finding, renumbered, rewrite_markers
from research.repair import bare, cited_lines, failing, mark, repair_prompt, unmarked
from research.write import Caller, complete_text, end_whole, findings_report, headers_of, refusal, write_prompt
from sources.check import FABRICATED, MARKER, SUPPORTED, Citation, check_citations, claims, markers
from sources.ledger import SourceLedger
from sources.verify import verify_citations

NOTHING_READ = ("Nothing could be read for this question: no page, document or file that the research tried "
                "could be read (each attempt and why it failed is listed under Sources), so there is no report "
                "to give and no citation was made up.")
NOTHING_TRIED = ("Nothing was read for this question: the research tried no page, document or file (the research "
                 "plan below says how each sub-question went), so there is no report to give and no citation was "
                 "made up.")
NO_FINDINGS = ("No sub-question's research got to an answer (each one's reason is in the research plan below), "
               "so there is nothing to report; the sources that were read are listed.")
_PLACE = re.compile(r", (?:p\. |§ |slide |sheet |lines )")  # a passage of --docs: `report.pdf, p. 3` (docindex/)


@dataclass
class Draft:
    """The report as it goes through writing and checking."""

    body: str = ""
    writer: str | None = None  # why the writer could not write (the findings stand in), or None
    repair: dict[str, object] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # what the writer's window could not hold (research/fit.py)


def compose(question: str, plan: Sequence[SubQuestion], found: Sequence[Found], call: Caller | None,
            report: ResearchReport, judge: Caller | None = None) -> dict[int, str]:
    """Fill `report` (body, sources, citations, repair); the text of each numbered source, by number.

    `call` None: no model may be called (a cap or a stop): the findings are the sections. `judge` (--judge-model)
    also judges each delivered claim the model-free check supports or leaves unchecked.
    """
    ledger = pool(found)
    report.not_read = [{"url": s.url, "title": s.title, "error": s.error} for s in ledger.sources if not s.read]
    if not ledger.sourced:
        report.nothing_read, report.body = True, NOTHING_READ if ledger.sources else NOTHING_TRIED
        return {}
    findings = [(sub.text, remap_finding(f, ledger)) for sub, f in zip(plan, found, strict=True) if f.answer]
    if not findings:  # pages were read but no sub-question got to an answer: no writer to make one up from titles
        report.body = NO_FINDINGS
        report.also_read = [{"url": s.url, "title": s.title} for s in ledger.read_sources()]
        return {}
    draft = write(question, findings, ledger, call)
    if draft.writer:
        report.notes.append(f"The sections are the sub-questions' own findings: {draft.writer}.")
    citations = check_and_repair(draft, ledger, call)
    if draft.repair.get("refused"):
        report.notes.append(f"The writer's revision was refused ({draft.repair['refused']}): the checked draft is "
                            "delivered, with what still fails marked.")
    draft.repair["writer"] = draft.writer
    report.notes += draft.notes
    body = mark(draft.body, citations, ledger)
    order = first_use(body, {c.n for c in citations if c.n is not None and ledger.number(c.n) is not None})
    final, uncited = renumbered(ledger, order)
    report.body = rewrite_markers(body, order.get)
    report.citations = delivered_citations(report.body, final, citations, order, judge)
    report.body = paged(report.body, report.citations)
    report.sources = [{"n": s.n, "url": s.url, "title": s.title} for s in final.read_sources() if s.n in
                      order.values()]
    report.also_read = [{"url": s.url, "title": s.title} for s in uncited]
    report.repair = {**draft.repair, "marked": report.marked}
    return {s.n: s.text for s in final.read_sources() if s.n is not None and s.n in order.values()}


def read_line(report: ResearchReport) -> str:
    """What the research read, for a stopped report's note: `3 sources (2 document passages, 1 web page), listed
    under Sources`; "" when it read nothing."""
    read = [str(s.get("url") or "") for s in (*report.sources, *report.also_read)]
    if not read:
        return ""
    kinds = Counter("web page" if is_web(u) else "document passage" if _PLACE.search(u) else "file" for u in read)
    parts = ", ".join(plural(n, kind) for kind, n in kinds.most_common())
    return f"{plural(len(read), 'source')} ({parts}), listed under Sources"


def write(question: str, findings: list[tuple[str, str]], ledger: SourceLedger, call: Caller | None) -> Draft:
    """The writer's sections (continued when cut off, else ended at a whole sentence), or the findings; the
    prompt fitted to the writer's window (research/fit.py)."""
    if call is None:
        return Draft(findings_report(findings), "no model call could be made")
    try:
        written = _written(question, findings, ledger, call)
    except (LLMError, StopRequested) as exc:
        return Draft(findings_report(findings), f"the writer could not be called ({_why(exc)})")
    if written is None:
        return Draft(findings_report(findings), f"the writer's model holds about {call.room('write'):,} tokens of "
                                                "prompt: not even a sentence of each finding fits in it")
    text, cut, fitted = written
    text = end_whole(text) if cut else text.strip() + "\n"
    refused = refusal(text, any(MARKER.search(a) for _, a in findings))
    if refused:  # a tool call, `Final Answer: 42`: never delivered in place of the findings
        return Draft(findings_report(findings), f"the writer's reply was refused ({refused})")
    return Draft(text, None, notes=[fitted.cut] if fitted.cut else [])


def _written(question: str, findings: list[tuple[str, str]], ledger: SourceLedger,
             call: Caller) -> tuple[str, bool, Fitted] | None:
    """The writer's reply (and whether it is still cut off) to the prompt fitted to its window, once more to the
    smaller window a refusal names; None when no prompt fits."""
    while True:
        fitted = _fitted(question, findings, ledger, call)
        if fitted is None:
            return None
        try:
            text, cut = complete_text(call, [{"role": "user", "content": write_prompt(
                question, fitted.headers, fitted.findings)}], "write")
            return text, cut, fitted
        except ContextWindowError as exc:
            if not call.refit("write", exc):  # the window it named leaves no smaller room
                raise


def _fitted(question: str, findings: list[tuple[str, str]], ledger: SourceLedger, call: Caller) -> Fitted | None:
    """The sources' lines and findings the writer's window holds beside the instructions (research/fit.py)."""
    fixed = with_language([{"role": "user", "content": write_prompt(question, [], [])}], call.language)[0]
    return fit(ledger, findings, len(str(fixed["content"])), call.room("write"), call.spec("write"))


def check_and_repair(draft: Draft, ledger: SourceLedger, call: Caller | None) -> list[Citation]:
    """Check every claim; send the failing ones back to the writer once; the last check's citations."""
    draft.body = cited_lines(draft.body, ledger)
    citations = check_citations(draft.body, ledger)
    fails = failing(citations, ledger)
    draft.repair = {"checked": len(citations), "failing": [{"claim": f.claim, "verdict": f.verdict} for f in fails],
                    "sent_back": False, "still_failing": []}
    if not fails or call is None or draft.writer:
        draft.repair["still_failing"] = draft.repair["failing"]
        return citations
    prompt = repair_prompt(draft.body, fails, headers_of(ledger))
    if TokenEstimator().text_tokens(prompt) > call.room("repair"):
        draft.notes.append(f"The failing claims were not sent back to the writer: the report and its failing claims "
                           f"do not fit in the about {call.room('repair'):,} tokens of prompt its model holds.")
        draft.repair["still_failing"] = draft.repair["failing"]
        return citations
    try:
        text, cut = complete_text(call, [{"role": "user", "content": prompt}], "repair")
    except (LLMError, StopRequested) as exc:
        draft.repair.update(still_failing=draft.repair["failing"], error=_why(exc))
        return citations
    text, draft.repair["sent_back"] = cited_lines(end_whole(text) if cut else text.strip() + "\n", ledger), True
    revised = check_citations(text, ledger)
    refused = refusal(text) or _fewer_supported(revised, citations)
    if refused:  # the checked draft stands: a revision never delivers less than it had
        draft.repair.update(still_failing=draft.repair["failing"], refused=refused)
        return citations
    draft.body = text
    draft.repair["still_failing"] = [{"claim": f.claim, "verdict": f.verdict} for f in failing(revised, ledger)]
    return revised


def supported(citations: Sequence[Citation] | Sequence[dict[str, object]]) -> int:
    """How many claims the check supported."""
    return len({_field(c, "claim") for c in citations if _field(c, "verdict") == SUPPORTED})


def _field(c: Citation | dict[str, object], name: str) -> object:
    return c.get(name) if isinstance(c, dict) else getattr(c, name)


def _fewer_supported(revised: Sequence[Citation], draft: Sequence[Citation]) -> str | None:
    now, before = supported(revised), supported(draft)
    return f"it keeps {now} supported claim{'s' if now != 1 else ''} where the draft had {before}" \
        if now < before else None


def delivered_citations(body: str, ledger: SourceLedger, last: Sequence[Citation],
                        order: dict[int, int], judge: Caller | None = None) -> list[dict[str, object]]:
    """The delivered text's citations, checked again with the final numbers, each with the passage of its
    source it was judged against (and the judge model's verdict); a claim whose only citations named no source
    keeps its fabricated verdict."""
    out = []
    delivered = check_citations(body, ledger)
    if judge is not None:
        with contextlib.suppress(StopRequested):  # a stop while judging: the claims not yet judged have none
            verify_citations(delivered, ledger, lambda messages: judge(messages, "judge").text)
    for c in delivered:
        out.append({**c.record(), "claim": unmarked(c.claim), "passage": c.passage})
    checked = {bare(str(c["claim"])) for c in out}
    for c in last:
        claim = bare(rewrite_markers(c.claim, order.get))
        if c.verdict == FABRICATED and claim not in checked:
            out.append({"n": None, "url": None, "claim": claim, "verdict": FABRICATED, "passage": ""})
            checked.add(claim)
    return out


def paged(body: str, citations: Sequence[dict[str, object]]) -> str:
    """The body with `[n, p. X]` where the check found the page of source n its claim's passage is on (a PDF
    read by page), as the citations list shows it."""
    pages = {(bare(str(c["claim"])), c["n"]): c["page"] for c in citations if isinstance(c.get("page"), int)}
    if not pages:
        return body
    out, at = [], 0
    for claim in claims(body):
        start = body.find(claim, at)
        if start < 0:
            continue
        key = bare(claim)

        def cite(m: re.Match[str], key: str = key) -> str:
            numbers = markers(m.group(0))
            if not any((key, n) in pages for n in numbers):
                return m.group(0)
            return "[" + "; ".join(f"{n}, p. {pages[key, n]}" if (key, n) in pages else str(n) for n in numbers) + "]"
        out.append(body[at:start] + MARKER.sub(cite, claim))
        at = start + len(claim)
    return "".join(out) + body[at:]


def _why(exc: BaseException) -> str:
    if isinstance(exc, StopRequested):
        return "stopped by the user"
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
