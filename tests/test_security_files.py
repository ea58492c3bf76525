"""File tools and downloads under attack: link swaps raced against the tools, hard links, FIFOs, devices."""

from __future__ import annotations

import os
import shutil
import stat
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest

import tools.safe_open as safe_open
from config import Settings
from core.errors import ToolError
from prompt.memory import Memory
from tests.fakes.loopback import LoopbackServer, Response, routes
from tools.base import ToolOutput
from tools.files import ListFilesTool, ReadFileTool, WriteFileTool
from tools.web.scrape import ScrapeTool

SECRET = "TOPSECRET-planted-outside"
RACE_SECONDS = 2.0
RACE_LIMIT = 60.0  # on a loaded machine (other test workers) the race goes on until both outcomes were met
HOLD = 0.001  # each state (link, real file) lasts this long, so slower tools meet both


@pytest.fixture(params=["openat2", "component-walk"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run each attack with openat2 and with the O_NOFOLLOW walk used on kernels without it."""
    if request.param == "openat2" and not safe_open.openat2_available():
        pytest.skip("this kernel has no openat2 (Linux < 5.6 or filtered)")
    monkeypatch.setattr(safe_open, "_openat2_state", [request.param == "openat2"])
    return str(request.param)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A workspace, and beside it a directory holding the planted secret."""
    (tmp_path / "ws" / "sub").mkdir(parents=True)
    (tmp_path / "ws" / "sub" / "secret.txt").write_text("inside\n")
    (tmp_path / "ws" / "data.txt").write_text("public\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text(SECRET + "\n")
    (tmp_path / "outside" / "data.txt").write_text(SECRET + "\n")
    (tmp_path / "outside" / "data.bin").write_text(SECRET + "\n")
    return tmp_path / "ws"


def _swap_file(path: Path, target: Path) -> None:
    """Atomically replace path by a symlink to target, then by a regular file again."""
    link = path.with_name(path.name + ".lnk")
    os.symlink(target, link)
    os.replace(link, path)
    time.sleep(HOLD)
    plain = path.with_name(path.name + ".new")
    plain.write_text("public\n")
    os.replace(plain, path)
    time.sleep(HOLD)


def _swap_dir(path: Path, target: Path) -> None:
    """Replace directory path by a symlink to target, then put the directory back."""
    aside = path.with_name(path.name + ".aside")
    try:
        os.rename(path, aside)
        os.symlink(target, path)
        time.sleep(HOLD)
        os.unlink(path)
    except OSError:  # a tool re-created the folder in a gap: fine, it is put back below
        pass
    if aside.exists():
        if path.is_symlink():
            os.unlink(path)
        elif path.exists():
            shutil.rmtree(path)
        os.rename(aside, path)
    time.sleep(HOLD)


@contextmanager
def swapping(swap: Callable[[], None]) -> Iterator[None]:
    """Run swap() in a loop on another thread while the block runs (model code racing the tools)."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            with suppress(OSError):  # the tool raced us too (made a folder we were moving): go again
                swap()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def race(call: Callable[[], str], refusals: bool = True) -> tuple[list[str], list[str]]:
    """Call repeatedly for RACE_SECONDS, and on until a call succeeded (and, with `refusals`, one was refused), at
    most RACE_LIMIT seconds; the outputs that succeeded and the refusals."""
    done: list[str] = []
    refused: list[str] = []
    started = time.monotonic()
    while (elapsed := time.monotonic() - started) < RACE_SECONDS or (
            elapsed < RACE_LIMIT and not (done and (refused or not refusals))):
        try:
            done.append(call())
        except ToolError as exc:
            refused.append(str(exc))
    return done, refused


def test_read_file_never_reads_through_a_swapped_link(ws: Path, mode: str) -> None:
    outside = ws.parent / "outside"
    reader = ReadFileTool(ws)
    with swapping(lambda: _swap_file(ws / "data.txt", outside / "secret.txt")):
        done, refused = race(lambda: reader.run(path="data.txt"))
    with swapping(lambda: _swap_dir(ws / "sub", outside)):
        done2, refused2 = race(lambda: reader.run(path="sub/secret.txt"))
    assert not any(SECRET in text for text in done + done2 + refused + refused2)
    assert any("public" in t for t in done) and any("inside" in t for t in done2)  # the race really ran
    assert refused and refused2  # some opens met the link (or the gap) and were refused


def test_write_file_never_writes_through_a_swapped_link(ws: Path, mode: str) -> None:
    outside = ws.parent / "outside"
    writer = WriteFileTool(ws)
    with swapping(lambda: _swap_file(ws / "data.txt", outside / "data.txt")):
        done, _ = race(lambda: writer.run(path="data.txt", content="PWNED\n", mode="append"), refusals=False)
    with swapping(lambda: _swap_dir(ws / "sub", outside)):
        done2, refused2 = race(lambda: writer.run(path="sub/new.txt", content="PWNED\n"))
    assert (outside / "data.txt").read_text() == SECRET + "\n"
    assert sorted(p.name for p in outside.iterdir()) == ["data.bin", "data.txt", "secret.txt"]
    assert done and done2 and refused2


def test_scrape_save_as_never_writes_through_a_swapped_link(ws: Path, mode: str) -> None:
    outside = ws.parent / "outside"
    page = Response(body=b"PWNED", content_type="application/octet-stream")
    # Many scrapes race the swaps: no per-host gap (1 s by default) and no robots.txt request between them.
    settings = Settings(scrape_allow_private=True, scrape_timeout=5.0, host_gap=0.0, ignore_robots=True)
    with LoopbackServer(routes({"/x": page})) as server:
        tool = ScrapeTool(ws, settings)

        def scrape(save_as: str) -> str:
            out = tool.run(url=f"{server.url}/x", save_as=save_as)
            if isinstance(out, str):  # scrape reports a refusal as an Error observation
                raise ToolError(out)
            return out.text

        with swapping(lambda: _swap_file(ws / "data.bin", outside / "data.bin")):
            done, _ = race(lambda: scrape("data.bin"), refusals=False)
        with swapping(lambda: _swap_dir(ws / "sub", outside)):
            done2, refused2 = race(lambda: scrape("sub/got.bin"))
    assert (outside / "data.bin").read_text() == SECRET + "\n"
    assert sorted(p.name for p in outside.iterdir()) == ["data.bin", "data.txt", "secret.txt"]
    assert done and done2 and refused2
    assert not [p.name for p in (ws / "sub").iterdir() if p.name.endswith(".part")]  # no temp file left


def test_a_hard_link_to_a_planted_env_is_refused(ws: Path, mode: str) -> None:
    env = ws.parent / ".env"
    env.write_text("OPENAI_API_KEY=sk-planted-fake-key\n")
    os.link(env, ws / "notes.txt")
    with pytest.raises(ToolError, match="2 hard links"):
        ReadFileTool(ws).run(path="notes.txt")
    with pytest.raises(ToolError, match="2 hard links"):
        WriteFileTool(ws).run(path="notes.txt", content="x", mode="append")
    with pytest.raises(ToolError, match="2 hard links"):
        WriteFileTool(ws).run(path="notes.txt", content="x")
    assert env.read_text() == "OPENAI_API_KEY=sk-planted-fake-key\n"


def _finishes(call: Callable[[], object]) -> object:
    """call() on a thread; fails the test instead of hanging it if call() blocks."""
    box: dict[str, object] = {}

    def run() -> None:
        try:
            box["out"] = call()
        except Exception as exc:  # noqa: BLE001 - inspected by the test
            box["out"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(30)
    assert not thread.is_alive(), "the tool blocked"
    return box["out"]


def test_a_fifo_is_refused_without_blocking(ws: Path, mode: str) -> None:
    os.mkfifo(ws / "pipe")
    for call in (lambda: ReadFileTool(ws).run(path="pipe"),
                 lambda: WriteFileTool(ws).run(path="pipe", content="x"),
                 lambda: WriteFileTool(ws).run(path="pipe", content="x", mode="append")):
        out = _finishes(call)
        assert isinstance(out, ToolError) and "a FIFO, not a regular file" in str(out)


def test_a_device_is_refused(ws: Path, mode: str) -> None:
    try:
        os.mknod(ws / "zero", stat.S_IFCHR | 0o600, os.makedev(1, 5))  # /dev/zero: reads never end
    except PermissionError:
        pytest.skip("creating a device node needs root")
    out = _finishes(lambda: ReadFileTool(ws).run(path="zero"))
    assert isinstance(out, ToolError) and "a device, not a regular file" in str(out)


def test_list_files_escapes_control_characters_in_names(ws: Path, mode: str) -> None:
    (ws / "a.txt\nforged.txt  (9 B)").write_text("x")
    (ws / "bell\x07\u202ename").write_text("x")
    out = ListFilesTool(ws).run()
    lines = out.splitlines()
    assert not any(line.startswith("forged.txt") for line in lines)
    assert "a.txt\\nforged.txt  (9 B)  (1 B)" in lines
    assert "bell\\x07\\u202ename  (1 B)" in lines
    assert "\x07" not in out and "\u202e" not in out


def test_saved_observations_never_follow_a_planted_link(ws: Path, mode: str) -> None:
    outside = ws.parent / "outside" / "secret.txt"
    (ws / "observations").mkdir()
    os.symlink(outside, ws / "observations" / "step-01.txt")
    memory = Memory(budget_tokens=2_000, workspace=ws)
    shown = memory.add(1, "Action: scrape", "injected text " * 5_000)
    assert "observations/step-01.txt" in shown
    assert outside.read_text() == SECRET + "\n"
    assert (ws / "observations" / "step-01.txt").read_text().startswith("injected text")


def test_downloads_never_overwrite_or_follow_links(ws: Path, mode: str) -> None:
    os.makedirs(ws / "downloads")
    os.symlink(ws.parent / "outside" / "data.bin", ws / "downloads" / "blob.bin")
    blob = Response(body=bytes(range(256)), content_type="application/octet-stream")
    with LoopbackServer(routes({"/blob.bin": blob})) as server:
        out = ScrapeTool(ws, Settings(scrape_allow_private=True)).run(url=f"{server.url}/blob.bin")
    assert isinstance(out, ToolOutput) and "downloads/blob-1.bin" in out.text
    assert (ws.parent / "outside" / "data.bin").read_text() == SECRET + "\n"
    assert (ws / "downloads" / "blob-1.bin").read_bytes() == bytes(range(256))
