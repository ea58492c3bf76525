"""Workspace file tools: every way out of the workspace is refused; paging, binaries, size caps, listings."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from core.errors import ToolError
from tools.base import ToolArgumentsError, ToolRegistry
from tools.files import ListFilesTool, ReadFileTool, WriteFileTool
from tools.safe_open import workspace_parts


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A workspace with a sibling directory whose name shares its prefix, and a directory outside both."""
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws2").mkdir()
    (tmp_path / "ws2" / "secret.txt").write_text("sibling secret")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("outside secret")
    return tmp_path / "ws"


ESCAPES = ["../outside/secret.txt", "../../etc/passwd", "/etc/passwd", "sub/../../outside/secret.txt",
           "../ws2/secret.txt", "..", "/"]


@pytest.mark.parametrize("path", ESCAPES)
def test_read_file_refuses_paths_outside_the_workspace(ws: Path, path: str) -> None:
    with pytest.raises(ToolError, match=r"outside the workspace") as info:
        ReadFileTool(ws).run(path=path)
    assert repr(path) in str(info.value)


@pytest.mark.parametrize("path", ESCAPES)
def test_write_file_refuses_paths_outside_the_workspace(ws: Path, path: str) -> None:
    with pytest.raises(ToolError, match=r"outside the workspace"):
        WriteFileTool(ws).run(path=path, content="pwned")
    assert (ws.parent / "outside" / "secret.txt").read_text() == "outside secret"
    assert (ws.parent / "ws2" / "secret.txt").read_text() == "sibling secret"


@pytest.mark.parametrize("path", ["..", "../ws2", "/etc", "../outside"])
def test_list_files_refuses_directories_outside_the_workspace(ws: Path, path: str) -> None:
    with pytest.raises(ToolError, match=r"outside the workspace"):
        ListFilesTool(ws).run(path=path)


def test_sibling_directory_with_the_same_prefix_is_outside(ws: Path) -> None:
    sibling = ws.parent / "ws2" / "secret.txt"
    with pytest.raises(ToolError, match="outside the workspace"):
        workspace_parts(ws, str(sibling))
    with pytest.raises(ToolError, match="outside the workspace"):
        ReadFileTool(ws).run(path=str(sibling))


def test_symlinks_are_never_followed(ws: Path) -> None:
    os.symlink(ws.parent / "outside", ws / "linkdir")
    os.symlink(ws.parent / "outside" / "secret.txt", ws / "linkfile")
    os.symlink(ws.parent / "outside" / "new.txt", ws / "dangling")
    (ws / "data").mkdir()
    (ws / "data" / "a.txt").write_text("inside\n")
    os.symlink(ws / "data", ws / "alias")  # even a link that stays inside: the target could be swapped
    for path in ("linkfile", "linkdir/secret.txt", "alias/a.txt"):
        with pytest.raises(ToolError, match="symbolic link"):
            ReadFileTool(ws).run(path=path)
    for path in ("linkdir/new.txt", "dangling"):
        with pytest.raises(ToolError, match="symbolic link"):
            WriteFileTool(ws).run(path=path, content="x")
    with pytest.raises(ToolError, match="symbolic link"):
        ListFilesTool(ws).run(path="linkdir")
    assert sorted(os.listdir(ws.parent / "outside")) == ["secret.txt"]


def test_absolute_and_dotted_paths_inside_the_workspace_are_allowed(ws: Path) -> None:
    (ws / "data").mkdir()
    (ws / "data" / "a.txt").write_text("inside\n")
    assert "inside" in ReadFileTool(ws).run(path=str(ws / "data" / "a.txt"))
    assert "inside" in ReadFileTool(ws).run(path="data/../data/./a.txt")


def test_nul_byte_in_a_path_is_refused(ws: Path) -> None:
    with pytest.raises(ToolError, match="not a valid file name"):
        ReadFileTool(ws).run(path="a\x00b")


def test_tools_create_the_workspace_on_first_use(tmp_path: Path) -> None:
    ws = tmp_path / "later" / "ws"
    writer, reader, lister = WriteFileTool(ws), ReadFileTool(ws), ListFilesTool(ws)
    assert not ws.exists()
    assert lister.run() == "The workspace is empty."
    writer.run(path="n.txt", content="hello")
    assert "hello" in reader.run(path="n.txt")


# --- read_file ---------------------------------------------------------------------------------------


def test_read_small_file_whole(ws: Path) -> None:
    (ws / "notes.txt").write_bytes(b"alpha\r\nbeta\r\ngamma\n")
    out = ReadFileTool(ws).run(path="notes.txt")
    assert out == "File notes.txt (3 lines):\nalpha\nbeta\ngamma"


