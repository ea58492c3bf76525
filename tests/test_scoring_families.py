"""Answer scoring on real and hand-written (answer, ground truth) pairs: never accept a wrong answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tasks.scoring import grade, official_score, score_answer

PAIRS = [json.loads(line) for line in
         (Path(__file__).parent / "fixtures" / "scoring_pairs.jsonl").read_text(encoding="utf-8").splitlines()]
KNOWN_MISSES = {("17 thousand hours", "17"), ("Saint Petersburg", "St. Petersburg")}  # rejected, not accepted


def _by_family(family: str) -> list[dict]:  # type: ignore[type-arg]
    return [p for p in PAIRS if p["family"] == family]


@pytest.mark.parametrize("pair", [p for p in PAIRS if not p["correct"]], ids=lambda p: f"{p['answer']}|{p['truth']}")
def test_no_wrong_answer_is_accepted(pair: dict) -> None:  # type: ignore[type-arg]
    assert not score_answer(pair["answer"], pair["truth"])


@pytest.mark.parametrize("family", sorted({p["family"] for p in PAIRS}))
def test_right_answers_of_each_family_are_accepted(family: str) -> None:
    missed = [(p["answer"], p["truth"]) for p in _by_family(family)
              if p["correct"] and not score_answer(p["answer"], p["truth"])]
    assert set(missed) <= KNOWN_MISSES


@pytest.mark.parametrize(("answer", "expected"), [
    ("3 or more", "3"), ("8 at most", "8"), ("42 is the answer", "42"), ("55 in total", "55"),
    ("12 million", "12"), ("17 thousand hours", "17"),
])
def test_undecidable_number_claims_are_rejected_and_flagged_unsure(answer: str, expected: str) -> None:
    verdict = grade(answer, expected)
    assert not verdict.correct and verdict.unsure


@pytest.mark.parametrize(("answer", "expected"), [("Rome", "Paris"), ("12 miles", "14 km"), ("C++", "C")])
def test_plainly_wrong_answers_are_not_unsure(answer: str, expected: str) -> None:
    verdict = grade(answer, expected)
    assert not verdict.correct and not verdict.unsure


def test_a_different_unit_is_not_the_same_number() -> None:
    assert not score_answer("12 miles", "12 km")
    assert score_answer("12", "12 km") and score_answer("12 km", "12")


@pytest.mark.parametrize(("answer", "expected", "official"), [
    ("1,000", "1000", True),  # $ % and commas are removed before float()
    ("$5", "5", True), ("17%", "17", True), ("12 km", "12", False), ("Final Answer: 5", "5", False),
    ("a, b", "a; b", True), ("a,b,c", "a, b", False), ("St. Louis", "St Louis", True),
    ("St.Louis, Paris", "St Louis, Paris", False),  # list items keep their punctuation
    ("PARIS", " paris ", True), (None, "None", True),
])
def test_official_scorer_rule(answer: str | None, expected: str, official: bool) -> None:
    assert official_score(answer, expected) is official


def test_records_carry_both_verdicts_and_the_unsure_flag() -> None:
    verdict = grade("Final Answer: 1,000", "1000")
    assert (verdict.correct, verdict.correct_official, verdict.unsure) == (True, False, False)
