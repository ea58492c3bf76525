"""What the model sees each step: token budget, observation truncation, summaries of older steps."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from config import Settings
from core.chat import ChatModel, Completion, Message
from core.errors import LLMError, LLMFatalError
from core.text import truncate_middle
from prompt.summary import (
    OBSERVATION_PREFIX,
    SUMMARY_SYSTEM,
    SummaryRejectedError,
    Turn,
    chunks,
    summary_messages,
)
from prompt.tokens import TokenEstimator
from prompt.window import DEFAULT_BUDGET, default_budget
from tools.notes import Notes
from tools.safe_open import WorkspacePathError, replace_file

OBSERVATION_SHARE = 0.25  # of the budget: the most one observation may take in the prompt
SUMMARY_SHARE = 0.2  # of the budget: the most the running summary may take ...
MAX_SUMMARY_TOKENS = 4_000  # ... and never more than this
REFOLD_TARGET = 0.6  # after folding, the prompt should be back under this share, so folds are rare
NOTE_RESERVE_CHARS = 400  # room left for the note the agent may append to the last user message


class ContextBudgetError(LLMError):
    """The system prompt and the task alone do not fit the context budget: the task cannot run."""

    def __init__(self, needed: int, budget: int) -> None:
        super().__init__(f"the system prompt and the task alone need about {needed:,} tokens, over the "
                         f"context budget of {budget:,}; raise --context-budget or shorten the task")
        self.needed = needed
        self.budget = budget


class Memory:
    """Task + running summary of older steps + recent steps verbatim, kept within a token budget.

    Without a summarizer (or when summarizing fails) the oldest steps are dropped with a note instead.
    """

    def __init__(self, budget_tokens: int = DEFAULT_BUDGET, workspace: Path | None = None,
                 observation_chars: int | None = None, *, summarizer: ChatModel | None = None,
                 estimator: TokenEstimator | None = None, keep_last: int = 2,
                 summary_tokens: int | None = None) -> None:
        self.budget_tokens = budget_tokens
        self.workspace = workspace
        self.observation_chars = observation_chars  # None: a share of the budget
        self.summarizer = summarizer
        self.estimator = estimator or TokenEstimator()
        self.keep_last = max(keep_last, 1)
        self.summary_tokens = summary_tokens or min(int(budget_tokens * SUMMARY_SHARE), MAX_SUMMARY_TOKENS)
        self.turns: list[Turn] = []  # changed only through _keep, _forget and _recut, which keep the two below
        self._turn_chars = 0  # the turns' characters in the prompt, kept as turns come and go (not re-measured)
        self._turn_messages: list[Message] = []  # the turns as messages, two each, rendered once
        self._sent: tuple[list[Message], int] | None = None  # the last prompt handed out and its characters
        self.summary = ""
        self.summarized: list[int] = []  # step numbers folded into the summary
        self.dropped: list[int] = []  # step numbers dropped without a summary
        self.summary_errors: list[BaseException] = []  # why summaries failed (the run went on)
        self.model: str | None = None  # the task model's name, as its completions report it
        self.summary_model: str | None = None
        self.notes: Notes | None = None  # the notes tool's notes: verbatim after the task once steps are folded
        # Set by the agent: called with each summarization completion so its usage is counted.
        self.on_summary: Callable[[Completion, list[Message]], None] | None = None
        # Set by the agent: called with each reply a failed summary call was billed for (empty, blocked).
        self.on_billed: Callable[[Completion], None] | None = None

    def add(self, step_number: int, assistant: str, observation: str) -> str:
        """Record a step; returns the observation text as the model will see it."""
        turn = Turn(step_number, assistant, observation, observation)
        turn.observation = self._cut(turn, self.observation_limit())
        self._keep(turn)
        return turn.observation

    def observation_limit(self) -> int:
        """The most characters one observation may take in the prompt."""
        if self.observation_chars is not None:
            return self.observation_chars
        return self.estimator.chars_for(self.budget_tokens * OBSERVATION_SHARE, self.model)

    def messages(self, system: str, task: str) -> list[Message]:
        """The prompt for the next model call, folded or cut to fit the budget first."""
        self._fit(system, task)
        block = self._block()
        out: list[Message] = [{"role": "system", "content": system}, {"role": "user", "content": task + block},
                              *self._turn_messages]
        self._sent = (out, len(system) + len(task) + len(block) + self._turn_chars)
        return out

    def refit(self, budget_tokens: int) -> None:
        """Keep to a smaller budget from now on (the server named a smaller window than was assumed)."""
        self.budget_tokens = min(self.budget_tokens, budget_tokens)
        self.summary_tokens = min(self.summary_tokens, int(self.budget_tokens * SUMMARY_SHARE))

    def record_usage(self, messages: list[Message], completion: Completion) -> None:
        """Learn from the provider's prompt-token count for the messages just sent."""
        self.model = completion.model
        if self._sent is not None and self._sent[0] is messages:  # the prompt as rendered: its size is known
            self.estimator.calibrate_size(self._sent[1], len(messages), completion.prompt_tokens, completion.model)
        else:
            self.estimator.calibrate(messages, completion.prompt_tokens, completion.model)

    def prompt_tokens(self, system: str, task: str) -> int:
        """The estimated size of the prompt as it stands now."""
        return self._size(system, task, self._turn_chars, len(self.turns), len(self._block()))

    # -- the turns, their size and their messages, kept together -----------------------------------

    def _keep(self, turn: Turn) -> None:
        self.turns.append(turn)
        self._turn_chars += _chars(turn)
        self._turn_messages += [{"role": "assistant", "content": turn.assistant},
                                {"role": "user", "content": OBSERVATION_PREFIX + turn.observation}]

    def _forget(self, count: int, newest: bool = False) -> list[Turn]:
        """Take the `count` oldest turns (or the newest) out of the prompt; they are returned."""
        cut = slice(len(self.turns) - count, None) if newest else slice(0, count)
        gone = self.turns[cut]
        del self.turns[cut]
        del self._turn_messages[slice(cut.start * 2, None) if newest else slice(0, count * 2)]
        self._turn_chars -= sum(_chars(t) for t in gone)
        return gone

    def _recut(self, turn: Turn, observation: str) -> None:
        """The newest turn's observation, shown shorter (a message is replaced, never changed: sent prompts keep
        theirs)."""
        self._turn_chars += len(observation) - len(turn.observation)
        turn.observation = observation
        self._turn_messages[-1] = {"role": "user", "content": OBSERVATION_PREFIX + observation}

    # -- rendering ---------------------------------------------------------------------------------

    def _block(self) -> str:
        """What the first user message carries after the task: the summary and the drop note."""
        if not self.summary and not self.dropped:
            return ""
        parts = ["\n\n---\n## Progress so far\nEarlier steps were summarized or dropped to stay within the "
                 "context budget; the most recent steps follow verbatim."]
        if self.summary:
            where = " (their full observations are in observations/)" if self.workspace else ""
            parts.append(f"Summary of {len(self.summarized)} earlier steps{where}:\n{self.summary}")
        if self.dropped:
            parts.append(self._drop_note())
        if self.notes is not None and self.notes.items:
            parts.append(self.notes.prompt_block())
        return "\n\n".join(parts)

    def _drop_note(self) -> str:
        n, first, last = len(self.dropped), min(self.dropped), max(self.dropped)
        what = f"{n} earlier steps were" if n > 1 else "1 earlier step was"
        if self.workspace is None:
            return f"[{what} dropped to stay within the context budget.]"
        files = (f"their full observations are in observations/step-{first:02d}.txt to "
                 f"observations/step-{last:02d}.txt" if n > 1
                 else f"its full observation is in observations/step-{first:02d}.txt")
        return f"[{what} dropped to stay within the context budget; {files}]"

    def _size(self, system: str, task: str, turn_chars: int, turns: int, block_chars: int) -> int:
        chars = len(system) + len(task) + block_chars + turn_chars
        return self.estimator.count(chars, 2 + 2 * turns, self.model)

    # -- keeping within the budget -----------------------------------------------------------------

    def _limit(self) -> int:
        return self.budget_tokens - self.estimator.count(NOTE_RESERVE_CHARS, 0, self.model)

    def _fit(self, system: str, task: str) -> None:
        limit = self._limit()
        if self.prompt_tokens(system, task) <= limit:
            return
        for keep, target in ((self.keep_last, int(limit * REFOLD_TARGET)), (1, limit)):
            count = self._fold_count(system, task, keep, target)
            if count:
                self._compress(task, self._forget(count))
            if self.prompt_tokens(system, task) <= limit:
                return
        self._shrink(system, task, limit)

    def _fold_count(self, system: str, task: str, keep: int, target: int) -> int:
        """How many of the oldest steps to fold so the prompt gets under target (keeping `keep` steps)."""
        most = max(len(self.turns) - keep, 0)
        block = len(self._block()) + 200  # the drop note and headings may grow
        if self.notes is not None and not (self.summary or self.dropped):  # the notes join the block on folding
            block += len(self.notes.prompt_block())
        if self._can_summarize():
            block += max(self.estimator.chars_for(self.summary_tokens, self.model) - len(self.summary), 0)
        left = self._turn_chars
        for count in range(1, most + 1):
            left -= _chars(self.turns[count - 1])
            if self._size(system, task, left, len(self.turns) - count, block) <= target:
                return count
        return most

    def _shrink(self, system: str, task: str, limit: int) -> None:
        """Last resort, one step left: cut its observation further, then the summary, then drop it."""
        if self.turns:
            turn = self.turns[-1]
            over = self.prompt_tokens(system, task) - limit
            room = len(turn.observation) - self.estimator.chars_for(over, self.model) - 300
            self._recut(turn, self._cut(turn, max(room, 1)))
        over = self.prompt_tokens(system, task) - limit
        if over > 0 and self.summary:
            room = len(self.summary) - self.estimator.chars_for(over, self.model) - 200
            self.summary = truncate_middle(self.summary, max(room, 1)) if room > 200 else ""
        if self.prompt_tokens(system, task) > limit and self.turns:
            last = self._forget(1, newest=True)[0]
            self._save(last)
            self.dropped.append(last.step)
        needed = self.prompt_tokens(system, task)
        if needed > limit:
            raise ContextBudgetError(needed, self.budget_tokens)

    def _cut(self, turn: Turn, max_chars: int) -> str:
        """turn's full observation within max_chars; the full text is saved first when anything is cut."""
        if len(turn.full) <= max_chars:
            return turn.full
        saved = self._save(turn)
        note = (f"the full text ({turn.full.count(chr(10)) + 1:,} lines) is saved in {saved}: read the cut "
                "part with the read_file tool (offset/limit in lines)") if saved else ""
        return truncate_middle(turn.full, max_chars, note)

    def _save(self, turn: Turn) -> str | None:
        """Write the step's full observation to observations/step-NN.txt; its workspace-relative path."""
        if turn.saved is not None or self.workspace is None:
            return turn.saved
        rel = Path("observations") / f"step-{turn.step:02d}.txt"
        try:
            replace_file(self.workspace, rel.as_posix(), turn.full.encode("utf-8"))
        except (OSError, WorkspacePathError):  # an unwritable workspace must not end the task
            return None
        turn.saved = rel.as_posix()
        return turn.saved

    # -- summaries ---------------------------------------------------------------------------------

    def _can_summarize(self) -> bool:
        return self.summarizer is not None

    def _compress(self, task: str, turns: list[Turn]) -> None:
        """Fold these oldest steps, already out of the prompt, into the summary (in as many chained calls as
        needed), else drop them."""
        for turn in turns:
            self._save(turn)
        left = list(turns)
        if self._can_summarize():
            for chunk in self._chunks(task, turns):
                summary = self._summarize(task, chunk)
                if summary is None:
                    break
                self.summary = summary
                self.summarized.extend(t.step for t in chunk)
                left = left[len(chunk):]
        self.dropped.extend(t.step for t in left)

    def _summary_room(self, task: str, summary_tokens: int) -> int:
        """Characters left for the steps in a summarization prompt with a summary of this size."""
        model = self.summary_model or self.model
        fixed = self.estimator.count(len(SUMMARY_SYSTEM) + len(task) + 600, 2, model) + summary_tokens
        return self.estimator.chars_for(self._limit() - fixed, model)

    def _chunks(self, task: str, turns: list[Turn]) -> list[list[Turn]]:
        """Split the steps to fold into groups whose summarization prompts fit the budget."""
        # The previous summary in each call is at most the larger of today's and a full share.
        room = self._summary_room(task, max(self.summary_tokens, self.estimator.text_tokens(self.summary)))
        if room < 1000:  # a huge task leaves no room to summarize anything: drop instead
            return []
        return chunks(turns, room)

    def _summarize(self, task: str, turns: list[Turn]) -> str | None:
        """One summarization call; None (with the reason kept in summary_errors) when it fails."""
        assert self.summarizer is not None
        previous = self.estimator.text_tokens(self.summary, self.summary_model or self.model)
        room = self._summary_room(task, previous)
        messages = summary_messages(task, self.summary, turns, room, self.summary_tokens)
        try:
            completion = self.summarizer.complete(messages, max_tokens=self.summary_tokens, temperature=0)
        except LLMFatalError as exc:  # the summary model is unusable: stop trying for this task
            self._failed(exc)
            self.summarizer = None
            return None
        except Exception as exc:  # any summarizer failure: the caller drops the steps and the run goes on
            self._failed(exc)
            return None
        if self.on_summary is not None:
            self.on_summary(completion, messages)
        self.summary_model = completion.model
        self.estimator.calibrate(messages, completion.prompt_tokens, completion.model)
        return self._accept(completion.text.strip())

    def _failed(self, exc: Exception) -> None:
        """Keep why a summary failed; what the provider billed for it still counts in the task's usage."""
        self.summary_errors.append(exc)
        for billed in getattr(exc, "billed", ()):
            if self.on_billed is not None:
                self.on_billed(billed)

    def _accept(self, text: str) -> str | None:
        tokens = self.estimator.text_tokens(text, self.model)
        if not text or tokens > self.summary_tokens:
            reason = "the summary was empty" if not text else "the summary was larger than its share"
            self.summary_errors.append(SummaryRejectedError(reason, tokens))
            return None
        return text


def memory_for_task(settings: Settings, llm: ChatModel, workspace: Path | None, model_spec: str) -> Memory:
    """The memory one task runs with: budget from the settings, summaries written by `llm`."""
    return Memory(budget_tokens=default_budget(settings, model_spec), workspace=workspace, summarizer=llm)


def _chars(turn: Turn) -> int:
    """A turn's characters in the prompt."""
    return len(turn.assistant) + len(OBSERVATION_PREFIX) + len(turn.observation)
