"""Score the citation check (sources/check.py) on answers built from real page texts with planted faults.

Usage: python benchmarks/citations.py [--data DIR] [--cases N] [--set figures|meaning|both|real|all]
       [--tuning-only] [--misses] [--real DIR] [--part all|look|measure] [--wordnet system|shipped|none]

Each case is one answer citing two pages the task "read" ([1] and [2], their text as scrape keeps it:
tools.documents.page_text.extract_main_content on pages of the Zyte article-extraction set), with a third
page's URL "seen" in search but never read. Its claims are sentences of those pages: correct ones (verbatim,
with numbers and dates respelled — 2,148,000 as 2.148 million, 5% as 5 percent, March 3, 2021 as 3 March
2021 — and trimmed to a few words around the figure), and planted faults: one digit of a figure changed,
a sentence of page 2 cited as [1] (swapped source), a citation of a source never read (fabricated), a
sentence with an invented figure appended, an invented URL and the unread search result's URL.

Pages whose id starts with 0-9 make the tuning cases (the checker's rules were adjusted looking at them);
pages starting with a-f make the held-out cases, never looked at while tuning. Both are printed.

The meaning set (benchmarks/meaning_set.py, `--set meaning`) makes true claims (verbatim, a clause, reworded,
two sentences merged) and subtly false ones (negated, a name swapped, a direction flipped, a figure changed)
from the articles' reference text, split into the same two halves; per kind it prints the share judged right
(true: supported; false: contradicted, unsupported or another failing verdict), the unchecked share and the
check's CPU milliseconds per claim. `--tuning-only` prints the tuning half alone (while adjusting rules).

The real sets (`--set real`, benchmarks/real_claims.py) are claims judged by people, from ../shared/data/claims-real:
per set, balanced accuracy, the share of correct claims passed, of wrong ones flagged, of flags that are right, of
correct claims called contradicted, and CPU ms per claim. `--part look|measure` takes half of each set by a hash
of its ids (adjust rules looking at `look --misses` only; `measure` is only measured). `--wordnet shipped`
measures the check as a user without the system's WordNet database meets it (sources/wordnet.py reads the table of
the commonest words it ships), `--wordnet none` with neither (the check's own table alone).
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass
from multiprocessing import Pool
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.meaning_set import (  # noqa: E402
    FALSE_KINDS,
    FIGURE,
    TRUE_KINDS,
    Article,
    article,
    claims_of,
    name_pool,
)
from benchmarks.meaning_set import change_figure as change_digit  # noqa: E402
from benchmarks.real_claims import PARTS, SETS, misses, score  # noqa: E402
from benchmarks.real_claims import table as real_table  # noqa: E402
from sources import wordnet  # noqa: E402
from sources.check import (  # noqa: E402
    CONTRADICTED,
    FAILING,
    NOT_READ,
    SUPPORTED,
    UNCHECKED,
    UNSUPPORTED,
    WRONG_SOURCE,
    check_citations,
)
from sources.ledger import Read, SourceLedger  # noqa: E402

# ../shared/data/article-extraction beside the checkout (a worktree's is one level further up)
DEFAULT_DATA = next((p / "shared" / "data" / "article-extraction" for p in ROOT.parents
                     if (p / "shared" / "data" / "article-extraction").is_dir()),
                    ROOT.parent / "shared" / "data" / "article-extraction")
DEFAULT_REAL = DEFAULT_DATA.parent / "claims-real"
ORIGINALS: dict[str, str] = {}  # changed-number claim -> the sentence it was made from (for --misses)
CORRECT = ("correct: verbatim", "correct: respelled", "correct: trimmed", "correct: paraphrased")
CAUGHT_BY = {"changed number": {UNSUPPORTED, WRONG_SOURCE, CONTRADICTED},
             "invented number": {UNSUPPORTED, WRONG_SOURCE, CONTRADICTED},
             "swapped source": {WRONG_SOURCE}, "fabricated": {"fabricated"}, "invented URL": {NOT_READ},
             "unread search result": {NOT_READ}}
_NEGATION = re.compile(r"(?i)^(?:not|never|no)$|n[’']t$")  # dropping one (or the word it negates) makes it false
_SENTENCE = re.compile(r"\S.*?[.!?](?=\s+[\"“]?[A-Z]|\s*$)")
_MONTH_DATE = re.compile(r"\b(January|February|March|April|May|June|July|August|September|October|November|"
                         r"December) (\d{1,2}), (\d{4})\b")


@dataclass
class Page:
    """One page as the task read it: its id, URL, title and the text scrape kept, with its figure sentences."""

    id: str
    url: str
    text: str
    sentences: list[str]


def _extract(job: tuple[str, str, str]) -> tuple[str, str]:
    page_id, path, url = job
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from tools.documents.page_text import extract_main_content  # heavy (trafilatura): only in the workers

    html = gzip.decompress(Path(path).read_bytes()).decode("utf-8", errors="replace")
    try:
        return page_id, extract_main_content(html, url)
    except Exception:  # noqa: BLE001 - a page the extractor cannot read is left out
        return page_id, ""


def figure_sentences(text: str) -> list[str]:
    """Sentences of 50-280 characters that state a figure (a number not inside a word or code)."""
    out = []
    for line in text.splitlines():
        line = line.strip().lstrip("#>*-| ").strip()
        for m in _SENTENCE.finditer(line):
            sentence = m.group(0).strip()
            if 50 <= len(sentence) <= 280 and FIGURE.search(sentence) and "http" not in sentence \
                    and sentence[0].isupper() and "[" not in sentence:
                out.append(sentence)
    return out


def scraped(data: Path, workers: int) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """The set's ground truth ({id: {articleBody, url}}) and each page's text as scrape keeps it."""
    truth = json.loads((data / "ground-truth.json").read_text(encoding="utf-8"))
    jobs = [(pid, str(data / "html" / f"{pid}.html.gz"), truth[pid].get("url", "")) for pid in sorted(truth)]
    with Pool(workers) as pool:
        return truth, dict(pool.map(_extract, jobs))


def load_pages(truth: dict[str, dict[str, str]], texts: dict[str, str]) -> list[Page]:
    """Every page of the set with at least three figure sentences, in id order."""
    pages = [Page(pid, truth[pid].get("url", ""), texts[pid], figure_sentences(texts[pid])) for pid in sorted(truth)]
    return [p for p in pages if len(p.sentences) >= 3 and p.url]


def respell(sentence: str) -> str | None:
    """The sentence with a figure or date written another common way, or None when none applies."""
    date = _MONTH_DATE.search(sentence)
    if date:
        return sentence[:date.start()] + f"{date.group(2)} {date.group(1)} {date.group(3)}" + sentence[date.end():]
    for m in FIGURE.finditer(sentence):
        text, after = m.group(0), sentence[m.end():]
        value = float(text.replace(",", ""))
        if after.startswith("%"):
            return sentence[:m.end()] + " percent" + after[1:]
        if re.match(r"\s+percent\b", after):
            return sentence[:m.end()] + "%" + after[len(" percent"):]
        if "," in text and value >= 1_000_000 and "." not in text:
            return sentence[:m.start()] + f"{value / 1e6:.6f}".rstrip("0").rstrip(".") + " million" + after
        if "," in text:
            return sentence[:m.start()] + text.replace(",", "") + after
        if value >= 10_000 and "." not in text:
            return sentence[:m.start()] + f"{int(value):,}" + after
    return None


def trim(sentence: str) -> str:
    """A few words around the sentence's first figure: a terse claim."""
    words = sentence.rstrip(".!?").split()
    at = next(i for i, w in enumerate(words) if FIGURE.search(w))
    end = at + 5
    while end < len(words) and FIGURE.search(words[end - 1]):
        end += 1  # a figure keeps the word after it (its unit or scale)
    text = " ".join(words[max(0, at - 6): end]).strip(",;:")
    first = next((i for i, ch in enumerate(text) if ch.isalpha()), 0)
    return text[:first] + text[first:first + 1].upper() + text[first + 1:]