def test_read_pages_through_a_long_file(ws: Path) -> None:
    (ws / "big.txt").write_text("".join(f"row {i}\n" for i in range(1, 5001)))
    reader = ReadFileTool(ws)
    first = reader.run(path="big.txt")
    assert "lines 1-200 of 5,000" in first
    assert "row 200\n" in first and "row 201\n" not in first
    assert "4,800 more lines" in first and "offset=201" in first
    second = reader.run(path="big.txt", offset=201, limit=100)
    assert "lines 201-300 of 5,000" in second
    assert second.splitlines()[1] == "row 201"
    assert "offset=301" in second
    last = reader.run(path="big.txt", offset=4901, limit=200)
    assert "lines 4,901-5,000 of 5,000" in last and last.endswith("row 5000")
    assert "more lines" not in last


def test_offset_past_the_end_is_an_error(ws: Path) -> None:
    (ws / "short.txt").write_text("one\ntwo\n")
    with pytest.raises(ToolError, match="past the end.*2 lines"):
        ReadFileTool(ws).run(path="short.txt", offset=10)


def test_a_very_long_line_is_shortened_in_the_middle(ws: Path) -> None:
    (ws / "min.txt").write_text("[" + "1," * 50_000 + "2]")  # (a .json file is pretty-printed instead)
    out = ReadFileTool(ws).run(path="min.txt")
    assert len(out) < 2_500
    assert "line shortened" in out
    assert out.splitlines()[1].startswith("[1,1,") and out.endswith("1,2]")


def test_a_page_of_long_lines_stops_early_and_says_where_to_continue(ws: Path) -> None:
    (ws / "wide.txt").write_text("".join(f"{i:04d}" + "w" * 1_500 + "\n" for i in range(1, 201)))
    out = ReadFileTool(ws).run(path="wide.txt")
    assert len(out) < 45_000
    shown = out.splitlines()[1:-1]
    assert shown[-1].startswith(f"{len(shown):04d}")
    assert f"offset={len(shown) + 1}" in out
    assert f"{200 - len(shown):,} more lines" in out


def test_binary_files_are_described_not_dumped(ws: Path) -> None:
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40
    (ws / "chart.png").write_bytes(png)
    (ws / "blob.dat").write_bytes(b"abc\x00\x01\x02" * 100)
    out = ReadFileTool(ws).run(path="chart.png")
    assert out == (f"chart.png is a binary file (PNG image, {len(png):,} bytes); it is not shown as text. "
                   "Use look(path='chart.png', question=...) to have a vision model describe or read it.")
    assert "binary data, 600 bytes" in ReadFileTool(ws).run(path="blob.dat")


def test_invalid_utf8_is_decoded_with_replacement(ws: Path) -> None:
    (ws / "latin1.txt").write_bytes("café olé\n".encode("latin-1"))
    out = ReadFileTool(ws).run(path="latin1.txt")
    assert "caf\ufffd ol\ufffd" in out


def test_read_missing_file_directory_and_empty_file(ws: Path) -> None:
    (ws / "sub").mkdir()
    (ws / "empty.txt").write_text("")
    with pytest.raises(ToolError, match="no file 'nope.txt'.*list_files"):
        ReadFileTool(ws).run(path="nope.txt")
    with pytest.raises(ToolError, match="is a directory"):
        ReadFileTool(ws).run(path="sub")
    assert ReadFileTool(ws).run(path="empty.txt") == "File empty.txt is empty (0 bytes)."


# --- write_file --------------------------------------------------------------------------------------


def test_write_creates_parent_directories_and_reports_bytes_and_path(ws: Path) -> None:
    out = WriteFileTool(ws).run(path="reports/2024/summary.md", content="# Café\n")
    assert out == "Wrote 8 bytes to reports/2024/summary.md (the file is now 8 bytes)."
    assert (ws / "reports" / "2024" / "summary.md").read_text(encoding="utf-8") == "# Café\n"


def test_overwrite_replaces_and_append_adds(ws: Path) -> None:
    writer = WriteFileTool(ws)
    writer.run(path="log.txt", content="first version that is long\n")
    writer.run(path="log.txt", content="one\n", mode="overwrite")
    out = writer.run(path="log.txt", content="two\n", mode="append")
    assert (ws / "log.txt").read_text() == "one\ntwo\n"
    assert out == "Appended 4 bytes to log.txt (the file is now 8 bytes)."


def test_write_is_capped_at_max_bytes(ws: Path) -> None:
    writer = WriteFileTool(ws, max_bytes=100)
    assert "Wrote 100 bytes" in writer.run(path="exact.txt", content="x" * 100)
    with pytest.raises(ToolError, match="101 bytes exceeds the write_file limit of 100 bytes"):
        writer.run(path="big.txt", content="x" * 101)
    assert not (ws / "big.txt").exists()


