"""Research people can steer: the plan as a file to review and edit, and the follow-up rounds (--depth).

- `--plan-only` makes the one planning call and writes the plan to `<report>.plan.txt` beside the report
  (plan_only); `--plan FILE` researches exactly the sub-questions of such a file (read_plan_file): a numbered
  list or one per line, `#` lines are comments.
- `--depth N`: after each round one follow-up planning call (followup_prompt) sees the question, the
  sub-questions researched so far and their findings, and names further sub-questions that fill gaps or
  settle contradictions, as a numbered list, or "none" (parse_followups); they are the next round.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from config import Settings
from core.errors import ConfigError, LLMError, LLMFatalError, StopRequested, TaskFileError
from core.files import atomic_write
from core.search_settings import papers_mode
from core.text import money, terminal_safe
from providers.budget import RunBudget
from providers.ratelimit import RateLimits
from report.research import SubQuestion
from research.plan import item_text, parse_plan, plan_prompt
from research.pool import Found, rewrite_markers
from research.write import Caller, role_model
from run.execute import checked_models
from run.summary import command_line

PLAN_SUFFIX = ".plan.txt"
PLAN_HEAD = "# Research plan for: "  # the plan file's first line, naming its question
MAX_FILE_QUESTIONS = 50  # a plan file longer than this is refused (a wrong file, not a plan)
FINDING_CHARS = 1_500  # of each sub-question's findings shown to the follow-up call
_NUMBERED = re.compile(r"^\s*(?:\d{1,3}[.)]|[-*•])\s+")
FOLLOWUP = """You follow up a piece of research after its round {round}. Below are the question, the \
sub-questions researched so far and what each one found.

Question: {question}

{findings}

Name further sub-questions that the next round should research on the web: ones that fill gaps in these \
findings (a person, organisation, place, date or figure they name but do not explain) or that settle \
contradictions between sources. At most {breadth}; do not repeat a sub-question already researched; each \
must be researchable on its own.

Reply with the new sub-questions only, as a numbered list (1. ..., 2. ...), one per line, or with the single \
word none when nothing needs following up."""


def plan_path(output: Path) -> Path:
    """The plan file beside the report: report.md -> report.plan.txt."""
    return output.with_name(output.stem + PLAN_SUFFIX)


def plan_text(question: str, subs: Sequence[str]) -> str:
    """The plan file: a comment naming the question and how to use it, then the numbered sub-questions."""
    head = (f"{PLAN_HEAD}{' '.join(question.split())}\n"
            "# Edit, remove or add sub-questions (one per line), then run:  main.py research \"QUESTION\" --plan "
            "THIS_FILE\n")
    return head + "".join(f"{i}. {q}\n" for i, q in enumerate(subs, start=1))


def read_plan_file(path: Path) -> list[str]:
    """The sub-questions of a plan file, exactly as written (numbering, bullets and `#` comment lines aside)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskFileError(path, f"cannot read the plan file ({exc})") from exc
    subs: list[str] = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        q = item_text(_NUMBERED.sub("", line))
        if q:
            subs.append(q)
    if not subs:
        raise TaskFileError(path, "the plan file holds no sub-question (a numbered list or one per line)")
    if len(subs) > MAX_FILE_QUESTIONS:
        raise TaskFileError(path, f"the plan file holds {len(subs)} sub-questions; at most {MAX_FILE_QUESTIONS}")
    return subs


def make_plan(settings: Settings, question: str, file_names: list[str], breadth: int, language: str | None,
              output: Path | None = None, limits: RateLimits | None = None,
              on_notice: Callable[[str], None] | None = None) -> tuple[list[str], float | None]:
    """One planning call under the settings' caps: (the sub-questions, its cost); LLMError when it fails.
    `on_notice` hears a slow call's "still waiting" lines."""
    llm, _ = checked_models(settings, output, limits)
    planner = role_model(settings, settings.planner_model, limits)  # --planner-model plans
    llm = planner or llm
    call = Caller(llm, settings, RunBudget.from_settings(settings, llm), language=language, on_notice=on_notice,
                  specs={"plan": settings.planner_model} if planner is not None and settings.planner_model else {})
    prompt = plan_prompt(question, breadth, file_names, docs=bool(settings.docs_dirs), web=settings.search,
                         papers=papers_mode(settings))
    return parse_plan(call([{"role": "user", "content": prompt}], "plan").text, breadth), call.cost


