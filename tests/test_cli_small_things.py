"""Small things a user meets at the command line: an empty cache, a reader that closes the pipe (issue 26.5)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.loopback import LoopbackServer
from tests.fakes.providers import openai_reply

ROOT = Path(__file__).resolve().parent.parent


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_") and not k.endswith("_API_KEY")}
    return {**env, "AGENT_ENV_FILE": "/nonexistent.env", **extra}


def _closed_stdout(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run main.py with a stdout whose reader has already gone, as `main.py ... | head -0` may leave it."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run([sys.executable, str(ROOT / "main.py"), *args], cwd=cwd, env=_env(),
                              stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(write_end)


def test_cache_stats_without_any_cache_says_it_is_empty_and_exits_0(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "main.py"), "cache", "stats"], cwd=tmp_path, env=_env(),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "the cache is empty" in proc.stdout


def test_cache_stats_of_a_directory_never_used_says_it_is_empty(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "main.py"), "cache", "stats", "--dir", "cache"],
                          cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "the cache is empty" in proc.stdout and "cache" in proc.stdout


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["cache", "stats"], ["report", "--help"],
                                  ["cache", "--help"]])
def test_a_closed_output_pipe_ends_quietly(tmp_path: Path, args: list[str]) -> None:
    proc = _closed_stdout(args, tmp_path)
    assert "Traceback" not in proc.stderr and "BrokenPipeError" not in proc.stderr, proc.stderr
    assert proc.returncode in (0, 141)  # 141 = 128 + SIGPIPE, what a shell shows for a reader that went away


def test_a_report_rebuilt_into_a_closed_pipe_still_writes_its_files(tmp_path: Path) -> None:
    record = ('{"key": "k1", "id": "t1", "index": 1, "task": "What is 2+2?", "status": "answered", '
              '"answer": "4"}\n')
    (tmp_path / "results.jsonl").write_text(record)
    proc = _closed_stdout(["report", "results.jsonl"], tmp_path)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 141
    assert (tmp_path / "results.html").is_file()


def test_a_run_whose_output_reader_goes_away_keeps_going_and_writes_its_reports(tmp_path: Path) -> None:
    (tmp_path / "tasks.txt").write_text("\n\n".join(f"task {n}" for n in range(1, 13)) + "\n")
    with LoopbackServer(lambda req: openai_reply("Final Answer: ok")) as server:
        env = _env(OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=server.url + "/v1")
        # `python main.py tasks.txt 2>&1 | head -1`: the reader takes one line and closes the pipe
        proc = subprocess.Popen([sys.executable, str(ROOT / "main.py"), "tasks.txt", "--model", "openai:gpt-4.1-mini"],
                                cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        assert proc.stdout is not None
        first = proc.stdout.readline()
        proc.stdout.close()
        proc.wait(timeout=120)
    assert b"[1/12]" in first
    assert proc.returncode in (0, 141)
    assert len((tmp_path / "results.jsonl").read_text().splitlines()) == 12
    assert (tmp_path / "results.html").is_file()
