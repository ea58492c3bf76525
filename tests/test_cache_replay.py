"""--cache records model and web calls; --replay re-runs from them offline; misses fail clearly."""

from __future__ import annotations

import json
import re
import socket
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import main
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import openai_reply
from tests.fakes.research import CSV, TASK, research_step, web_page

MODEL = "openai:gpt-4.1-mini"
VOLATILE = {"seconds", "cost", "cached_calls", "cached_cost", "workspace", "trace"}


def research_server(base: dict[str, str]) -> Any:
    """Fake Serper, a web page, a CSV and an OpenAI-compatible model that researches with them."""

    def handle(req: Request) -> Response:
        page = web_page(req, base["url"])
        if page is not None:
            return page
        if req.method != "POST":  # a probe of the server's models
            return Response(404, "not found")
        turns = sum(1 for m in req.json()["messages"] if m["role"] == "assistant")
        return openai_reply(research_step(base["url"], turns), 1000, 100)

    return handle


def _env(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    for key, value in {"OPENAI_API_KEY": "sk-test-secret", "OPENAI_BASE_URL": url + "/v1",
                       "SERPER_API_KEY": "serper-secret", "SERPER_BASE_URL": url,
                       "SCRAPE_ALLOW_PRIVATE_URLS": "1"}.items():
        monkeypatch.setenv(key, value)


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _stable(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k not in VOLATILE}


def _stable_report(text: str) -> str:
    text = re.sub(r"Run finished [^·\n]*", "Run finished", text)
    text = re.sub(r"\$\d[\d,.]*|n/a", "$", text)
    text = re.sub(r"\d+\.\d s\b|\| \d+\.\d \|", "T", text)
    return re.sub(r" · \d+ calls? from the cache \([^)]*\)", "", text)


class ConnectionCounter:
    """Counts (and refuses) every socket connection, loopback included."""

    def __init__(self) -> None:
        self.attempts: list[object] = []

    def __call__(self, sock: socket.socket, address: object) -> None:
        self.attempts.append(address)
        raise ConnectionRefusedError("no connection may be made during --replay")


def _record_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *extra: str) -> dict[str, Any]:
    base: dict[str, str] = {}
    (tmp_path / "tasks.txt").write_text(TASK + "\n")
    with LoopbackServer(research_server(base)) as server:
        base["url"] = server.url
        _env(monkeypatch, server.url)
        assert main.main(["tasks.txt", "--model", MODEL, "-q", "--cache", "cache", "-o", "first.md", *extra]) == 0
        model_calls = [r for r in server.requests if r.path.startswith("/v1/")]
    record = _records(tmp_path / "first.jsonl")[0]
    assert record["answer"] == "Sales grew 50% from 2021 to 2023." and len(model_calls) == 5
    return record


