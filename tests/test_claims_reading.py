"""How the model-free check reads real writing: figures and names written another way, negations and directions
that bear on something else, a summary's framing, roles around a verb. Each case is a claim an answer cites
against one page it read, and the verdict a reader would see."""

from __future__ import annotations

import pytest

from sources.check import check_citations, claims
from sources.ledger import Read, SourceLedger
from sources.wordnet import database


def judged(source: str, claim: str) -> tuple[str, str]:
    ledger = SourceLedger()
    ledger.observe(source, [Read("https://news.example/story", "A story")])
    found = check_citations(claim, ledger)
    assert len(found) == 1, found
    return found[0].verdict, found[0].reason


@pytest.mark.parametrize(("source", "claim"), [
    # a tokeniser's spaces inside figures (research sets, exports, OCR)
    ("Around 26 , 000 dogs were treated for poisoning by vets , and 470 died .",
     "Around 26,000 dogs were treated for poisoning by vets [1]."),
    ("Season tickets will start at £ 289 , the lowest in the league .",
     "Season tickets start at £289, the lowest in the league [1]."),
    ("Wilk played with Rage Against the Machine ( 1991 -- 2000 ; 2007 -- 11 ) .",
     "Wilk played with Rage Against the Machine (1991-2000, 2007-2011) [1]."),
    # ages, spans of years, dates in a lower-cased text, initials
    ("The 37-year-old cyclist won her 17th world title on Sunday.",
     "The cyclist, 37 years old, won her 17th world title [1]."),
    ("Henry VIII was born on 28 June 1491 and died on 28 January 1547.", "Henry VIII: 1491-1547 [1]."),
    ("the rematch took place in november 1980. duran quit in the eighth round.",
     "The rematch took place in November 1980 [1]."),
    ("A.P. McCoy rode Mr Mole to victory at Newbury.", "AP McCoy rode Mr Mole to victory at Newbury [1]."),
    # a hedged round figure within its range
    ("Labour spent £1,580,575 on the campaign.", "Labour spent over £1.5 million on the campaign [1]."),
    # names across accents and demonyms
    ("François Hollande visited Berlin on Monday.", "Francois Hollande visited Berlin on Monday [1]."),
    ("The striker has offers from clubs in Belgium.", "The striker has offers from Belgian clubs [1]."),
    # a negation or a direction that bears on something else
    ("The bridge opened in May, but the tunnel did not open until June.", "The bridge opened in May [1]."),
    ("Profits rose 5% in 2022 while costs fell.", "Costs fell in 2022 [1]."),
    # a summary's framing, and a sentence that does not end at "c."
    ("Duisburg is the largest inland port on the Rhine. The Rhine carried 180 million tonnes in 2022.",
     "It also mentions that Duisburg is the largest inland port on the Rhine [1]."),
    ("Duisburg is the largest inland port on the Rhine. The Rhine carried 180 million tonnes in 2022.",
     "The passage discusses how the Rhine carried 180 million tonnes in 2022 [1]."),
    ("The castle was built c. 1200 by the Normans. It burned down in 1540.",
     "The castle was built c. 1200 by the Normans [1]."),
    # the doer named as in the passage
    ("Forbes scored twice for Morton, and McManus set up both goals.", "Forbes scored twice for Morton [1]."),
])
def test_a_correct_claim_written_another_way_is_supported(source: str, claim: str) -> None:
    assert judged(source, claim)[0] == "supported"


