"""The last call of a task out of steps or time: the note that asks for a final answer from what was gathered."""

from __future__ import annotations

from core.chat import Message

FINISH_NOTE = ("You have no steps left. Using only the information gathered so far, reply now with "
               "`Final Answer:` followed by your best answer, and say what remains uncertain.")


def with_user_note(messages: list[Message], note: str) -> list[Message]:
    """Append a note to the last user message (or add one), keeping roles alternating."""
    out = list(messages)
    if out and out[-1]["role"] == "user":
        out[-1] = {"role": "user", "content": out[-1]["content"] + "\n\n" + note}
    else:
        out.append({"role": "user", "content": note})
    return out
