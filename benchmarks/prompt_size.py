"""The system prompt's size: characters per built-in tool, the frame around them, the whole prompt.

Usage: python benchmarks/prompt_size.py

Every built-in tool is offered (a vision and a speech model are set so that look, transcribe and watch are
described too). A tool's characters are what the prompt loses without it: its section (heading, description,
input) and its name in the format's list of tools. Both forms: the full prompt, and the compact one the agent
sends when the window or --context-budget is small.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from config import load_settings  # noqa: E402
from prompt.protocol import render_system_prompt  # noqa: E402
from tools.base import ToolRegistry  # noqa: E402
from tools.builtin import default_tools  # noqa: E402


def measure(compact: bool) -> tuple[list[tuple[str, int]], int]:
    """(tool, characters of its section) for every built-in tool, and the whole prompt's characters."""
    settings = dataclasses.replace(load_settings({}), vision_model="gemini:gemini-2.5-flash",
                                   transcribe_model="openai:whisper-1")
    with tempfile.TemporaryDirectory() as scratch:
        tools = ToolRegistry(default_tools(settings, Path(scratch)))
    whole = render_system_prompt(tools, compact=compact)
    without = {t.name: len(render_system_prompt(ToolRegistry([o for o in tools if o is not t]), compact=compact))
               for t in tools}
    return [(name, len(whole) - size) for name, size in without.items()], len(whole)


def main() -> int:
    """Print the table."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.parse_args()
    for compact in (False, True):
        rows, total = measure(compact)
        print(f"\n{'compact' if compact else 'full'} prompt: {total:,} characters, {len(rows)} tools")
        print("| tool | characters |\n|---|---:|")
        for name, chars in rows:
            print(f"| {name} | {chars:,} |")
        tools = sum(c for _, c in rows)
        print(f"| (all tools) | {tools:,} |\n| (frame: role, format) | {total - tools:,} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
