"""What `main.py docs` and search_docs take from a folder and how they say it (issue 52 items 5, 7, 8; issue 54
item 6): a name that is not UTF-8, the index's file modes, hard links and a dot-folder given as the folder, the
counts, a file given as the folder, and queries with no word to search for."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests.fakes.cli import clean_env, run_main
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import openai_reply

MODEL = "openai:gpt-4.1-mini"
PLANTED = "planted-7c1e"


def test_a_name_that_is_not_utf8_is_indexed_under_its_escape_and_found(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "notes.md").write_text("# Notes\n\nNothing about the harbour.\n")
    with open(os.path.join(os.fsencode(docs), b"caf\xe9-ledger.md"), "w") as fh:  # Latin-1, not UTF-8
        fh.write("# Ledger\n\nThe cargo ledger shows 12 tonnes.\n")
    index = run_main(tmp_path, "docs", "index", str(docs))
    assert index.returncode == 0 and "Traceback" not in index.stderr, index.stderr
    assert "2 files" in index.stdout and "new 2" in index.stdout
    found = run_main(tmp_path, "docs", "search", str(docs), "cargo ledger")
    assert found.returncode == 0, found.stderr
    assert found.stdout.startswith("1. caf\\xe9-ledger.md, § Ledger\n")


def test_the_index_is_private_and_so_are_the_runs_that_hold_document_text(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "notes.md").write_text("# Ledger\n\nThe cargo ledger shows 12 tonnes.\n")
    assert run_main(tmp_path, "docs", "index", str(docs)).returncode == 0
    folder = tmp_path / "runs" / "docindex"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    files = list(folder.iterdir())
    assert files and all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in files), [oct(f.stat().st_mode) for f in files]

    def model(req: Request) -> Response:
        if sum(1 for m in req.json()["messages"] if m["role"] == "assistant") == 0:
            return openai_reply('Thought: look\nAction: search_docs\nAction Input: {"query": "cargo ledger"}')
        return openai_reply("Final Answer: The cargo ledger shows 12 tonnes [1].")

    with LoopbackServer(model) as server:
        proc = run_main(tmp_path, "ask", "What does the ledger show?", "--model", MODEL, "--docs", str(docs), "-q",
                        env=clean_env(server, AGENT_SEARCH="0"))
    assert proc.returncode == 0, proc.stderr
    runs = [p for p in (tmp_path / "runs").iterdir() if p.name != "docindex"]
    assert len(runs) == 1 and stat.S_IMODE(runs[0].stat().st_mode) == 0o700  # its traces quote the ledger
    assert b"12 tonnes" in b"".join(p.read_bytes() for p in (runs[0] / "traces").rglob("*") if p.is_file())


def test_hard_links_and_a_dot_folder_given_as_the_folder_are_refused_and_named(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / ".private").mkdir(parents=True)
    (docs / "notes.md").write_text("# Notes\n\nThe cargo ledger shows 12 tonnes.\n")
    (docs / ".env").write_text(f"OPENAI_API_KEY=sk-{PLANTED} cargo ledger\n")
    (tmp_path / "outside.md").write_text(f"# Outside\n\nThe cargo ledger {PLANTED}.\n")
    os.link(tmp_path / "outside.md", docs / "linked-outside.md")
    os.link(docs / ".env", docs / "env-copy.md")
    (docs / ".private" / "keys.md").write_text(f"# Keys\n\nThe cargo ledger {PLANTED}.\n")
    index = run_main(tmp_path, "docs", "index", str(docs))
    assert index.returncode == 0, index.stderr
    assert ("a file with more than one hard link (one may be outside the folder) (2): env-copy.md, "
            "linked-outside.md") in index.stdout
    found = run_main(tmp_path, "docs", "search", str(docs), "cargo ledger")
    assert found.stdout.startswith("1. notes.md") and PLANTED not in found.stdout
    dot = run_main(tmp_path, "docs", "index", str(docs / ".private"))
    assert dot.returncode == 0, dot.stderr
    assert "0 files" in dot.stdout and "a dot-folder (dot-folders are never indexed) (1): .private" in dot.stdout
    assert PLANTED not in run_main(tmp_path, "docs", "search", str(docs / ".private"), "cargo ledger").stdout


def test_docs_commands_say_what_to_do_with_a_file_an_empty_query_and_common_words(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "book.md").write_text("# The harbour\n\nWhat is the harbour? It is a port.\n")
    as_file = run_main(tmp_path, "docs", "index", str(docs / "book.md"))
    assert as_file.returncode == 2 and len(as_file.stderr.strip().splitlines()) == 1
    assert f"{docs / 'book.md'} is a file, not a folder" in as_file.stderr
    assert f"python main.py docs index {docs}" in as_file.stderr and "no such folder" not in as_file.stderr
    for query in ("", "  ", "the", "what is", "What is the?"):
        proc = run_main(tmp_path, "docs", "search", str(docs), query)
        assert proc.returncode == 2 and proc.stdout == "", (query, proc.stdout)
        assert len(proc.stderr.strip().splitlines()) == 1 and "main.py docs: error:" in proc.stderr
    assert "no word to search for" in run_main(tmp_path, "docs", "search", str(docs), "what is").stderr
    assert run_main(tmp_path, "docs", "search", str(docs), "what is the harbour").stdout.startswith("1. book.md")


def test_search_docs_with_common_words_only_tells_the_model_so(tmp_path: Path) -> None:
    from config import Settings
    from core.errors import ToolError
    from tools.docsearch import SearchDocsTool

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "book.md").write_text("# The harbour\n\nWhat is the harbour? It is a port.\n")
    tool = SearchDocsTool(Settings(docs_dirs=(docs,), runs_dir=tmp_path / "runs"))
    with pytest.raises(ToolError, match="no word to search for"):
        tool.run(query="what is the")
    assert [r.url for r in tool.run(query="harbour port").read] == ["book.md, § The harbour"]
