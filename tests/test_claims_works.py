"""The claim check reads what a source is besides its text (sources/works.py): a paper's authors, year, title,
venue and DOI, any source's title, a document's file name; the metadata travels with the source (ledger.Work)
through a cached tool result and the trace's `sources` event that research/ pools."""

from __future__ import annotations

import dataclasses
import json

from research.pool import Found, pool
from sources.check import check_citations
from sources.ledger import Read, SourceLedger, Work

ABSTRACT = ("The state of OA: a large-scale analysis of the prevalence and impact of Open Access articles (2018)\n"
            "Authors: Heather Piwowar, Jason Priem, Vincent Larivière\nVenue: PeerJ · DOI: 10.7717/peerj.4375\n"
            "Abstract: Despite growing interest in Open Access (OA) to scholarly literature, there is an unmet need "
            "for large-scale, up-to-date, and reproducible studies assessing the prevalence and characteristics of OA. "
            "We estimate that at least 28% of the scholarly literature is OA (19M in total) and that this proportion "
            "is growing, driven particularly by growth in Gold and Hybrid. Interest in open data dates from 2015. "
            "We also find that OA articles receive 18% more citations than average.")
WORK = Work(("Heather Piwowar", "Jason Priem", "Vincent Larivière"), 2018, "The state of OA: a large-scale analysis "
            "of the prevalence and impact of Open Access articles", "PeerJ", "10.7717/peerj.4375")
URL = "https://doi.org/10.7717/peerj.4375"


def paper_ledger(work: Work | None = WORK) -> SourceLedger:
    ledger = SourceLedger()
    ledger.observe(ABSTRACT, [Read(URL, "The state of OA (2018)", ABSTRACT, work=work)])
    return ledger


def judged(claim: str, ledger: SourceLedger) -> tuple[str, str]:
    [c] = check_citations(claim, ledger)
    return c.verdict, c.reason


def test_a_claim_naming_the_papers_authors_and_year_is_read_against_its_abstract() -> None:
    ledger = paper_ledger()
    for claim in ("Piwowar et al. (2018) estimate that at least 28% of the scholarly literature is open access [1].",
                  "(Piwowar, Priem and Larivière, 2018) find that OA articles receive 18% more citations [1].",
                  "The paper by Piwowar et al. (2018) reports that OA articles receive 18% more citations [1].",
                  "Priem's paper The state of OA shows that OA articles receive 18% more citations [1].",
                  "In their 2018 study in PeerJ, the authors estimate that at least 28% of the literature is OA [1].",
                  "The authors find that OA articles receive 18% more citations than average [1]."):
        assert judged(claim, ledger)[0] == "supported", claim


def test_a_year_or_first_author_that_is_not_the_papers_is_contradicted_whatever_the_abstract_mentions() -> None:
    ledger = paper_ledger()
    claim = "Piwowar et al. (2015) estimate that at least 28% of the scholarly literature is open access [1]."
    assert judged(claim, ledger) == ("contradicted", "‘Piwowar et al. (2015)’: the paper it cites is from 2018, not "
                                                     "2015")  # though 2015 stands in the abstract
    assert judged("Jones et al. (2018) estimate that at least 28% of the literature is OA [1].", ledger) == (
        "contradicted", "‘Jones et al. (2018)’: the paper it cites is by Piwowar et al. (2018)")
    assert judged("Priem et al. estimate that at least 28% of the literature is OA [1].", ledger)[0] == "contradicted"
    assert judged("Jones's paper shows that OA articles receive 18% more citations [1].", ledger)[0] == "contradicted"
    # the metadata excuses nothing else: a figure the abstract does not give is still caught
    assert judged("Piwowar et al. (2018) estimate that at least 38% of the literature is OA [1].", ledger)[0] == \
        "contradicted"


