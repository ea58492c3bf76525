"""A step's tool input as a reader wants it: code highlighted with its real line breaks, other values as JSON.

The python tool's `code`, the shell tool's `command` (and any multi-line string argument) are shown as code
blocks rather than a JSON string full of literal \\n. Highlighting is Pygments' (installed with rich): spans
with CSS classes, styled by the page's own stylesheet, so the page still runs no script but its own.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from report.html.markdown import esc

CODE_KEYS = {"code", "script", "source", "python", "command"}  # argument names that hold code (shell's command)
_PYTHON_TOOLS = {"python", "python_exec", "run_python"}


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "\n…"


def _is_python(tool: str | None, key: str) -> bool:
    return key in CODE_KEYS and (tool in _PYTHON_TOOLS or key == "python" or (tool or "").endswith("python"))


def code_block(code: str, python: bool, limit: int) -> str:
    """A <pre><code> block with real line breaks; Python highlighted."""
    shown = _cut(code, limit)
    if not python:
        return f'<pre class="code"><code>{esc(shown)}</code></pre>'
    from pygments import highlight  # heavy (~10 ms): imported by the first page that shows code, not at start-up
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    spans = highlight(shown, PythonLexer(), HtmlFormatter(nowrap=True))  # escapes the code itself
    return f'<pre class="code hl"><code class="language-python">{spans.rstrip(chr(10))}</code></pre>'


def arguments_html(tool: str | None, arguments: Any, fallback: str, limit: int) -> str:
    """The tool input of a step: code arguments as code blocks, the other arguments as JSON above them."""
    if not isinstance(arguments, dict):
        return f"<pre>{esc(_cut(fallback, limit))}</pre>" if fallback else ""
    code = {k: v for k, v in arguments.items() if isinstance(v, str) and (k in CODE_KEYS or "\n" in v)}
    rest = {k: v for k, v in arguments.items() if k not in code}
    html = f"<pre>{esc(_cut(json.dumps(rest, ensure_ascii=False, indent=1), limit))}</pre>" if rest else ""
    for key, value in code.items():
        label = "" if len(arguments) == 1 and key in CODE_KEYS else f'<div class="meta">{esc(key)}:</div>'
        html += label + code_block(value, _is_python(tool, key), limit)
    return html


@cache
def code_css() -> str:
    """The highlighter's colours, scoped to the page's code blocks (its page-wide rules and comments left out)."""
    from pygments.formatters import HtmlFormatter  # heavy: imported when a page is first written

    rules = str(HtmlFormatter(style="default").get_style_defs(".hl")).splitlines()
    return "".join(line.split(" /* ")[0] for line in rules if line.startswith(".hl .") and "{ background" not in line)