def paraphrase(sentence: str, rng: random.Random) -> str:
    """A lossy rewording: every figure (with the word after it) and negation (with the word it negates) kept,
    but only about 40% of the other words."""
    words = sentence.rstrip(".!?").split()
    quoted = False  # words inside a quotation stay: a changed quotation is a fault, not a paraphrase
    keep = []
    for i, w in enumerate(words):
        opens, closes = w.count("“") + w.count('"'), w.count("”") + w.count('"')
        inside = quoted or opens > 0
        quoted = (quoted or opens > 0) and not (closes > 0 and (quoted or w.count('"') != 1))
        if inside or FIGURE.search(w) or (i and FIGURE.search(words[i - 1])) or rng.random() < 0.4 \
                or _NEGATION.search(w) or (i and _NEGATION.search(words[i - 1])):  # a negation keeps its word
            keep.append(w)
    return "Reportedly, " + " ".join(keep).strip(",;:")


def cite(sentence: str, n: int) -> str:
    """The claim as an answer writes it: the sentence with `[n]` before its final stop."""
    body = sentence.rstrip().rstrip(".!?")
    return f"{body} [{n}]."


def build_case(a: Page, b: Page, seen: Page, rng: random.Random) -> tuple[SourceLedger, list[tuple[str, str]]]:
    """One answer's planted claims (category, text) and the ledger of the two pages it read."""
    ledger = SourceLedger()
    ledger.observe(a.text, [Read(a.url, a.url.rsplit("/", 1)[-1])])
    ledger.observe(b.text, [Read(b.url, "")])
    s = rng.sample(a.sentences, 3)
    t = rng.sample(b.sentences, 2)
    claims = [("correct: verbatim", cite(s[0], 1)), ("correct: verbatim", cite(t[0], 2)),
              ("correct: trimmed", cite(trim(s[1]), 1)), ("correct: paraphrased", cite(paraphrase(t[1], rng), 2))]
    respelled = respell(t[1]) or respell(s[1])
    if respelled:
        claims.append(("correct: respelled", cite(respelled, 2 if respell(t[1]) else 1)))
    for original, n in ((s[2], 1), (rng.choice(b.sentences), 2)):
        changed = change_digit(original, rng)
        if changed:
            claims.append(("changed number", cite(changed, n)))
            ORIGINALS[cite(changed, n)] = original
    claims += [("swapped source", cite(t[1], 1)), ("fabricated", cite(rng.choice(b.sentences), rng.choice([3, 4, 7]))),
               ("invented number", cite(s[0].rstrip(".!?") + f", according to a survey of {rng.randint(1200, 9800):,}"
                                                             " people", 1)),
               ("invented URL", f"More detail is at https://{a.url.split('/')[2]}/reports/{rng.randint(1000, 9999)}"
                                "-summary.html"),
               ("unread search result", f"See also {seen.url}")]
    return ledger, claims