def test_append_that_would_exceed_the_cap_is_refused_and_leaves_the_file(ws: Path) -> None:
    writer = WriteFileTool(ws, max_bytes=100)
    writer.run(path="grow.txt", content="a" * 60)
    with pytest.raises(ToolError, match="appending 50 bytes to 60 exceeds .* limit of 100 bytes"):
        writer.run(path="grow.txt", content="b" * 50, mode="append")
    assert (ws / "grow.txt").read_text() == "a" * 60


def test_cap_counts_utf8_bytes_not_characters(ws: Path) -> None:
    with pytest.raises(ToolError, match="limit of 10 bytes"):
        WriteFileTool(ws, max_bytes=10).run(path="u.txt", content="é" * 6)  # 6 characters, 12 bytes


def test_writing_to_a_directory_is_refused(ws: Path) -> None:
    (ws / "sub").mkdir()
    with pytest.raises(ToolError, match="is a directory"):
        WriteFileTool(ws).run(path="sub", content="x")
    with pytest.raises(ToolError, match="is a directory"):
        WriteFileTool(ws).run(path=".", content="x")


def test_unknown_write_mode_is_rejected_by_the_schema(ws: Path) -> None:
    registry = ToolRegistry([WriteFileTool(ws), ReadFileTool(ws), ListFilesTool(ws)])
    assert registry.names() == ["write_file", "read_file", "list_files"]
    with pytest.raises(ToolArgumentsError, match="mode"):
        registry.prepare("write_file", {"path": "a.txt", "content": "x", "mode": "prepend"})
    _, args = registry.prepare("read_file", "notes.txt")  # a bare string fills the one required path
    assert args == {"path": "notes.txt"}


# --- list_files --------------------------------------------------------------------------------------


def test_list_shows_sizes_and_marks_directories(ws: Path) -> None:
    (ws / "data").mkdir()
    (ws / "data" / "table.csv").write_bytes(b"x" * 2048)
    (ws / "notes.md").write_bytes(b"hi")
    (ws / ".env.example").write_bytes(b"K=V")
    out = ListFilesTool(ws).run()
    assert out.splitlines() == [
        "Files in the workspace (4 entries):",
        ".env.example  (3 B)",
        "data/",
        "data/table.csv  (2.0 KB)",
        "notes.md  (2 B)",
    ]


def test_list_skips_the_python_tool_scratch_dirs_unless_asked(ws: Path) -> None:
    for name in (".home", ".tmp", ".python"):
        (ws / name).mkdir()
    (ws / ".python" / "step-001.py").write_text("print(1)\n")
    (ws / "result.txt").write_text("r")
    out = ListFilesTool(ws).run(path=".")
    assert out.splitlines()[1:] == ["result.txt  (1 B)"]
    assert "step-001.py" in ListFilesTool(ws).run(path=".python")


def test_list_caps_entries_and_shows_nearest_first(ws: Path) -> None:
    deep = ws / "a_many"
    deep.mkdir()
    for i in range(250):
        (deep / f"f{i:03d}.txt").write_text("x")
    (ws / "z_top.txt").write_text("top")
    out = ListFilesTool(ws).run()
    lines = out.splitlines()
    assert "z_top.txt  (3 B)" in lines  # a top-level file is not crowded out by a big subdirectory
    assert len([line for line in lines if line.startswith("a_many/f")]) == 198  # 200 = 2 top-level + 198
    assert lines[-1] == "[52 more entries not shown; list a subdirectory to see them]"
    sub = ListFilesTool(ws).run(path="a_many")
    assert sub.startswith("Files in a_many/ (200 entries, not all shown):")
    assert "f000.txt  (1 B)" in sub


def test_list_does_not_follow_symlinks(ws: Path) -> None:
    (ws / "d").mkdir()
    (ws / "d" / "f.txt").write_text("f")
    os.symlink(ws, ws / "d" / "loop")
    os.symlink(ws.parent / "outside", ws / "out")
    out = ListFilesTool(ws).run()
    assert f"d/loop -> {ws}" in out
    assert f"out -> {ws.parent / 'outside'}" in out
    assert "secret.txt" not in out
    assert "d/loop/" not in out


def test_list_a_file_a_missing_dir_and_an_empty_dir(ws: Path) -> None:
    (ws / "only.txt").write_text("12345")
    (ws / "emptydir").mkdir()
    assert ListFilesTool(ws).run(path="only.txt") == "only.txt is a file (5 B); use read_file to read it."
    assert ListFilesTool(ws).run(path="emptydir") == "Directory emptydir/ is empty."
    with pytest.raises(ToolError, match="no directory 'missing'"):
        ListFilesTool(ws).run(path="missing")
