"""The notes tool: facts, partial results and a plan the model keeps itself, verbatim, for the whole task.

The memory (prompt/memory.py) summarises older steps to stay within the context budget; the notes are not
summarised: once steps were folded or dropped, the current notes are shown verbatim after the task. Their
size is bounded so they cannot crowd out the steps, and the task's record keeps them.
"""

from __future__ import annotations

from typing import Any

from core.errors import ToolError
from tools.base import Tool, ToolOutput

MAX_NOTES = 30
MAX_NOTE_CHARS = 1_000  # one note
MAX_TOTAL_CHARS = 4_000  # all notes together: about 1,000 tokens of every prompt once steps were summarised


class NotesFullError(ToolError):
    """A note would take the notes over their size; the message says how to make room."""


class Notes:
    """The task's notes, numbered from 1 in the order they were added."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def clear(self) -> None:
        """Forget every note (a new task starts)."""
        self.items.clear()

    def chars(self) -> int:
        """Characters of all notes together."""
        return sum(len(n) for n in self.items)

    def add(self, text: str) -> int:
        """Add a note; its number."""
        text = self._checked(text, self.chars())
        if len(self.items) >= MAX_NOTES:
            raise NotesFullError(f"the notes are full ({MAX_NOTES} notes): replace or delete one first")
        self.items.append(text)
        return len(self.items)

    def replace(self, number: int, text: str) -> None:
        """Replace note `number` with text."""
        index = self._index(number)
        self.items[index] = self._checked(text, self.chars() - len(self.items[index]))

    def delete(self, number: int) -> str:
        """Remove note `number` (the later ones move up by one); its text."""
        return self.items.pop(self._index(number))

    def listing(self) -> str:
        """The notes as the model reads them: `N. text`, one per line block."""
        if not self.items:
            return "(no notes yet)"
        return "\n".join(f"{i}. {text}" for i, text in enumerate(self.items, start=1))

    def prompt_block(self) -> str:
        """The notes as the prompt carries them after the task once older steps were summarised."""
        if not self.items:
            return ""
        return f"## Your notes (kept verbatim; change them with the notes tool)\n{self.listing()}"

    def _checked(self, text: str, others: int) -> str:
        text = text.strip()
        if not text:
            raise ToolError("a note needs some text")
        if len(text) > MAX_NOTE_CHARS:
            raise NotesFullError(f"a note holds at most {MAX_NOTE_CHARS:,} characters, this one has "
                                 f"{len(text):,}: keep only what you will need")
        if others + len(text) > MAX_TOTAL_CHARS:
            raise NotesFullError(f"the notes are full ({others:,} of {MAX_TOTAL_CHARS:,} characters used, this "
                                 f"note needs {len(text):,}): shorten, replace or delete notes first")
        return text

    def _index(self, number: int) -> int:
        if not 1 <= number <= len(self.items):
            have = f"notes 1 to {len(self.items)}" if self.items else "no notes yet"
            raise ToolError(f"there is no note {number}: there are {have}")
        return number - 1


class NotesTool(Tool):
    """Keeps the task's notes; the agent shows them in the prompt and the task's record."""

    name = "notes"
    brief = "Your notes, kept verbatim: `add` one, `replace` N with `text`, `delete` N; {} lists them."
    description = (
        "Your notes for this task (facts with sources, your plan), kept verbatim when older steps are "
        "summarised: `add` a note, `replace` note N with `text`, `delete` note N; {} lists them. At most "
        f"{MAX_NOTES} notes, {MAX_TOTAL_CHARS:,} characters.")
    parameters = {
        "type": "object",
        "properties": {
            "add": {"type": "string"},
            "replace": {"type": "integer", "minimum": 1},
            "text": {"type": "string"},
            "delete": {"type": "integer", "minimum": 1},
        },
        "additionalProperties": False,
    }

    def __init__(self, notes: Notes | None = None) -> None:
        self.notes = notes or Notes()

    def run(self, **kwargs: Any) -> str | ToolOutput:
        """Add, replace, delete or list notes; the observation always ends with the notes as they are now."""
        asked = [k for k in ("add", "replace", "delete") if k in kwargs]
        if len(asked) > 1:
            raise ToolError(f"one change per call: got {', '.join(asked)}")
        if "text" in kwargs and "replace" not in kwargs:
            raise ToolError('"text" goes with "replace": use {"add": TEXT} for a new note')
        if "add" in kwargs:
            done = f"Added note {self.notes.add(kwargs['add'])}."
        elif "replace" in kwargs:
            if "text" not in kwargs:
                raise ToolError('{"replace": N} needs "text": the new text of note N')
            self.notes.replace(kwargs["replace"], kwargs["text"])
            done = f"Replaced note {kwargs['replace']}."
        elif "delete" in kwargs:
            self.notes.delete(kwargs["delete"])
            done = f"Deleted note {kwargs['delete']}; later notes moved up by one."
        else:
            done = "Your notes:"
        n = len(self.notes.items)
        used = f"({n} note{'' if n == 1 else 's'}, {self.notes.chars():,} of {MAX_TOTAL_CHARS:,} characters)"
        return f"{done} {used}\n{self.notes.listing()}"