def verdicts(ledger: SourceLedger, claims: list[tuple[str, str]], bullets: bool) -> list[tuple[str, str, str]]:
    """(category, claim, verdict) for each planted claim; `none` when the check made no citation of it."""
    answer = "\n".join(f"- {text}" for _, text in claims) if bullets else " ".join(text for _, text in claims)
    found = check_citations(answer, ledger)
    out = []
    for category, text in claims:
        if category in ("invented URL", "unread search result"):
            mine = [c for c in found if c.url and c.url in text]
        else:  # the citation of this claim's marker whose claim is this one, a piece of it, or holds it
            n = int(text.rsplit("[", 1)[1].split("]")[0])
            mine = [c for c in found if c.n == n and c.claim and (c.claim in text or text in c.claim)]
        out.append((category, text, mine[0].verdict if mine else "none"))
    return out


def run(pages: list[Page], cases: int, seed: int) -> tuple[list[tuple[str, str, str]], float]:
    """The verdicts of `cases` answers built from these pages, and the check's mean milliseconds per answer."""
    rng = random.Random(seed)
    results, spent = [], 0.0
    count = min(cases, len(pages))
    for i in range(count):
        a, b, seen = pages[i], pages[(i + 1) % len(pages)], pages[(i + 2) % len(pages)]
        ledger, claims = build_case(a, b, seen, rng)
        started = time.process_time()  # CPU time: the machine is shared
        results += verdicts(ledger, claims, bullets=i % 2 == 0)
        spent += time.process_time() - started
    return results, 1000 * spent / max(1, count)