def test_replay_with_servers_stopped_reproduces_the_run_without_any_connection(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    first = _record_run(monkeypatch, tmp_path)
    counter = ConnectionCounter()
    monkeypatch.setattr(socket.socket, "connect", counter)
    for key in ("OPENAI_API_KEY", "SERPER_API_KEY", "OPENAI_BASE_URL", "SERPER_BASE_URL"):  # a machine without keys
        monkeypatch.delenv(key)
    assert main.main(["tasks.txt", "--model", MODEL, "-q", "--replay", "cache", "-o", "replay.md"]) == 0
    assert counter.attempts == []
    replayed = _records(tmp_path / "replay.jsonl")[0]
    assert _stable(replayed) == _stable(first)
    assert replayed["cost"] == 0 and replayed["cached_calls"] == 5
    assert replayed["cached_cost"] == pytest.approx(first["cost"]) and first["cost"] > 0
    assert _stable_report((tmp_path / "replay.md").read_text()) == _stable_report((tmp_path / "first.md").read_text())
    assert "5 calls from the cache" in (tmp_path / "replay.md").read_text()
    assert (Path(replayed["workspace"]) / "sales.csv").read_text() == CSV  # the download was replayed too


def test_a_cached_rerun_makes_no_model_or_web_request(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    first = _record_run(monkeypatch, tmp_path)
    with LoopbackServer(lambda req: Response(500, "must not be called")) as server:
        _env(monkeypatch, server.url)
        assert main.main(["tasks.txt", "--model", MODEL, "-q", "--cache", "cache", "-o", "again.md"]) == 0
        assert server.requests == []
    again = _records(tmp_path / "again.jsonl")[0]
    assert again["answer"] == first["answer"] and again["cost"] == 0
    trace = [json.loads(line) for line in Path(again["trace"]).read_text().splitlines()]
    calls = [e for e in trace if e["kind"] == "llm_call"]
    assert all(e["cached"] and e["cost"] == 0 and e["original_cost"] > 0 for e in calls)


def test_a_changed_prompt_misses_and_fails_clearly_under_replay(monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path: Path) -> None:
    _record_run(monkeypatch, tmp_path)
    counter = ConnectionCounter()
    monkeypatch.setattr(socket.socket, "connect", counter)
    code = main.main(["tasks.txt", "--model", MODEL, "-q", "--replay", "cache", "-o", "changed.md",
                      "--answer-style", "concise"])  # a different system prompt
    assert code == 1 and counter.attempts == []
    record = _records(tmp_path / "changed.jsonl")[0]
    assert record["status"] == "error" and record["llm_calls"] == 0
    assert "replay: no recorded completion" in record["error"] and MODEL in record["error"]
    assert "message 1 (system) differs" in record["error"]


def test_a_missing_web_result_fails_the_task_naming_the_url(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _record_run(monkeypatch, tmp_path)
    with sqlite3.connect(tmp_path / "cache" / "cache.sqlite3") as db:
        url = json.loads(db.execute("SELECT args FROM tool WHERE args LIKE '%sales.csv%'").fetchone()[0])["url"]
        db.execute("DELETE FROM tool WHERE args LIKE '%sales.csv%'")
    counter = ConnectionCounter()
    monkeypatch.setattr(socket.socket, "connect", counter)
    assert main.main(["tasks.txt", "--model", MODEL, "-q", "--replay", "cache", "-o", "miss.md"]) == 1
    record = _records(tmp_path / "miss.jsonl")[0]
    assert counter.attempts == []
    assert record["status"] == "error" and f"replay: no recorded fetch of {url}" in record["error"]


def test_the_cache_holds_no_keys_or_request_headers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _record_run(monkeypatch, tmp_path)
    blob = b"".join(p.read_bytes() for p in (tmp_path / "cache").iterdir())
    for secret in (b"sk-test-secret", b"serper-secret", b"Bearer", b"x-api-key", b"authorization"):
        assert secret not in blob


def test_cache_subcommand_stats_prune_clear(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    _record_run(monkeypatch, tmp_path)
    capsys.readouterr()
    assert main.main(["cache", "stats", "--dir", "cache"]) == 0
    out = capsys.readouterr().out
    assert "model calls: 5" in out and f"{MODEL}: 5" in out and "search: 1" in out and "fetch: 2" in out
    assert main.main(["cache", "prune", "--older-than", "30d", "--dir", "cache"]) == 0
    assert "removed 0 entries" in capsys.readouterr().out
    monkeypatch.setenv("AGENT_CACHE_DIR", "cache")
    assert main.main(["cache", "clear"]) == 0
    assert "removed 8 entries" in capsys.readouterr().out
    assert main.main(["cache", "stats"]) == 0 and "model calls: 0" in capsys.readouterr().out
    assert main.main(["cache", "prune", "--dir", "cache"]) == 2  # no --older-than


def test_check_setup_shows_the_cache_size(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from check_setup import check_cache
    from config import Settings

    assert check_cache(Settings()).detail.startswith("off")
    _record_run(monkeypatch, tmp_path)
    detail = check_cache(Settings(cache_dir=tmp_path / "cache")).detail
    assert re.fullmatch(rf"{re.escape(str(tmp_path / 'cache' / 'cache.sqlite3'))}: \d+\.\d KB", detail)


def test_replay_from_a_directory_without_a_cache_is_a_usage_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "tasks.txt").write_text(TASK + "\n")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert main.main(["tasks.txt", "--model", MODEL, "-q", "--replay", "nowhere"]) == 2
    assert "--replay nowhere: no cache there" in capsys.readouterr().err
    assert not (tmp_path / "nowhere").exists() and not (tmp_path / "results.md").exists()