@pytest.mark.parametrize(("source", "claim", "verdict", "why"), [
    ("The bridge opened in May, but the tunnel did not open until June.", "The bridge did not open in May [1].",
     "contradicted", "says ‘not’"),
    ("Profits rose 5% in 2022 while costs fell.", "Profits fell 5% in 2022 [1].", "contradicted", "‘fell’"),
    ("Labour spent £1,580,575 on the campaign.", "Labour spent over £2.5 million on the campaign [1].",
     "contradicted", "£2.5 million"),
    ("The striker has offers from clubs in Belgium.", "The striker has offers from Dutch clubs [1].",
     "unsupported", "‘Dutch’"),
    ("the rematch took place in november 1980. duran quit in the eighth round.",
     "The rematch took place in December 1980 [1].", "unsupported", "December"),
    ("Forbes scored twice for Morton, and McManus set up both goals.", "McManus scored twice for Morton [1].",
     "unsupported", "‘scored’ is not said of ‘McManus’"),
])
def test_a_claim_made_of_the_passage_s_words_that_says_otherwise_is_flagged(source: str, claim: str, verdict: str,
                                                                            why: str) -> None:
    got, reason = judged(source, claim)
    assert (got, why in reason) == (verdict, True), reason


def test_who_won_read_from_the_other_side_is_not_called_contradicted() -> None:
    """'United lost to City' against 'City won against United': the same result, not its opposite."""
    assert judged("City won 2-1 against United on Sunday.", "United lost 2-1 against City on Sunday [1].")[0] \
        != "contradicted"


def test_a_remark_on_what_the_source_leaves_out_is_unchecked() -> None:
    source = "Duisburg is the largest inland port on the Rhine."
    assert judged(source, "The article does not mention the length of the Rhine [1].")[0] == "unchecked"


def test_an_answer_is_not_cut_into_claims_at_c() -> None:
    assert claims("The castle was built c. 1200 by the Normans [1]. It burned in 1540 [1].") == [
        "The castle was built c. 1200 by the Normans [1].", "It burned in 1540 [1]."]


@pytest.mark.skipif(database() is None, reason="WordNet's database is not installed (Debian: apt-get install "
                                               "wordnet-base)")
def test_a_rewording_wordnet_knows_is_supported_and_an_unrelated_word_is_not() -> None:
    source = "Ruiz hired an attorney on Monday."
    assert judged(source, "Ruiz hired a lawyer on Monday [1].")[0] == "supported"
    assert judged(source, "Ruiz hired a plumber on Monday [1].")[0] == "unsupported"


_AUCTION = ("The actor is auctioning more than 200 items from his long career in film and television. The sale is "
            "expected to raise a good sum for the charity he founded decades ago in his home town. Paintings, "
            "furniture, swords, rifles, silverware, books and crystal chandeliers are among the lots, and the "
            "auctioneers expect the best of them to fetch up to £2,000 each when bidding opens on Saturday morning.")
_QUAKE = ("The quake struck at 3pm near Lucca. There were no immediate reports of injuries or damage. The tremor was "
          "felt as far away as Milan. Phone lines were down in the valley. Power was cut in several towns. As a "
          "precaution, schools were evacuated and checked for any immediate damage or injuries.")