def table(name: str, results: list[tuple[str, str, str]]) -> dict[str, tuple[int, int]]:
    """Print caught (faults) or flagged (correct claims) per category; return them."""
    per: dict[str, tuple[int, int]] = {}
    by_category: dict[str, list[str]] = {}
    for category, _, verdict in results:
        by_category.setdefault(category, []).append(verdict)
    print(f"\n{name}")
    print(f"| {'claims':<22} | {'n':>4} | {'caught / flagged':>17} | {'rate':>6} | verdicts")
    for category in [*CORRECT, *CAUGHT_BY]:
        got = by_category.get(category, [])
        hits = sum(v in FAILING for v in got) if category in CORRECT else sum(v in CAUGHT_BY[category] for v in got)
        per[category] = (hits, len(got))
        rate = f"{hits / len(got):.1%}" if got else "n/a"
        spread = ", ".join(f"{v} {n}" for v, n in Counter(got).most_common())
        print(f"| {category:<22} | {len(got):>4} | {hits:>17} | {rate:>6} | {spread}")
    correct = [v for c, _, v in results if c in CORRECT]
    flagged = sum(v in FAILING for v in correct)
    print(f"correct claims flagged: {flagged}/{len(correct)} = {flagged / max(1, len(correct)):.1%}")
    return per


def meaning_run(articles: list[Article], others: list[Article], seed: int) -> tuple[list[tuple[str, str, str]], float]:
    """(kind, claim, verdict) of every claim of the meaning set made from these articles; ms per claim."""
    results, spent, count = [], 0.0, 0
    pool = name_pool(others)
    for i, a in enumerate(articles):
        made = claims_of(a, pool, seed)
        if not made:
            continue
        ledger = SourceLedger()
        ledger.observe(a.text, [Read(a.url, "")])
        neighbour = articles[(i + 1) % len(articles)]
        ledger.observe(neighbour.text, [Read(neighbour.url, "")])
        answer = "\n".join(f"- {text}" for _, text in made)
        started = time.process_time()  # CPU time: the machine is shared, wall time says more about the others
        found = check_citations(answer, ledger)
        spent += time.process_time() - started
        count += len(made)
        for kind, text in made:
            mine = [c for c in found if c.n == 1 and c.claim == text] or \
                [c for c in found if c.n == 1 and c.claim and (c.claim in text or text in c.claim)]
            results.append((kind, text, mine[0].verdict if mine else "none"))
    return results, 1000 * spent / max(1, count)


def meaning_table(name: str, results: list[tuple[str, str, str]], ms: float) -> None:
    """Per kind: the share judged right (true: supported; false: flagged), the verdicts; unchecked share; ms."""
    print(f"\n{name}: {len(results)} claims, {ms:.2f} ms (CPU) per claim, reading the sources included")
    print(f"| {'claims':<26} | {'n':>4} | {'right':>6} | verdicts")
    for kind in (*TRUE_KINDS, *FALSE_KINDS):
        got = [v for k, _, v in results if k == kind]
        right = sum(v == SUPPORTED if kind in TRUE_KINDS else v in FAILING for v in got)
        spread = ", ".join(f"{v} {n}" for v, n in Counter(got).most_common())
        print(f"| {kind:<26} | {len(got):>4} | {right / max(1, len(got)):>6.1%} | {spread}")
    true = [v for k, _, v in results if k in TRUE_KINDS]
    false = [v for k, _, v in results if k in FALSE_KINDS]
    supported, flagged = sum(v == SUPPORTED for v in true), sum(v in FAILING for v in false)
    print(f"true claims supported: {supported}/{len(true)} = {supported / max(1, len(true)):.1%}; false claims "
          f"flagged: {flagged}/{len(false)} = {flagged / max(1, len(false)):.1%}; unchecked: "
          f"{sum(v == UNCHECKED for _, _, v in results) / max(1, len(results)):.1%}")


