"""Which subject a direction word bears on in its passage: a sentence that says one thing rose and another fell
("online sales grew while store sales declined") supports each of them as it says it, and contradicts a claim
that gives either one the other's direction. Each case is a claim an answer cites against one page it read,
and the verdict a reader would see."""

from __future__ import annotations

import pytest

from sources.check import verdict

TWO_WAYS = "Online sales grew quickly while store sales declined."


def judged(source: str, claim: str) -> tuple[str, str]:
    found = verdict(claim, [1], {1: source})
    return found.verdict, found.reason


@pytest.mark.parametrize(("source", "claim", "why"), [
    (TWO_WAYS, "Store sales grew quickly.", "says \u2018grew\u2019, the source says \u2018declined\u2019"),
    (TWO_WAYS, "Online sales declined.", "says \u2018declined\u2019, the source says \u2018grew\u2019"),
    ("Exports rose sharply in 2023, whereas imports fell.", "Imports rose sharply in 2023.",
     "says \u2018rose\u2019, the source says \u2018fell\u2019"),
    ("Rural unemployment increased but urban unemployment decreased last year.",
     "Urban unemployment increased last year.", "says \u2018increased\u2019, the source says \u2018decreased\u2019"),
    ("Coal output fell by a third and solar output rose by half.", "Coal output rose.",
     "says \u2018rose\u2019, the source says \u2018fell\u2019"),
    ("Ticket prices went up in Paris; hotel prices went down.", "Hotel prices went up.",
     "says \u2018up\u2019, the source says \u2018down\u2019"),
])
def test_a_direction_the_passage_gives_another_subject_is_contradicted(source: str, claim: str, why: str) -> None:
    assert judged(source, claim) == ("contradicted", why)


@pytest.mark.parametrize(("source", "claim"), [
    (TWO_WAYS, "Online sales grew quickly."),
    (TWO_WAYS, "Store sales declined."),
    ("Exports rose sharply in 2023, whereas imports fell.", "Exports rose sharply in 2023."),
    ("Rural unemployment increased but urban unemployment decreased last year.",
     "Urban unemployment decreased last year."),
    ("Coal output fell by a third and solar output rose by half.", "Solar output rose by half."),
    # "and" between two subjects of one verb is no clause break: both rose
    ("Sales and profits rose in the third quarter.", "Profits rose in the third quarter."),
    # an "and" joining two places of one move is no clause break: "later" still bears on both
    ("Born in Ohio, Ruiz spent her early years there before moving to Texas, and later to Utah.",
     "Later she moved to Texas and then to Utah."),
    # a claim that says both as the passage does
    (TWO_WAYS, "Online sales grew while store sales declined."),
])
def test_a_direction_said_of_its_own_subject_is_supported(source: str, claim: str) -> None:
    assert judged(source, claim)[0] == "supported"


def test_a_claim_saying_both_directions_swapped_is_contradicted() -> None:
    assert judged(TWO_WAYS, "Store sales grew while online sales declined.")[0] == "contradicted"