def plan_only(settings: Settings, question: str, files: list[Path], breadth: int, output: Path,
              language: str | None, argv: list[str]) -> int:
    """`--plan-only`: one planning call, the numbered plan on stdout, written to the plan file (named on stderr,
    with the command line that researches it: `argv` with --plan FILE for --plan-only); no research, no writer.
    Exit 0, or 1 when the call failed or gave no sub-question."""
    try:
        subs, cost = make_plan(settings, question, [f.name for f in files], breadth, language, output,
                               on_notice=lambda line: print(terminal_safe(line), file=sys.stderr, flush=True))
    except LLMFatalError:
        raise
    except (LLMError, StopRequested) as exc:
        print(terminal_safe(f"error: the planning call failed ({exc}); no plan written"), file=sys.stderr)
        return 1
    if not subs:
        print("error: the planning call gave no sub-question; no plan written", file=sys.stderr)
        return 1
    path = plan_path(output)
    atomic_write(path, plan_text(question, subs))
    print("Plan:\n" + "\n".join(terminal_safe(f"{i}. {q}", one_line=True) for i, q in enumerate(subs, start=1)))
    then = command_line([a for a in argv if a != "--plan-only"] + ["--plan", str(path)])
    print(terminal_safe(f"plan written to {path} (cost {money(cost)}); edit it, then: {then}"), file=sys.stderr)
    return 0


def planned_for(path: Path) -> str | None:
    """The question a plan file says it was made for (its `# Research plan for:` line), or None."""
    try:
        with path.open(encoding="utf-8") as f:
            first = f.readline()
    except (OSError, UnicodeDecodeError):
        return None
    return " ".join(first[len(PLAN_HEAD):].split()) if first.startswith(PLAN_HEAD) else None


def other_question(path: Path, question: str) -> str | None:
    """A warning when the plan file was made for another question than this one (its sub-questions are still
    researched, for this one), else None."""
    made_for = planned_for(path)
    if made_for is None or made_for.casefold() == " ".join(question.split()).casefold():
        return None
    return (f"warning: {path} was made for another question (\u201c{made_for}\u201d); its sub-questions are "
            "researched for this one")


def check_depth(depth: int) -> None:
    """--depth must be 1 or more."""
    if depth < 1:
        raise ConfigError("--depth must be 1 or more", "depth")


def followup_prompt(question: str, done: Sequence[tuple[SubQuestion, Found]], round_: int, breadth: int) -> str:
    """The follow-up planning call's prompt: the question, each sub-question researched and what it found."""
    blocks = []
    for sub, f in done:
        said = " ".join(rewrite_markers(f.answer or "", lambda k: None).split())[:FINDING_CHARS]
        blocks.append(f"Sub-question {sub.n}: {sub.text}\nFindings: {said or '(none: its research gave no answer)'}")
    return FOLLOWUP.format(round=round_, question=" ".join(question.split()), findings="\n\n".join(blocks),
                           breadth=breadth)


def parse_followups(reply: str, breadth: int, researched: Sequence[str]) -> list[str]:
    """The new sub-questions of a follow-up reply (none: []), without those already researched."""
    seen = {" ".join(q.lower().split()) for q in researched}
    return [q for q in parse_plan(reply, breadth) if " ".join(q.lower().split()) not in seen]


def followup(call: Caller, question: str, done: Sequence[tuple[SubQuestion, Found]], round_: int,
             breadth: int) -> list[str]:
    """One follow-up planning call; its new sub-questions ([] when it gives none or fails)."""
    prompt = followup_prompt(question, done, round_, breadth)
    try:
        reply = call([{"role": "user", "content": prompt}], "followup")
    except LLMFatalError:
        raise
    except (LLMError, StopRequested):
        return []
    return parse_followups(reply.text, breadth, [s.text for s, _ in done])