@pytest.mark.parametrize(("source", "claim"), [
    # a common figure near the claim's own words, in a long claim that also lists what stands elsewhere
    (_AUCTION, "The actor is auctioning over 200 items from his career, such as paintings, furniture, swords, rifles, "
               "silverware, books and chandeliers [1]."),
    # a name by its initials, or initials for the name; a compass adjective for the compass point
    ("The whale was found on a beach in WA.", "The whale was found in Western Australia [1]."),
    ("a rare whale was found on a west australian beach on monday .", "A rare whale was found in WA on Monday [1]."),
    ("The US economy grew 2% last year, the agency said.", "The economy of the United States grew 2% last year [1]."),
    ("hardy studied english with j.r.r. tolkien at oxford .", "Hardy studied English with JRR Tolkien at Oxford [1]."),
    # a negation the source says too: in another sentence, of the same people, after "but has"
    (_QUAKE, "No immediate injuries or damage were reported, but schools were evacuated as a precaution [1]."),
    ("Ruiz and Diaz are cycling around the world. Ruiz and Diaz have no plans, no agenda and no hurry.",
     "Ruiz and Diaz are cycling around the world with no fixed plans or agenda [1]."),
    ("The manager says he is better than his rivals but has no plans to leave the club.",
     "The manager has no plans to leave the club [1]."),
    # a direction the claim says both ways; a verb the passage uses as another word ("pulled level")
    ("Aberdeen chose Sheerin after a long process. Sheerin had led Arbroath.",
     "Sheerin, who previously led Arbroath, was chosen by Aberdeen after a long process [1]."),
    ("The Giants took the lead through Walser but Dimmen pulled the Panthers level.",
     "Dimmen leveled for the Panthers [1]."),
    # a noun for the verb the source uses (WordNet's derivations); a place's kind before its name
    ("The council elected Ruiz on Monday.", "Ruiz's election by the council came on Monday [1]."),
    ("Police arrested four teenagers in Milan.", "Teenagers were arrested in the city of Milan [1]."),
    # a claim a model wrapped in quotation marks; "on march 19" in a lower-cased source
    ("The pandemic has reached more than 190 countries and 200 territories.",
     '"The pandemic has reached over 190 countries and 200 territories." [1]'),
    ("rory tees off at the invitational in orlando on march 19 , his last event before augusta .",
     "He tees off at the invitational in Orlando on March 19 [1]."),
    # "most" for "the majority"; the virus an abstract names by what it is; a first name the source leaves out
    ("The majority of voters backed the plan in the March referendum.", "Most voters backed the plan [1]."),
    ("Most voters backed the plan in the March referendum.", "The majority of voters backed the plan [1]."),
    ("The virus has spread to 20 countries, health officials said.", "Officials said Covid has spread to 20 countries "
                                                                     "[1]."),
    ("Mr Charney's lawyer said the claims were false.", "The lawyer of Dov Charney said the claims were false [1]."),
])
def test_a_correct_claim_read_the_way_a_person_reads_it_is_supported(source: str, claim: str) -> None:
    assert judged(source, claim)[0] == "supported"


@pytest.mark.parametrize(("source", "claim", "why"), [
    ("Hardy studied English with Tom Jones at Oxford.", "Hardy studied English with Tom Ogden at Oxford [1].",
     "‘Ogden’"),  # initials that spell a common word ("to") excuse no name
    ("The US economy grew 2% last year.", "The economy of the United Kingdom grew 2% last year [1].", "‘United’"),
    ("The council elected Ruiz on Monday.", "Ruiz's dismissal by the council came on Monday [1].", "‘dismissal’"),
    ("The bridge opened in May, but the tunnel did not open until June.", "The bridge did not open in May [1].",
     "‘not’"),  # the tunnel's negation is not the bridge's
    ("Most voters backed the plan in the March referendum.", "A minority of voters backed the plan [1].",
     "‘minority’"),
    ("Former President Reagan spoke first. Nancy Reagan spoke next.", "President Ronald Reagan spoke first [1].",
     "‘Ronald’"),  # the source gives Reagan another first name: another person
    ("The envoy met Ukrainian President Volodymyr Zelenskiy in July.", "The envoy met Beijing Volodymyr Zelenskiy "
     "in July [1].", "‘Beijing’"),  # a word before a first name the source writes is no first name
])
def test_what_the_new_readings_still_flag(source: str, claim: str, why: str) -> None:
    verdict, reason = judged(source, claim)
    assert verdict in ("unsupported", "contradicted") and why in reason, reason


def test_without_the_system_s_wordnet_the_shipped_table_still_knows_common_rewordings(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A user who never installed wordnet-base: the commonest words' rewordings come from sources/wordnet_common.txt."""
    from sources import wordnet
    from sources.reading import passages

    monkeypatch.setattr(wordnet, "PLACES", ())
    for cached in (wordnet.database, wordnet.common, wordnet.synonyms, passages):
        cached.cache_clear()
    try:
        assert wordnet.database() is None
        source = "Ruiz said the talks with the union were hard, and she admitted one mistake."
        assert judged(source, "Ruiz said the talks were difficult [1].")[0] == "supported"
        assert judged(source, "Ruiz admitted an error [1].")[0] == "supported"
        assert judged(source, "Ruiz said the talks were pointless [1].")[0] == "unsupported"
    finally:
        monkeypatch.undo()
        for cached in (wordnet.database, wordnet.common, wordnet.synonyms, passages):
            cached.cache_clear()
