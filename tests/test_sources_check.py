"""The citation check: each verdict on an answer against the sources a task read, and what counts as a fact."""

from __future__ import annotations

import pytest

from sources.check import check_citations, claims, claims_line, markers
from sources.ledger import Read, SourceLedger

CITY = ("Riverton's population reached 2,148,000 in the 2020 census, the statistics office said on "
        "March 3, 2021. Mayor Ana Ruiz called it \u201cthe fastest growth in our history\u201d. The city "
        "covers 412 square kilometres along the river.")
PORT = ("The port of Riverton handled 38.6 million tonnes of cargo in 2019. Its new container terminal "
        "opened in June 2018 after four years of work.")


def ledger() -> SourceLedger:
    led = SourceLedger()
    led.observe(CITY, [Read("https://stats.example/riverton", "Riverton census")])
    led.observe(PORT, [Read("https://port.example/annual", "Port annual report")])
    return led


def verdicts(answer: str) -> list[tuple[int | None, str]]:
    return [(c.n, c.verdict) for c in check_citations(answer, ledger())]


@pytest.mark.parametrize("claim", [
    "Riverton has 2,148,000 inhabitants [1].",
    "Riverton has 2148000 inhabitants [1].",
    "Riverton has 2.148 million inhabitants [1].",
    "Riverton has about 2.1 million inhabitants [1].",  # a rounded figure, said to be rounded
    "The census figures came out on 3 March 2021 [1].",
    "The census figures came out on 2021-03-03 [1].",
    "The mayor called it \"the fastest growth in our history\" [1].",
    "The port handled 38.6 million tonnes of cargo in 2019 [2].",
])
def test_a_fact_spelled_another_common_way_is_supported(claim: str) -> None:
    assert verdicts(claim) == [(int(claim.rsplit("[", 1)[1][0]), "supported")]


@pytest.mark.parametrize(("claim", "verdict"), [
    ("Riverton has 2,184,000 inhabitants [1].", "contradicted"),  # a changed figure, where the passage has another
    ("Riverton has about 2.6 million inhabitants [1].", "contradicted"),  # rounding cannot excuse it
    ("The census figures came out on March 4, 2021 [1].", "contradicted"),  # a changed date
    ("The mayor called it \"the slowest growth in our history\" [1].", "contradicted"),  # a changed quotation
    ("The city covers 412 square miles [1].", "unsupported"),  # the same number, another unit
    ("The port handled 38.6 million tonnes of cargo in 2019 [1].", "wrong_source"),  # it is source 2's figure
    ("Riverton has 2,148,000 inhabitants [3].", "fabricated"),  # only 2 sources were read
    ("Riverton is a pleasant city [1].", "unsupported"),  # no figure, but "pleasant" is nowhere in the source
])
def test_each_fault_gets_its_verdict(claim: str, verdict: str) -> None:
    assert [v for _, v in verdicts(claim)] == [verdict]


def test_a_changed_small_number_is_not_excused_by_the_same_number_further_down_the_page() -> None:
    led = SourceLedger()
    filler = " ".join(["The stadium was rebuilt with public money and reopened in spring."] * 6)
    led.observe(f"The team won 4 titles under coach Ruiz. {filler} Tickets cost 3 dollars at the gate and 3 "
                "titles were won by the rivals.", [Read("https://club.example", "Club history")])
    assert [c.verdict for c in check_citations("The team won 3 titles under coach Ruiz [1].", led)] == ["contradicted"]
    assert [c.verdict for c in check_citations("The team won 4 titles [1].", led)] == ["supported"]


def test_urls_in_the_answer_that_were_never_read_are_not_read() -> None:
    answer = ("Riverton has 2,148,000 inhabitants [1] (https://stats.example/riverton/). "
              "See also https://news.example/riverton-growth and www.stats.example/riverton.")
    found = check_citations(answer, ledger())
    assert [(c.verdict, c.url) for c in found] == [("supported", "https://stats.example/riverton"),
                                                  ("not_read", "https://news.example/riverton-growth")]


def test_several_markers_and_ranges_give_one_citation_each() -> None:
    assert markers("x [1, 3] y [2-4][7]") == [1, 3, 2, 4, 7]
    found = verdicts("Riverton had 2,148,000 people and its port handled 38.6 million tonnes [1][2].")
    assert found == [(1, "supported"), (2, "supported")]


def test_the_answers_own_source_list_is_not_a_claim_and_its_urls_count() -> None:
    answer = ("Riverton has 2,148,000 inhabitants [1].\n\nSources:\n[1] Riverton census — "
              "https://stats.example/riverton\n[2] Invented — https://invented.example/a")
    assert verdicts(answer) == [(1, "supported"), (None, "not_read")]


def test_claims_split_on_sentences_and_list_items_keeping_their_markers() -> None:
    text = ("The U.S. census counted 5 people [1]. Mr. Ruiz agreed. [2] Sales rose 3.5% on Sept. 30 [3].\n"
            "- **Bold item** 12 km [4]\n1. Numbered item [5]")
    assert claims(text) == ["The U.S. census counted 5 people [1].", "Mr. Ruiz agreed. [2]",
                            "Sales rose 3.5% on Sept. 30 [3].", "**Bold item** 12 km [4]", "Numbered item [5]"]


def test_claims_line_counts_every_verdict() -> None:
    found = [c.record() for c in check_citations(
        "A 2,148,000 [1]. B 2,184,000 [1]. C 38.6 million tonnes [1]. D [9]. E https://x.example/", ledger())]
    assert claims_line(found) == "5 claims: 1 supported, 1 unsupported, 1 wrong source, 1 fabricated, 1 not read"
