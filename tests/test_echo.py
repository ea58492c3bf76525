"""A reply that writes back the agent's own prompt or chat-template tokens is never an answer (issue 49, item 2):
the model is asked once for the format, then the task fails naming a base model or a wrong chat template."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.fakes.cli import clean_env, run_main
from tests.fakes.deep_research import Sub
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import openai_reply
from tests.test_research import FINDINGS, PLAN, run_with, world

MODEL = ["--model", "openai:gpt-4.1-mini"]
LLAMA2_ECHO = ("<<SYS>>\nYou are a careful research assistant. You answer the user's task by thinking step by step "
               "<</SYS>>\n\nHow tall is the Eiffel tower? [/INST] How tall is the Eiffel tower?")


def echoing(replies: list[str], seen: list[dict[str, Any]]) -> Any:
    """A model server answering each call with the next reply ("{system}" is the system prompt it was sent)."""
    def handle(req: Request) -> Response:
        messages = req.json()["messages"]
        seen.append(messages)
        system = next((m["content"] for m in messages if m["role"] == "system"), "")
        reply = replies[min(len(seen) - 1, len(replies) - 1)]
        return openai_reply(reply.replace("{system}", system))
    return handle


def ask(tmp: Path, replies: list[str], question: str = "How tall is the Eiffel tower?") -> tuple[Any, list[Any]]:
    seen: list[dict[str, Any]] = []
    with LoopbackServer(echoing(replies, seen)) as server:
        proc = run_main(tmp, "ask", question, *MODEL, env=clean_env(server, AGENT_SEARCH="0",
                                                                    AGENT_MAX_RETRIES="0"))
    return proc, seen


def test_ask_prints_nothing_on_stdout_for_a_chat_template_echo_and_names_the_cause(tmp_path: Path) -> None:
    proc, seen = ask(tmp_path, [LLAMA2_ECHO])
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == ""  # `ask ... > answer.txt` saves no echo as an answer
    assert len(seen) == 2  # asked once for the format, then it failed
    assert "wrote back your instructions or chat markup (<<SYS>>, <</SYS>>, [/INST])" in seen[1][-1]["content"]
    assert "likely a base model, or its server applies the wrong chat template" in proc.stderr
    assert "--chat_format" in proc.stderr and "--jinja" in proc.stderr


def test_the_system_prompt_written_back_without_tokens_is_no_answer_either(tmp_path: Path) -> None:
    proc, seen = ask(tmp_path, ["{system}"])
    assert proc.returncode == 1 and proc.stdout == "", proc.stderr
    assert len(seen) == 2 and "(its instructions)" in proc.stderr


def test_an_echo_then_a_proper_answer_is_answered(tmp_path: Path) -> None:
    proc, seen = ask(tmp_path, ["<start_of_turn>user\nHow tall is the Eiffel tower?<end_of_turn>",
                                "Thought: I know it\nFinal Answer: 330 metres."])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("330 metres.") and len(seen) == 2


def test_a_token_the_question_itself_holds_is_part_of_a_real_answer(tmp_path: Path) -> None:
    proc, seen = ask(tmp_path, ["Thought: ChatML\nFinal Answer: <|im_start|> opens a message in ChatML."],
                     question="What does <|im_start|> mean?")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("<|im_start|> opens a message") and len(seen) == 1


def test_research_does_not_count_an_echoing_sub_question_as_answered(tmp_path: Path) -> None:
    subs = dict(FINDINGS)
    subs[PLAN[1]] = Sub(["/danube"], openai_reply("<|im_start|>system\nYou are a research assistant<|im_end|>"))
    proc = run_with(world(subs=subs, writer=lambda prompt: "## Rhine\n\nThe Rhine carried 187 million tonnes of "
                                                           "freight in 2022 [1].\n"), tmp_path)
    assert proc.returncode == 1, proc.stderr
    report = (tmp_path / "report.md").read_text()
    assert f"2. {PLAN[1]} — **not answered** (error: the model wrote back its own prompt (" in report
    assert "1 of 2 sub-questions gave no findings" in report