def main(argv: list[str] | None = None) -> int:
    """Build the cases, check them and print the tables for the tuning and held-out halves."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--cases", type=int, default=1000, help="answers per half at most (default: one per page)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--set", choices=["figures", "meaning", "both", "real", "all"], default="both",
                        help="both: figures and meaning; real: the claims judged by people; all: the three")
    parser.add_argument("--misses", action="store_true", help="list the tuning half's misses and false flags")
    parser.add_argument("--tuning-only", action="store_true", help="the tuning half only (while adjusting rules)")
    parser.add_argument("--real", type=Path, default=DEFAULT_REAL, help="the claims-real folder")
    parser.add_argument("--part", choices=PARTS, default="all", help="real sets: all rows, or one half by id hash")
    parser.add_argument("--wordnet", choices=["system", "shipped", "none"], default="system",
                        help="shipped: as on a system without WordNet's database; none: without the shipped table too")
    args = parser.parse_args(argv)
    hide_wordnet(args.wordnet)
    if args.set in ("figures", "meaning", "both", "all"):
        truth, texts = scraped(args.data, args.workers)
        if args.set != "meaning":
            figures(load_pages(truth, texts), args)
        if args.set != "figures":
            meaning(truth, texts, args)
    if args.set in ("real", "all"):
        real(args)
    return 0


def hide_wordnet(keep: str) -> None:
    """Read rewordings from the system's WordNet (as found), the shipped table only, or neither."""
    if keep != "system":
        wordnet.PLACES = ()
    if keep == "none":
        wordnet.TABLE = wordnet.TABLE.with_name("absent")
    for cached in (wordnet.database, wordnet.common, wordnet.synonyms):
        cached.cache_clear()


def real(args: argparse.Namespace) -> None:
    """The real sets' table on their tuning halves (or one part of them); with --misses, every wrong verdict."""
    scored = [score(args.real, name, file, both, args.part) for name, file, both in SETS]
    real_table(scored, f"real claims judged by people ({args.part} of the tuning halves, {args.real})")
    if args.misses:
        misses(scored)


def meaning(truth: dict[str, dict[str, str]], texts: dict[str, str], args: argparse.Namespace) -> None:
    """The meaning set on both halves (tuning: ids 0-9, held out: a-f)."""
    articles = [article(pid, truth[pid].get("url", ""), truth[pid].get("articleBody", ""), texts[pid])
                for pid in sorted(truth) if texts[pid]]
    print("\nmeaning set: true claims (verbatim, clause, reworded, merged) should be supported; false ones "
          "(negated, name swapped, direction flipped, figure changed) flagged")
    for name, tuning in (("tuning", True), ("held out", False))[:1 if args.tuning_only else 2]:
        half = [a for a in articles if (a.id[0] in "0123456789") == tuning]
        results, ms = meaning_run(half, half, args.seed)
        meaning_table(f"meaning, {name}: {len(half)} articles", results, ms)
        if args.misses and tuning:
            for kind, text, verdict in results:
                if (verdict != SUPPORTED) if kind in TRUE_KINDS else (verdict not in FAILING):
                    print(f"  {kind} -> {verdict}: {text}")


def figures(pages: list[Page], args: argparse.Namespace) -> None:
    """The figure set (planted faults in answers citing two pages) on both halves."""
    tuning = [p for p in pages if p.id[0] in "0123456789"]
    held_out = [p for p in pages if p.id[0] not in "0123456789"]
    print(f"{len(pages)} pages with 3+ figure sentences: {len(tuning)} tuning, {len(held_out)} held out")
    for name, group in (("tuning", tuning), ("held out", held_out))[:1 if args.tuning_only else 2]:
        results, ms = run(group, args.cases, args.seed)
        table(f"{name}: {min(args.cases, len(group))} answers, {len(results)} claims, {ms:.1f} ms (CPU) per answer's "
              "check", results)
        if args.misses and name == "tuning":
            for category, text, verdict in results:
                wrong = verdict in FAILING | {"none"} if category in CORRECT else verdict not in CAUGHT_BY[category]
                if wrong:
                    print(f"  {category} -> {verdict}: {text}")
                    if category == "changed number":
                        print(f"      (from: {ORIGINALS.get(text, '?')})")


if __name__ == "__main__":
    sys.exit(main())
