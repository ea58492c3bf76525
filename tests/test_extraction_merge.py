"""readability-lxml's reading lending trafilatura the paragraphs it dropped and trimming the edges it added."""

from __future__ import annotations

import pytest
from lxml import html as lxml_html

from tools.documents.extraction_choice import (
    Reading,
    add_missing_lines,
    link_share,
    link_texts,
    readability_reading,
    trim_unshared_edges,
    whole_when_short,
)

FIRST = "The council approved the new bridge on Tuesday after a long debate about its cost and design."
SECOND = "Engineers said the old crossing had carried twice its planned traffic for more than a decade."
DROPPED = ("Residents who live near the river told the council that the construction would block the only "
           "road to the school for two years, and the council promised a temporary ferry service.")
LAST = "Work is due to start next spring and should take about three years to finish."


def test_a_paragraph_the_first_reading_lacks_is_added_after_its_neighbour() -> None:
    ours = "\n\n".join([FIRST, SECOND, LAST])
    subhead = "Who pays for the ferry"  # five words between shared lines: a subheading, kept
    peer = "\n".join([FIRST, SECOND, subhead, DROPPED, LAST])
    merged = add_missing_lines(ours, peer, [])
    assert merged.split("\n\n") == [FIRST, SECOND, subhead, DROPPED, LAST]


def test_short_lines_edges_and_link_lists_stay_out() -> None:
    ours = "\n\n".join([FIRST, SECOND, LAST])
    byline = "By Jane Doe, local government reporter"  # six words before the shared lines: under ten
    related = "Council votes to close the old swimming pool after thirty years of service"
    links = ["home", "council votes to close the old swimming pool after thirty years of service"]
    peer = "\n".join([byline, FIRST, "Photo: archive", SECOND, related, LAST])
    assert add_missing_lines(ours, peer, links) == ours
    # the same line, when it is not a link on the page, is prose the first reading dropped
    assert related in add_missing_lines(ours, peer, ["home"])


def test_a_paragraph_already_there_in_other_words_is_not_added_twice() -> None:
    ours = "\n\n".join([FIRST, DROPPED, LAST])
    reworded = DROPPED.replace("told the council", "warned the councillors") + " Ferries are slow."
    assert add_missing_lines(ours, "\n".join([FIRST, reworded, LAST]), []) == ours


def test_link_share_counts_whole_words_of_link_texts_only() -> None:
    links = link_texts(lxml_html.fromstring(
        "<div><a href='/a'>Bridge news</a> and <a href='/b'>a</a> story <a href='/c'>More</a></div>"))
    assert links == ["bridge news", "more", "a"]
    assert link_share("Bridge news", links) == 1.0
    assert link_share("Bridges and more", links) == pytest.approx(4 / 16)  # "more" only; "a" is not in "and"
    assert link_share("", links) == 0.0


def test_a_short_first_reading_unlike_readabilitys_gives_way_to_it() -> None:
    nav = "Previous post: Six ways to refuel\nNext post: Notes from Accra"
    reading = Reading(whole="Leaf bunting\n" + FIRST + "\n" + SECOND, prose=FIRST + "\n" + SECOND)
    assert whole_when_short(nav, reading) == reading.whole
    article = "\n\n".join([FIRST, SECOND, DROPPED, LAST, " ".join(f"clause{i}" for i in range(150))])
    assert whole_when_short(article, reading) == article
    assert whole_when_short(nav, Reading(whole="Menu", prose="")) == nav  # readability found nothing to read
    short_post = FIRST + "\n\n" + SECOND  # both readings hold the same short post: ours (Markdown) stays
    assert whole_when_short(short_post, Reading(whole="Photos\n" + FIRST + "\n" + SECOND, prose=FIRST)) == short_post


def test_readability_prose_drops_captions_and_asides_its_whole_reading_keeps_them() -> None:
    pytest.importorskip("readability")
    html = (f"<html><body><nav><a href='/'>Home</a></nav><article><h1>Bridge</h1><p>{FIRST}</p>"
            f"<figure><img src='b.jpg'><figcaption>The old crossing at dawn, photographed last year.</figcaption>"
            f"</figure><p>{SECOND}</p><aside>Read our other stories about the river and its bridges.</aside>"
            f"<p>{DROPPED}</p><p>{LAST}</p></article><footer>Contact us</footer></body></html>")
    lines = [line.strip() for line in readability_reading(html).prose.split("\n") if line.strip()]
    assert [line for line in lines if line != "Bridge"] == [FIRST, SECOND, DROPPED, LAST]
    whole = readability_reading(html).whole
    assert "The old crossing at dawn" in whole and "Read our other stories" in whole and "Contact us" not in whole


def test_readability_reading_of_an_unreadable_page_is_empty() -> None:
    pytest.importorskip("readability")
    assert readability_reading("") == Reading("", "")
    assert readability_reading("<html><body><div></div></body></html>").prose.strip() == ""


BYLINE = "Share this story on social media and follow our reporters for updates"
FOOTER = "Copyright 2026 The River Gazette. All rights reserved. Terms of use and privacy policy apply"


def test_edge_lines_the_peer_reading_lacks_are_trimmed_when_it_lies_inside_ours() -> None:
    body = [FIRST, SECOND, DROPPED, LAST]
    ours = "\n\n".join([BYLINE, *body, FOOTER])
    assert trim_unshared_edges(ours, "\n".join(body)) == "\n\n".join(body)


def test_nothing_is_trimmed_when_the_peer_reading_disagrees_or_is_short() -> None:
    body = [FIRST, SECOND, DROPPED, LAST]
    ours = "\n\n".join([BYLINE, *body, FOOTER])
    elsewhere = "\n".join(body[:2] + ["A different page about a harbour, its boats and the fishermen who sail "
                                       "from it every morning before dawn, whatever the weather."] * 3)
    assert trim_unshared_edges(ours, elsewhere) == ours  # under 95% of the peer is in ours
    assert trim_unshared_edges(ours, FIRST) == ours  # too short to judge by


def test_inner_lines_the_peer_lacks_stay() -> None:
    body = [FIRST, SECOND, DROPPED, LAST]
    ours = "\n\n".join([FIRST, BYLINE, SECOND, DROPPED, LAST])
    assert trim_unshared_edges(ours, "\n".join(body)) == ours
