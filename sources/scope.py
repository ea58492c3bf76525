"""What a negation or a direction word bears on, and who does what around a verb: the three ways a claim made
of its passage's own words can still say otherwise (meaning.py asks these once a claim is aligned).

- A negation bears on the content words after it in its clause ("did not carry the bill": carry, bill). A
  claim's negation is a contradiction only where the passage says those words (two of them, or one and the
  word before the negation), and no negation of its own bears on them ("no fixed plans" against "no plans" is
  the same negation); the same
  the other way round.
- A direction word (rose/fell, won/lost, before/after ...) bears on its neighbours in its clause. A claim's
  direction is a contradiction only where the passage gives the opposite one about the same thing (a neighbour
  on the same side: "profits rose" against "profits fell"; for winning and losing, the same word just before:
  "City beat United" is not "United lost to City"), and not the claim's own; a claim that says both together ("failed
  to win") is not compared there. A direction under a negation ("did not rise") is no direction. A sentence's
  clauses end at a contrast ("while", "whereas", "but" ...) and at an "and" between two clauses with a direction
  each; of the passage's directions about the claim's thing, those whose clause names most of the claim's subject
  decide ("store sales grew" against "online sales grew while store sales declined": the declining).
- A name of the claim right before a past verb it shares with its passage ("McManus scored") is a role
  swapped when, in the passage, only other names stand right before that verb ("Forbes scored", McManus named
  elsewhere); a passive "by" is read as the doer.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sources.reading import BREAK, Word

SCOPE = 4  # content words after a negation that it bears on
SUBJECT = 16  # content words before a negation in its sentence that may name who it bears on
NEAR = 3  # words either side of a direction or a name that say what it is about
_ANSWER = frozenset({"but", "and", "or", "i", "thanks", "thank", "sorry", "way"})
_ELIDED = frozenset({"but", "and", "yet", "or"})  # "X did this but has no plans": X has none
_CONTRAST = frozenset({"while", "whilst", "whereas", "but", "although", "though", "yet"})  # a clause gives way
_NOT_NEGATING = frozenset({"only", "just", "merely", "least", "longer"})  # not only, not just, no longer


def _clause_after(words: list[Word], i: int, limit: int, cross: bool = False) -> list[Word]:
    """Up to `limit` content words after position i, within its clause (`cross`: past a clause break too)."""
    out: list[Word] = []
    for w in words[i + 1:]:
        if w is BREAK and not cross or len(out) >= limit:
            break
        if w.key:
            out.append(w)
    return out


def _clause_before(words: list[Word], i: int, limit: int, cross: bool = False) -> list[Word]:
    """Up to `limit` content words before position i, within its clause (`cross`: past a clause break too)."""
    out: list[Word] = []
    for w in reversed(words[:i]):
        if w is BREAK and not cross or len(out) >= limit:
            break
        if w.key:
            out.append(w)
    return out


@dataclass(frozen=True)
class Negation:
    """A negation, the keys of the words it bears on and of the content word before it (its subject or verb)."""

    word: str
    scope: frozenset[str]
    head: str
    before: str
    after: tuple[str, ...]  # the words it bears on after the first, in order
    subject: frozenset[str] = frozenset()  # the content words before it in its sentence (who is negated)


def _same_subject(claimed: Negation, sourced: Negation) -> bool:
    """A claim's and a source's negation of the same one's words, as far as their sentences tell: the same word
    before each, or the source's word before its negation standing before the claim's ("Ruiz and Diaz are a
    couple with no plans" against "ruiz and diaz have no plans"; not "the tunnel did not open" for the bridge)."""
    return not claimed.before or not sourced.before or claimed.before == sourced.before \
        or sourced.before in claimed.subject


def negations(words: list[Word]) -> list[Negation]:
    """Each negation of a text with what it bears on (`not only`, `not just`, `no longer` are none)."""
    out = []
    for i, w in enumerate(words):
        following = words[i + 1] if i + 1 < len(words) else BREAK
        if not w.negation or following.text.casefold() in _NOT_NEGATING or w.text == "No" and i > 0 or \
                w.text.casefold() == "no" and (following is BREAK or following.text.casefold() in _ANSWER):
            continue  # "not only"; a quoted "No"; "no, but ...": an answer, not a negation
        after = _clause_after(words, i, SCOPE) or _clause_after(words, i, SCOPE, cross=True)  # "not, however,"
        if after:
            out.append(Negation(w.text, frozenset(x.key for x in after), after[0].key, _subject_word(words, i),
                                tuple(x.key for x in after[1:]),
                                frozenset(x.key for x in _clause_before(words, i, SUBJECT, cross=True))))
    return out


def _subject_word(words: list[Word], i: int) -> str:
    """The content word just before a negation in its clause, or "" where a conjunction leaves its subject unsaid
    ("... managers but has no plans": the sentence's subject has none, not the managers)."""
    for w in reversed(words[:i]):
        if w is BREAK or w.key:
            return w.key
        if w.text.casefold() in _ELIDED:
            return ""
    return ""


def polarity(claim: list[Word], window: list[Word], whole: bool = False,
             elsewhere: Iterable[Negation] = ()) -> tuple[str, str] | None:
    """("claim" or "source", the negation) where one side negates what the other says plainly, else None.
    `whole`: the claim restates its passage's one sentence, so the word negated is enough. `elsewhere`: the
    negations of the rest of the source, which may say the claim's own negation in another sentence."""
    elsewhere = list(elsewhere)
    claimed, sourced = negations(claim), negations(window)
    for side, mine, theirs, other in (("claim", claimed, sourced, window), ("source", sourced, claimed, claim)):
        keys = {w.key for w in other if w.key}
        for neg in mine:
            if _said_too(neg, side == "claim", theirs, elsewhere if side == "claim" else []):
                continue
            shared = len(neg.scope & keys)
            if neg.head in keys and _in_order(other, neg) and (whole or shared >= min(2, len(neg.scope)) and
                                                               (neg.before in keys if neg.before else shared >= 2)):
                return side, neg.word
    return None


def _said_too(neg: Negation, claims: bool, theirs: list[Negation], elsewhere: list[Negation]) -> bool:
    """The other side negates the same words too (of the same subject, where both name one): in the passage, or
    (a claim's negation) on the same word in another sentence of the source."""
    if any(neg.scope & n.scope and (_same_subject(neg, n) if claims else _same_subject(n, neg)) for n in theirs):
        return True
    return any(n.head == neg.head and len(neg.scope & n.scope) >= min(2, len(neg.scope)) and _same_subject(neg, n)
               for n in elsewhere)


def _in_order(words: list[Word], neg: Negation) -> bool:
    """The other side says the negated word followed by another word it bears on ("not using the feature"
    against "using the feature", not "the feature being used"), or the negation bears on one word only."""
    rest = set(neg.after)
    return not rest or any(w.key == neg.head and any(x.key in rest for x in _clause_after(words, i, SCOPE))
                           for i, w in enumerate(words))


@dataclass(frozen=True)
class Direction:
    """A direction word with the keys of its neighbours on each side."""

    word: str
    at: int
    axis: str
    sign: int
    left: frozenset[str]
    right: frozenset[str]
    nearest: str  # the content word just before it: who wins or loses
    subject: frozenset[str] = frozenset()  # the content words before it in its clause: who or what it bears on


def _clauses(words: list[Word]) -> list[Word]:
    """The words with a BREAK where one clause gives way to another: before a contrast ("while", "whereas",
    "but" ...) and before an "and" between two clauses with a direction each ("sales rose and profits fell"; not
    "sales and profits rose", "later moved to Texas and then to Ohio")."""
    out: list[Word] = []
    turned = False  # the clause so far holds a direction word
    for i, w in enumerate(words):
        lower = w.text.casefold()
        if lower in _CONTRAST or lower == "and" and turned and _turns(words[i + 1:]):
            out.append(BREAK)
            turned = False
        out.append(w)
        turned = w is not BREAK and (turned or w.direction is not None)
    return out


def _turns(words: list[Word]) -> bool:
    """The clause these words begin holds a direction word of its own."""
    for w in words:
        if w is BREAK or w.text.casefold() in _CONTRAST:
            return False
        if w.direction is not None:
            return True
    return False


def directions(words: list[Word]) -> list[Direction]:
    """Each direction word of a text with its neighbours in its clause and who it bears on (the content words
    before it in its clause); one under a negation ("did not rise") is left out."""
    out = []
    words = _clauses(words)
    for i, w in enumerate(words):
        if w.direction is None:
            continue
        near = words[max(0, i - NEAR):i]
        if any(x.negation for x in near) and BREAK not in near:
            continue
        left = _clause_before(words, i, NEAR) or _clause_before(words, i, NEAR, cross=True)
        right = _clause_after(words, i, NEAR)
        out.append(Direction(w.text, i, w.direction[0], w.direction[1],
                             frozenset(x.key for x in left if not x.direction),
                             frozenset(x.key for x in right if not x.direction), left[0].key if left else "",
                             frozenset(x.key for x in _clause_before(words, i, SUBJECT) if not x.direction)))
    return out


def _bearing_on(d: Direction, same: list[Direction]) -> list[Direction]:
    """Of the passage's directions about the claim's thing, those whose clause names most of who the claim's bears
    on ("store sales grew" against "online sales grew while store sales declined": the declining), all of them
    where no clause names more of it than another."""
    shared = [len(d.subject & t.subject) for t in same]
    if not shared or max(shared) == min(shared):
        return same
    return [t for t, n in zip(same, shared, strict=True) if n == max(shared)]


def reversed_direction(claim: list[Word], window: list[Word]) -> tuple[str, str] | None:
    """(the claim's word, the passage's) where the passage gives only the opposite direction about the same
    thing, else None."""
    theirs = directions(window)
    mine = directions(claim)
    for d in mine:
        if any(e.axis == d.axis and e.sign == -d.sign and abs(e.at - d.at) <= NEAR for e in mine):
            continue  # "failed to win": the claim says both
        same = [t for t in theirs if t.axis == d.axis and (d.nearest and d.nearest == t.nearest if d.axis == "outcome"
                                                            else d.left & t.left or d.right & t.right)]
        same = _bearing_on(d, same)
        if same and all(t.sign == -d.sign for t in same) and \
                not all(any(_alike(e, t) and len(e.subject & t.subject) >= len(d.subject & t.subject) for e in mine)
                        for t in same):  # "previously at X, chosen after Y"; not "X grew while Y declined" swapped
            return d.word, same[0].word
    return None


def _alike(mine: Direction, theirs: Direction) -> bool:
    """The same direction about the same thing (the passage's word is another one the claim says itself)."""
    return mine.axis == theirs.axis and mine.sign == theirs.sign and bool(mine.left & theirs.left or
                                                                          mine.right & theirs.right)


_PAST = frozenset({"won", "beat", "lost", "sold", "bought", "led", "left", "took", "gave", "made", "told", "hit",
                   "ran", "shot", "struck", "paid", "kept", "held", "met", "sent", "built", "wrote", "found", "caught",
                   "threw", "drew", "chose", "became", "began", "brought", "fought"})
_PERFECT = frozenset({"has", "had", "have"})


def _deed(words: list[Word], i: int) -> Word | None:
    """The verb a name does, right after it (`has` or `had` between allowed): a past form, or None."""
    j = i + 1
    if j < len(words) and words[j].text.casefold() in _PERFECT:
        j += 1
    if j >= len(words) or not words[j].key or words[j].name:
        return None
    return words[j] if _past(words[j].text.casefold()) else None


def _past(verb: str) -> bool:
    """A past form: scored, won, beat."""
    return verb in _PAST or len(verb) > 4 and verb.endswith("ed")


def swapped_role(claim: list[Word], window: list[Word]) -> tuple[str, str] | None:
    """(the claim's name, the verb) where the passage has that verb done only by other names, else None."""
    names = {w.key for w in window if w.name}
    for i, w in enumerate(claim):
        if w.key not in names or not (w.name or i == 0) or i > 0 and claim[i - 1].text.casefold() == "by":
            continue
        act = _deed(claim, i)
        if act is None:
            continue
        doers = _doers(window, act.key)
        if doers and not any(d[:4] == w.key[:4] for d in doers):  # Lyon / Lyonnais
            return w.text, act.text
    return None


def _doers(words: list[Word], key: str) -> set[str]:
    """The names that do what this key says in a text: the name just before it, all its words (`has`, `had`
    between), or after a `by` just after it."""
    out: set[str] = set()
    for j, x in enumerate(words):
        if x.key != key or not _past(x.text.casefold()):
            continue  # not the same deed: "pulled the Panthers level" is no "leveled"
        if any(a.text.casefold() == "by" for a in words[j + 1:j + 3]):
            out |= {n.key for n in _clause_after(words, j, 2) if n.name}
            continue
        k = j - 1
        if k >= 0 and words[k].text.casefold() in _PERFECT:
            k -= 1
        while k >= 0 and words[k].name:  # the whole name: Mayor Ana Ruiz
            out.add(words[k].key)
            k -= 1
    return out
