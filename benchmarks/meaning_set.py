"""The meaning set of benchmarks/citations.py: true and subtly false claims made from real article text.

Each article of ../shared/data/article-extraction gives claims cited to it as [1] (its page read the way
scrape reads it, with the next article's page read as [2]). Sentences come from the article's reference text,
only ones the scraped text holds. True claims: the sentence verbatim, a clause of it, a rewording (a few words
swapped for synonyms, a leading phrase moved to the end, a negation contracted or opened), two neighbouring
sentences merged into one. False claims, each from a sentence otherwise left as it is: a negation added or
removed, a name swapped for one the article never mentions (taken from another article), a direction flipped
(rose/fell, more/less, before/after, largest/smallest, won/lost ...), a figure changed.

The synonyms and flips here are this generator's own lists, written apart from sources/lexicon.py. Articles
whose id starts with 0-9 make the tuning half, a-f the held-out half; everything is seeded per article.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

TRUE_KINDS = ("true: verbatim", "true: clause", "true: reworded", "true: merged")
FALSE_KINDS = ("false: negated", "false: name swapped", "false: direction flipped", "false: figure changed")
_SENTENCE = re.compile(r"\S.*?[.!?][\"”’)]*(?=\s+[\"“(]?[A-Z]|\s*$)")
_AUX = re.compile(r"\b(is|are|was|were|has|have|had|will|would|can|could|should|may|might|must|does|did|do)\b")
_NEG = re.compile(r"\b(?:not|never) |n[’']t\b")
FIGURE = re.compile(r"(?<![\w\-.,])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w\-])|(?<![\w\-.,])\d+(?:\.\d+)?(?![\w\-])")
_CAPITAL = re.compile(r"(?<=\s)[A-Z][a-z]{2,}(?:\s[A-Z][a-z]{2,})?\b")
_NOT_NAMES = set("""The This That These Those There Then When While What Which Who How Why Its His Her Their Our
January February March April May June July August September October November December Monday Tuesday Wednesday
Thursday Friday
Saturday Sunday And But For Mr Mrs Ms Dr""".split())  # noqa: SIM905
# this generator's rewordings (independent of the checker's table): word -> replacement
REWORD = {"said": "stated", "says": "states", "told": "informed", "big": "large", "large": "big", "help": "assist",
          "helped": "assisted", "start": "begin", "started": "began", "begin": "start", "buy": "purchase",
          "bought": "purchased", "company": "firm", "companies": "firms", "show": "reveal", "shows": "reveals",
          "showed": "revealed", "use": "utilize", "used": "utilized", "need": "require", "needs": "requires",
          "try": "attempt", "tried": "attempted", "get": "obtain", "got": "obtained", "give": "provide",
          "gave": "provided", "people": "individuals", "children": "kids", "car": "vehicle", "cars": "vehicles",
          "job": "position", "jobs": "positions", "country": "nation", "city": "town", "money": "funds",
          "law": "legislation", "plan": "proposal", "meeting": "talks", "quickly": "rapidly", "important": "key",
          "problem": "issue", "problems": "issues", "area": "region", "film": "movie", "movie": "film",
          "house": "home", "build": "construct", "built": "constructed", "study": "research", "experts": "specialists",
          "officials": "authorities", "workers": "employees", "student": "pupil", "students": "pupils",
          "also": "additionally", "began": "started", "ended": "finished", "think": "believe", "thinks": "believes",
          "fast": "quick", "rapid": "fast", "small": "little", "huge": "massive", "major": "big",
          "women": "females", "chance": "opportunity", "store": "shop", "shop": "store", "price": "cost",
          "prices": "costs", "asked": "requested", "received": "obtained", "announced": "declared",
          "created": "made", "produced": "made", "reached": "hit", "allowed": "permitted", "killed": "slain",
          "died": "perished", "injured": "hurt", "discussed": "talked about", "chose": "picked",
          "carried": "transported"}
FLIPS = dict(p.split(":") for p in """rose:fell fell:rose increased:decreased decreased:increased increase:decrease
decrease:increase more:less less:more before:after after:before largest:smallest smallest:largest won:lost lost:won
higher:lower lower:higher highest:lowest lowest:highest biggest:smallest most:least least:most
rising:falling falling:rising grew:shrank gained:lost best:worst worst:best better:worse
worse:better above:below below:above earlier:later later:earlier greater:smaller larger:smaller
bigger:smaller up:down down:up first:last increases:decreases rise:fall fall:rise growth:decline
declined:grew strong:weak weak:strong win:lose lose:win""".split())  # noqa: SIM905


@dataclass
class Article:
    """One article: its id, URL, the scraped text a task would read, and its usable reference sentences."""

    id: str
    url: str
    text: str
    sentences: list[str]
    names: set[str]


def sentences_of(reference: str, scraped: str) -> list[str]:
    """Reference sentences of 50-300 characters the scraped text holds word for word (whitespace aside)."""
    flat = " ".join(scraped.split())
    out = []
    for line in reference.splitlines():
        for m in _SENTENCE.finditer(line.strip()):
            s = m.group(0).strip()
            if 50 <= len(s) <= 300 and s[0].isupper() and "http" not in s and len(s.split()) >= 8 and s in flat:
                out.append(s)
    return out


def article(page_id: str, url: str, reference: str, scraped: str) -> Article:
    """The article with its sentences and the capitalised words it uses anywhere (no name is swapped to these)."""
    return Article(page_id, url, scraped, sentences_of(reference, scraped),
                   {w.casefold() for w in re.findall(r"[A-Za-z]+", reference + " " + scraped)})


def _cap(text: str) -> str:
    text = text.strip(" ,;:")
    return text[:1].upper() + text[1:]


def clause(s: str, rng: random.Random) -> str | None:
    """The longest clause of at least six words, cut at a comma, semicolon, 'and' or 'but'."""
    parts = [p for p in re.split(r",\s+|;\s+|\s+(?:and|but|while|whereas)\s+", s.rstrip(".!?")) if len(p.split()) >= 6]
    if not parts or len(parts[0]) >= len(s.rstrip(".!?")) - 2:
        return None
    return _cap(max(parts, key=len)) + "."


def reword(s: str, rng: random.Random) -> str | None:
    """Up to three words swapped for synonyms, a leading phrase moved to the end, a negation (un)contracted."""
    words, changed = s.split(), 0
    for i in rng.sample(range(len(words)), len(words)):
        core = words[i].strip(".,;:!?\"“”’'()")
        if core in REWORD and changed < 3:
            words[i] = words[i].replace(core, REWORD[core])
            changed += 1
    out = " ".join(words)
    lead = re.match(r"^((?:In|On|At|By|During|Last|This|Since|After|Before)\b[^,]{3,40}),\s+(.*?)([.!?])$", out)
    if lead:
        out, changed = _cap(lead.group(2)) + " " + lead.group(1)[0].lower() + lead.group(1)[1:] + lead.group(3), \
            changed + 1
    for a, b in ((" did not ", " didn't "), (" does not ", " doesn't "), (" is not ", " isn't "),
                 (" don't ", " do not "), (" can't ", " cannot "), (" won't ", " will not ")):
        if a in out:
            out, changed = out.replace(a, b, 1), changed + 1
            break
    return out if changed else None


def negate(s: str, rng: random.Random) -> str | None:
    """A negation removed when the sentence has one, else `not` after its first auxiliary verb."""
    m = _NEG.search(s)
    if m:
        return s[:m.start()] + s[m.end():]
    m = _AUX.search(s)
    return s[:m.end()] + " not" + s[m.end():] if m else None


def swap_name(s: str, a: Article, pool: list[str], rng: random.Random) -> str | None:
    """A name of the sentence replaced by a name from another article that this article never mentions."""
    names = [m for m in _CAPITAL.finditer(s) if m.group(0).split()[0] not in _NOT_NAMES]
    fresh = [n for n in pool if not {w.casefold() for w in n.split()} & a.names]
    if not names or not fresh:
        return None
    m = rng.choice(names)
    return s[:m.start()] + rng.choice(fresh) + s[m.end():]


def flip(s: str, rng: random.Random) -> str | None:
    """One direction word turned to its opposite (rose/fell, more/less, before/after ...)."""
    found = [m for m in re.finditer(r"\b[a-z]+\b", s) if m.group(0) in FLIPS]
    if not found:
        return None
    m = rng.choice(found)
    return s[:m.start()] + FLIPS[m.group(0)] + s[m.end():]


def change_figure(s: str, rng: random.Random) -> str | None:
    """One digit of one figure changed (never the leading digit to 0)."""
    figures = list(FIGURE.finditer(s))
    if not figures:
        return None
    m = rng.choice(figures)
    digits = [i for i, ch in enumerate(m.group(0)) if ch.isdigit()]
    i = rng.choice(digits)
    choices = [d for d in "0123456789" if d != m.group(0)[i] and not (d == "0" and i == digits[0])]
    new = m.group(0)[:i] + rng.choice(choices) + m.group(0)[i + 1:]
    return s[:m.start()] + new + s[m.end():]


def _first(a: Article, make: object, rng: random.Random) -> str | None:
    for s in rng.sample(a.sentences, len(a.sentences)):
        made = make(s, rng)  # type: ignore[operator]
        if made and made != s:
            return made
    return None


def claims_of(a: Article, pool: list[str], seed: int) -> list[tuple[str, str]]:
    """(kind, claim) for one article: one of each kind it allows, each a sentence as an answer writes it."""
    rng = random.Random(f"{seed}:{a.id}")
    if len(a.sentences) < 3:
        return []
    out = [("true: verbatim", rng.choice(a.sentences))]
    pair = rng.randrange(len(a.sentences) - 1)
    first = re.sub(r"[.!?]([\"”’)]*)$", r"\1", a.sentences[pair])  # `… 2019."` merges as `… 2019", and …`
    out.append(("true: merged", first + ", and " + a.sentences[pair + 1][0].lower() + a.sentences[pair + 1][1:]))
    for kind, make in (("true: clause", clause), ("true: reworded", reword), ("false: negated", negate),
                       ("false: name swapped", lambda s, r: swap_name(s, a, pool, r)),
                       ("false: direction flipped", flip), ("false: figure changed", change_figure)):
        made = _first(a, make, rng)
        if made:
            out.append((kind, made))
    return [(kind, _cited(text)) for kind, text in out]


def _cited(sentence: str) -> str:
    body = sentence.rstrip()
    stop = body[-1] if body[-1] in ".!?" else "."
    return f"{body.rstrip('.!?')} [1]{stop}"


def name_pool(articles: list[Article]) -> list[str]:
    """Capitalised names (one or two words) of these articles, in order, once each; never a word any of them
    also writes in lower case (`Under`, `Even` at the start of a phrase are words, not names)."""
    lower = {w for a in articles for w in re.findall(r"\b[a-z]+\b", a.text)}
    seen: dict[str, None] = {}
    for a in articles:
        for s in a.sentences:
            for m in _CAPITAL.finditer(s):
                if m.group(0).split()[0] not in _NOT_NAMES and not {w.lower() for w in m.group(0).split()} & lower:
                    seen.setdefault(m.group(0), None)
    return list(seen)
