"""Answers wrapped in Markdown emphasis, brackets or followed by citation markers score as their content."""

from __future__ import annotations

import pytest

from tasks.scoring import grade


@pytest.mark.parametrize(("answer", "expected"), [
    ("**Paris**", "Paris"), ("[Paris]", "Paris"), ("*[Paris]*", "Paris"), ("__Paris__", "Paris"),
    ("Final Answer: **Paris**", "Paris"), ("**Final Answer:** **Paris**", "Paris"),
    ("Paris [1]", "Paris"), ("**Paris**[2].", "Paris"), ("Paris [1][3]", "Paris"), ("Paris [1, 2]", "Paris"),
    ("Paris [1], Rome [2]", "Paris, Rome"), ("**42** [3]", "42"), ("[1, 2, 3]", "1, 2, 3"),
])
def test_wrapped_or_cited_answers_score_as_their_content(answer: str, expected: str) -> None:
    assert grade(answer, expected).correct


@pytest.mark.parametrize(("answer", "expected"), [
    ("**Rome**", "Paris"), ("[Rome]", "Paris"), ("Rome [1]", "Paris"),
    ("arr[2]", "arr[1]"),  # brackets glued to a word are code, not a citation
    ("41 [1]", "42"),
])
def test_wrapping_never_makes_a_wrong_answer_right(answer: str, expected: str) -> None:
    assert not grade(answer, expected).correct
