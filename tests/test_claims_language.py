"""Claims in another language than their source (sources/language.py): judged on names, figures and dates.

True claims are reworded translations of the source's sentences; false ones change one figure or date."""

from __future__ import annotations

import pytest

from sources.check import check_citations
from sources.language import across_languages, in_english_scale, language_of
from sources.ledger import Read, SourceLedger

FILLER = "Other notes on barges, locks, weather and the traffic on the water follow here. " * 8
SOURCE = (FILLER + "The Rhine carried 187 million tonnes of freight in 2022, most of it through Duisburg. "
          "Construction of the Kiel Canal began on 3 June 1887 and it opened in 1895. " + FILLER)
TRUE = [
    "Der Rhein beförderte 2022 rund 187 Millionen Tonnen Güter [1].",
    "Le Rhin a transporté 187 millions de tonnes de marchandises en 2022 [1].",
    "El Rin transportó 187 millones de toneladas de carga en 2022 [1].",
    "В 2022 году по Рейну перевезли 187 миллионов тонн грузов [1].",
    "Der Bau des Nord-Ostsee-Kanals begann am 3. Juni 1887, eröffnet wurde er 1895 [1].",
]
FALSE = [
    "Der Rhein beförderte 2021 rund 187 Millionen Tonnen Güter [1].",
    "Le Rhin a transporté 178 millions de tonnes de marchandises en 2022 [1].",
    "El Rin transportó 187 millones de toneladas de carga en 2012 [1].",
    "В 2022 году по Рейну перевезли 187 тысяч тонн грузов [1].",
    "Der Bau des Nord-Ostsee-Kanals begann am 3. Juni 1889, eröffnet wurde er 1895 [1].",
]


def _verdict(claim: str, source: str = SOURCE) -> str:
    ledger = SourceLedger()
    ledger.note(Read("https://example.org/rivers", "Rivers", text=source))
    return check_citations(claim, ledger)[0].verdict


@pytest.mark.parametrize("claim", TRUE)
def test_a_true_claim_in_another_language_is_supported_on_its_figures_and_dates(claim: str) -> None:
    assert across_languages(claim, [SOURCE]) is not None
    assert _verdict(claim) == "supported"


@pytest.mark.parametrize("claim", FALSE)
def test_a_subtly_false_claim_in_another_language_is_not(claim: str) -> None:
    assert _verdict(claim) == "unsupported"


def test_a_claim_in_the_sources_language_is_checked_as_before() -> None:
    assert across_languages("The Rhine carried 187 million tonnes of freight in 2022 [1].", [SOURCE]) is None
    assert _verdict("The Rhine carried 187 million tonnes of freight in 2022 [1].") == "supported"
    assert _verdict("The Rhine carried 187 million tonnes of freight in 2021 [1].") == "contradicted"  # another year


def test_languages_and_scale_words() -> None:
    texts = ("Der Hafen ist der größte und wurde 1900 gebaut", "Москва — столица", "北京是中国的首都",
             "the port is the largest of the river")
    assert [language_of(t) for t in texts] == ["de", "ru", "zh", "en"]
    assert language_of("Duisburg 2022") is None  # too little to tell: checked as any claim
    assert in_english_scale("187 Millionen Tonnen, 3 Mrd. Euro, 12 тыс. человек") == \
        "187 million Tonnen, 3 billion Euro, 12 thousand человек"
