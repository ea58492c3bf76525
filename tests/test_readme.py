"""The README, docs/ and the CLI must not drift: commands, flags, settings, links and the Python example."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import config
import main
from tests.fakes.scripted import ScriptedLLM

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
CONFIGURATION = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
TOOLS = (ROOT / "docs" / "tools-and-mcp.md").read_text(encoding="utf-8")


def test_quickstart_has_exactly_the_two_commands() -> None:
    assert "pip install -r requirements.txt && python main.py tasks.txt -o results.md" in README
    assert "pip install -r requirements-dev.txt && pytest" in README
    assert (ROOT / "requirements.txt").is_file() and (ROOT / "requirements-dev.txt").is_file()
    assert (ROOT / "tasks.txt").is_file() and (ROOT / ".env.example").is_file()


def _parser_flags() -> set[str]:
    parser = main.build_parser()
    return {s for action in parser._actions for s in action.option_strings}


def test_every_documented_flag_exists() -> None:
    documented = set(re.findall(r"`(-{1,2}[a-z][a-z-]*)`", CONFIGURATION.split("\n\n| ", 1)[1]))
    assert documented, "the configuration table lists no flags"
    assert documented <= _parser_flags()


def test_every_flag_is_documented() -> None:
    undocumented = {f for f in _parser_flags() if f"`{f}`" not in CONFIGURATION and f not in {"-h", "--help"}}
    assert not undocumented


def test_every_setting_is_documented_in_configuration_and_env_example() -> None:
    env_example = (ROOT / ".env.example").read_text(encoding="utf-8")
    for _, variables, _ in config._ENV:
        assert f"`{variables[0]}`" in CONFIGURATION, variables[0]
        assert variables[0] in env_example, variables[0]


def test_docs_python_example_runs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    code = TOOLS.split("### Adding a tool", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    llm = ScriptedLLM([
        'Thought: count\nAction: word_count\nAction Input: {"text": "the quick brown fox"}',
        'Action: exchange_rate\nAction Input: "EUR"',
        "Final Answer: 4 words; 1 EUR = 1.08 USD",
    ])
    monkeypatch.setattr("llm.build_llm", lambda settings, **kw: llm)
    namespace: dict[str, object] = {}
    exec(compile(code, "docs/tools-and-mcp.md", "exec"), namespace)
    result = namespace["result"]
    assert result.answer == "4 words; 1 EUR = 1.08 USD"  # type: ignore[attr-defined]
    observations = [s.observation for s in result.steps[:2]]  # type: ignore[attr-defined]
    assert observations == ["4", "[1] Demo exchange rates — https://example.org/rates\n1 EUR = 1.08 USD"]
    assert result.sources == ["https://example.org/rates"]  # type: ignore[attr-defined]


def test_readme_is_short_and_the_rest_is_in_docs() -> None:
    """A newcomer reads one page: the README stays under 3,000 words and links every page of docs/."""
    assert len(README.split()) <= 3000
    pages = {p.name for p in (ROOT / "docs").glob("*.md")}
    assert pages and {name for name in pages if f"](docs/{name})" not in README} == set()


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return {_anchor(h) for h in re.findall(r"^#+ (.+)$", text, flags=re.M)}


@pytest.mark.parametrize("page", ["README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md"))])
def test_relative_links_resolve(page: str) -> None:
    """Every relative link in the README and docs/ names a file that exists, and an anchor that it has."""
    source = ROOT / page
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", source.read_text(encoding="utf-8")):
        if re.match(r"<?[a-z]+:", target):  # an absolute URL, also written <https://...>
            continue
        file, _, anchor = target.partition("#")
        path = (source.parent / file).resolve() if file else source
        if not path.exists() or (anchor and path.suffix == ".md" and anchor not in _anchors(path)):
            broken.append(target)
    assert broken == []


def test_readme_examples_parse() -> None:
    """Every `python main.py` line in the README's examples uses flags the CLI has."""
    block = README.split("## Examples", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    commands = [line.split("#", 1)[0].split()[2:] for line in block.splitlines() if line.startswith("python main.py")]
    assert len(commands) >= 5
    for argv in commands:
        if argv[0] in main.SUBCOMMANDS:
            continue
        args = main.parse_args([a.strip('"') for a in argv])
        assert args.tasks, argv
