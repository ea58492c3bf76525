"""--estimate: tasks, model, prices, the expected cost (recorded averages or a stated assumption) and the worst
case under the caps, printed without calling any model; a large uncapped run says so at start."""

from __future__ import annotations

from pathlib import Path

import pytest

import main
from cache.store import open_store
from tests.fakes.loopback import LoopbackServer
from tests.fakes.providers import openai_reply, openai_script

MODEL = "openai:gpt-4.1-mini"  # $0.40 / $1.60 per million tokens


def _estimate(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *flags: str) -> tuple[int, str]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    Path("tasks.txt").write_text("First question?\n\nSecond question?\n\nThird question?\n")
    code = main.main(["tasks.txt", "--model", MODEL, "--estimate", *flags])
    return code, capsys.readouterr().out


def test_the_estimate_states_its_assumption_and_the_worst_case_under_the_cap(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    code, out = _estimate(capsys, monkeypatch, "--max-cost", "0.01")
    assert code == 0
    assert "3 task(s), model openai:gpt-4.1-mini, $0.40 in / $1.60 out per million tokens" in out
    assert "assumed 8 calls a task of 6,000 prompt + 400 reply tokens" in out
    assert "worst case: $0.0300 (3 x --max-cost $0.0100" in out
    assert not Path("results.md").exists() and not Path("results.jsonl").exists()  # nothing ran


def test_without_a_cap_the_worst_case_is_unbounded(capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    code, out = _estimate(capsys, monkeypatch)
    assert code == 0 and "worst case: unbounded: no cap set" in out
    assert "expected cost: $0.0730" in out  # 3 x 8 x (6,000 x $0.40 + 400 x $1.60) / 1M
    code, out = _estimate(capsys, monkeypatch, "--max-steps", "2")
    assert "assumed 3 calls a task" in out and "expected cost: $0.0274" in out  # two steps and the answer


def test_recorded_calls_of_the_model_give_the_expected_cost(capsys: pytest.CaptureFixture[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    store = open_store(Path("cache"))
    for n in range(4):  # two tasks of two calls, 2,000 prompt + 100 reply tokens each
        store.put_completion(f"key{n}", MODEL, f"thread{n % 2}", {"text": "x", "prompt_tokens": 2000,
                                                                    "completion_tokens": 100, "cost": 0.00096}, {})
    code, out = _estimate(capsys, monkeypatch, "--cache", "cache", "--max-run-cost", "1")
    assert code == 0
    assert "this model's 4 recorded calls in cache: 2.0 calls a task of 2,000 prompt + 100 reply tokens" in out
    assert "expected cost: $0.0058" in out  # 3 tasks x 2 calls x $0.00096
    assert "worst case: $1.00 (--max-run-cost" in out


def test_a_large_run_without_a_cost_cap_says_so_at_start(capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    Path("tasks.txt").write_text("\n\n".join(f"Question {n}?" for n in range(50)) + "\n")
    with LoopbackServer(openai_script(openai_reply("Final Answer: 4"))) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        main.main(["tasks.txt", "--model", MODEL, "--concurrency", "4", "--no-html", "--no-trace"])
    captured = capsys.readouterr()
    assert "50 tasks and no cost cap: expected cost $1.22, worst case unbounded" in captured.out + captured.err
