"""edit_file: one exact occurrence replaced, ambiguous or missing text refused with its count and nothing changed,
insert after a line, numbered views, and nothing outside the workspace (paths, symlinks) or binary touched."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from core.errors import ToolError
from tools.base import ToolOutput, ToolRegistry
from tools.edit_file import EditFileTool

TEXT = "alpha\nbeta = 1\ngamma\nbeta = 1\ndelta\n"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.py").write_text(TEXT)
    return root


def edit(ws: Path, **args: object) -> str:
    return str(EditFileTool(ws).run(**args))


def test_one_exact_occurrence_is_replaced_and_the_lines_around_are_shown(ws: Path) -> None:
    out = edit(ws, path="notes.py", old_str="gamma\n", new_str="gamma = 3\nepsilon\n")
    assert (ws / "notes.py").read_text() == "alpha\nbeta = 1\ngamma = 3\nepsilon\nbeta = 1\ndelta\n"
    assert out.startswith("Replaced the one occurrence in notes.py; lines 1-6 now:")
    assert "     3\tgamma = 3" in out and "     4\tepsilon" in out


def test_an_ambiguous_old_str_is_refused_with_its_count_and_lines(ws: Path) -> None:
    with pytest.raises(ToolError, match=r"occurs 2 times in notes.py \(lines 2, 4\); nothing changed"):
        edit(ws, path="notes.py", old_str="beta = 1", new_str="beta = 2")
    assert (ws / "notes.py").read_text() == TEXT
    edit(ws, path="notes.py", old_str="gamma\nbeta = 1", new_str="gamma\nbeta = 2")  # made unique by context
    assert (ws / "notes.py").read_text() == "alpha\nbeta = 1\ngamma\nbeta = 2\ndelta\n"


def test_a_missing_old_str_is_refused_with_count_zero(ws: Path) -> None:
    with pytest.raises(ToolError, match="occurs 0 times in notes.py; nothing changed"):
        edit(ws, path="notes.py", old_str="Gamma", new_str="x")
    assert (ws / "notes.py").read_text() == TEXT


def test_an_empty_new_str_deletes_and_crlf_files_match_plain_newlines(ws: Path) -> None:
    (ws / "dos.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    edit(ws, path="dos.txt", old_str="one\ntwo\n")
    assert (ws / "dos.txt").read_bytes() == b"three\r\n"


def test_insert_after_a_line_at_the_top_and_at_the_end(ws: Path) -> None:
    out = edit(ws, path="notes.py", insert_line=2, new_str="inserted")
    assert (ws / "notes.py").read_text().splitlines()[2] == "inserted"
    assert out.startswith("Inserted after line 2 in notes.py") and "     3\tinserted" in out
    edit(ws, path="notes.py", insert_line=0, new_str="# top\n")
    (ws / "open.txt").write_text("no newline at the end")
    edit(ws, path="open.txt", insert_line=1, new_str="second")
    assert (ws / "notes.py").read_text().startswith("# top\nalpha\n")
    assert (ws / "open.txt").read_text() == "no newline at the end\nsecond\n"
    with pytest.raises(ToolError, match="past the end: notes.py has 7 lines; nothing changed"):
        edit(ws, path="notes.py", insert_line=8, new_str="x")


def test_view_shows_numbered_lines_and_is_a_source(ws: Path) -> None:
    tool = EditFileTool(ws)
    out = str(tool.run(path="notes.py", view_range=[2, 3]))
    assert out == "notes.py: lines 2-3 of 5:\n     2\tbeta = 1\n     3\tgamma\n[2 more lines; view from 4]"
    assert str(tool.run(path="notes.py", view_range=[4, -1])).endswith("     5\tdelta")
    assert [r.url for r in tool.reads({"path": "notes.py", "view_range": [1, 2]}, ToolOutput(out))] == ["notes.py"]
    with pytest.raises(ToolError, match="not within notes.py, which has 5 lines"):
        tool.run(path="notes.py", view_range=[9, 12])


def test_paths_outside_the_workspace_and_symlinks_are_refused(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret = 1\n")
    os.symlink(outside, ws / "link.txt")
    for path in ("../outside.txt", str(outside), "link.txt"):
        with pytest.raises(ToolError):
            edit(ws, path=path, old_str="secret = 1", new_str="secret = 2")
        with pytest.raises(ToolError):
            edit(ws, path=path, view_range=[1, 1])
    assert outside.read_text() == "secret = 1\n"


def test_binary_and_non_utf8_files_are_refused(ws: Path) -> None:
    (ws / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 20)
    (ws / "latin.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    with pytest.raises(ToolError, match="binary file"):
        edit(ws, path="image.png", old_str="PNG", new_str="x")
    with pytest.raises(ToolError, match="not UTF-8 text"):
        edit(ws, path="latin.txt", insert_line=0, new_str="x")


def test_one_mode_at_a_time_and_a_short_description(ws: Path) -> None:
    with pytest.raises(ToolError, match="exactly one of"):
        edit(ws, path="notes.py", old_str="alpha", insert_line=1, new_str="x")
    registry = ToolRegistry([EditFileTool(ws)])
    assert registry.names() == ["edit_file"] and len(EditFileTool.description) <= 300