def test_a_citation_naming_another_paper_the_task_read_is_the_wrong_source() -> None:
    ledger = paper_ledger()
    other = "Abstract: Data sharing is associated with increased citation rate."
    ledger.observe(other, [Read("https://doi.org/10.1371/journal.pone.0000308", "Sharing detailed research data "
                                "(2007)", other, work=Work(("Heather A. Piwowar", "Roger S. Day"), 2007))])
    assert judged("Piwowar and Day (2007) estimate that at least 28% of the literature is OA [1].", ledger) == (
        "wrong_source", "‘Piwowar and Day (2007)’ is [2], not the paper it cites")


def test_without_its_work_a_source_is_judged_on_its_text_alone() -> None:
    claim = "Jones et al. (2018) estimate that at least 28% of the scholarly literature is open access [1]."
    assert judged(claim, paper_ledger(None))[0] != "contradicted"


def test_a_documents_file_name_and_title_count_as_its_words() -> None:
    ledger = SourceLedger()
    text = "Revenue rose 12% to 4.1 million euros, driven by exports to Asia."
    ledger.observe(text, [Read("reports/annual_review_2023.pdf", "Annual Review 2023", text)])
    assert judged("The annual_review_2023.pdf file says revenue rose 12% [1].", ledger)[0] == "supported"
    assert judged('The "Annual Review 2023" says revenue rose 12% to 4.1 million euros [1].', ledger)[0] == \
        "supported"
    assert judged("The annual review says revenue fell 12% [1].", ledger)[0] == "contradicted"


def test_a_pages_title_counts_in_quotation_marks_and_its_words_stay_the_claims() -> None:
    ledger = SourceLedger()
    text = "Ford shares fell 5% on Monday after the carmaker cut its forecast."
    ledger.observe(text, [Read("https://news.example/markets", "Carmakers under pressure", text)])
    assert judged('The article "Carmakers under pressure" says Ford shares fell 5% on Monday [1].', ledger)[0] == \
        "supported"
    other = SourceLedger()
    other.observe(text, [Read("https://news.example/markets", "Tesla shares fall", text)])
    assert judged("Tesla shares fell 5% on Monday [1].", other) == ("unsupported", "‘Tesla’ is nowhere in the source")


def test_the_work_survives_a_cached_result_and_the_sources_event_research_pools() -> None:
    read = Read(URL, "The state of OA (2018)", ABSTRACT, work=WORK)
    stored = json.loads(json.dumps(dataclasses.asdict(read)))  # as tools/cached.py stores and restores it
    assert Read(**{**stored, "aliases": tuple(stored["aliases"])}) == read
    event = json.loads(json.dumps(paper_ledger().texts()))  # the agent's `sources` event, through the trace
    assert event[0]["work"]["authors"] == list(WORK.authors) and event[0]["work"]["year"] == 2018
    pooled = pool([Found("answer", event, [])])
    assert pooled.read_sources()[0].work == WORK
    assert judged("Piwowar et al. (2015) estimate that at least 28% of the literature is OA [1].", pooled)[0] == \
        "contradicted"


def test_a_first_name_the_source_leaves_out_of_a_person_it_names_by_role_is_the_same_person() -> None:
    ledger = SourceLedger()
    text = ("Former US President Reagan spoke at the shipyard on Tuesday. Mr Charney's lawyer said the claims were "
            "false.")
    ledger.observe(text, [Read("https://example.org/news", "News", text)])
    for claim in ("President Ronald Reagan spoke at the shipyard [1].", "Ronald Reagan spoke at the shipyard [1].",
                  "The lawyer of Dov Charney said the claims were false [1]."):
        assert judged(claim, ledger)[0] == "supported", claim
    other = SourceLedger()  # the source gives another first name: another person
    text = "Former US President Reagan spoke at the shipyard on Tuesday. Nancy Reagan stayed in Washington."
    other.observe(text, [Read("https://example.org/news", "News", text)])
    assert judged("President Ronald Reagan spoke at the shipyard [1].", other) == (
        "unsupported", "‘Ronald’ is nowhere in the source")
    nameless = SourceLedger()  # no title or role: the source never says who Reagan is
    text = "Reagan spoke at the shipyard on Tuesday."
    nameless.observe(text, [Read("https://example.org/news", "News", text)])
    assert judged("Ronald Reagan spoke at the shipyard [1].", nameless)[0] == "unsupported"
