"""The parser every command line uses: a usage error is one line naming what was wrong, and exit 2.

argparse prints the whole usage (twenty lines for main.py) above its error; this one prints only the error,
the nearest real flag for a misspelt one, the environment variable a flag's setting also comes from, and
where the full list is: `main.py: error: unrecognized arguments: --modle (did you mean --model?); see
main.py --help`. `type=int` and `type=float` take ASCII digits only. Imports only the standard library and
core.values.
"""

from __future__ import annotations

import argparse
import difflib
import re
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

from core.values import number, whole


class ArgumentParser(argparse.ArgumentParser):
    """argparse.ArgumentParser whose usage errors are one line; `variables` maps a flag to its setting's
    environment variable (`--max-cost` -> `AGENT_MAX_COST`), named beside the flag in an error."""

    variables: Mapping[str, str] = {}
    elsewhere: Mapping[str, str] = {}  # a flag another command has -> that command (`--concurrency` -> `main.py TASKS`)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # type=int and type=float take ASCII digits only (int() also takes '٣'), in every group and subcommand.
        self.register("type", int, _ascii(whole))
        self.register("type", float, _ascii(number))

    def error(self, message: str) -> NoReturn:
        """Print one line to stderr and exit 2 (argparse's own convention for usage errors)."""
        message = re.sub(r"^argument (\S+?)(/\S+)?:", self._flag_and_variable, message)
        line = f"{self.prog}: error: {message}{self._guess(message)}; see {self.prog} --help"
        self.exit(2, " ".join(line.split()) + "\n")

    def _flag_and_variable(self, match: re.Match[str]) -> str:
        flags = (match.group(1) + (match.group(2) or "")).split("/")
        variable = next((self.variables[f] for f in flags if f in self.variables), None)
        return f"argument {'/'.join(flags)}" + (f" ({variable})" if variable else "") + ":"

    def _guess(self, message: str) -> str:
        """` (did you mean --model?)` for misspelt flags, `` when nothing is near."""
        if not message.startswith("unrecognized arguments:"):
            return ""
        known = [flag for action in self._actions for flag in action.option_strings]
        flags = [word.split("=", 1)[0] for word in message.partition(":")[2].split() if word.startswith("-")]
        other = [flag for flag in flags if flag in self.elsewhere]
        if other:
            return f" ({other[0]} is a flag of `{self.elsewhere[other[0]]}`, not of `{self.prog}`)"
        pairs = [(flag, near) for flag in flags if (near := close_word(flag, known))]
        if not pairs:
            return ""
        return f" (did you mean {pairs[0][1]}?)" if len(pairs) == 1 else \
            f" (did you mean {', '.join(f'{near} for {flag}' for flag, near in pairs)}?)"


def _ascii(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    def convert(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"{exc}, not {text!r}") from None

    return convert


def close_word(word: str, choices: list[str]) -> str | None:
    """The choice nearest to a misspelt word (`--modle` -> `--model`, `rnus` -> `runs`), or None."""
    near = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return near[0] if near else None
