"""Write sources/wordnet_common.txt: WordNet's commonest words with the words of their commonest sense, the table
the claim check reads rewordings from where the system has no WordNet database (sources/wordnet.py).

Usage: python benchmarks/make_rewordings.py [WORDNET_FOLDER] [--min-count N]
(default /usr/share/wordnet, from Debian's wordnet-base; N = 20). A lemma is kept when SemCor tagged its senses N
times or more (WordNet's cntlist.rev: about 2,000 lemmas at 20, the words everyday and news English uses most);
for each part of speech it has, the line holds the one-word lemmas of its first sense and, for a noun or a verb, the
nouns and verbs derived from it (decision: decide), as sources/wordnet.py reads them from the full database; the
irregular forms of kept lemmas (went -> go) follow from the exception lists.
Deterministic: the same database gives the same file.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sources.wordnet import PARTS, TABLE, WordNet  # noqa: E402

NOTICE = """\
# WordNet's commonest words with the words of their commonest sense (for a noun or a verb, also the nouns and
# verbs WordNet derives from it), one part of speech a line ("<part> <lemma> <word> ..."; "<part>! <form> <lemma>"
# for an irregular form), made by
# benchmarks/make_rewordings.py from WordNet 3.0 (lemmas SemCor tagged {count}+ times). The check reads it only where
# the system has no WordNet database (sources/wordnet.py).
#
# WordNet 3.0 Copyright 2006 by Princeton University. All rights reserved.
# Permission to use, copy, modify and distribute this software and database and its documentation for any purpose
# and without fee or royalty is hereby granted, provided that you agree to comply with the following copyright
# notice and statements, including the disclaimer, and that the same appear on ALL copies of the software,
# database and documentation, including modifications that you make for internal use or for distribution.
# THIS SOFTWARE AND DATABASE IS PROVIDED "AS IS" AND PRINCETON UNIVERSITY MAKES NO REPRESENTATIONS OR WARRANTIES,
# EXPRESS OR IMPLIED. BY WAY OF EXAMPLE, BUT NOT LIMITATION, PRINCETON UNIVERSITY MAKES NO REPRESENTATIONS OR
# WARRANTIES OF MERCHANTABILITY OR FITNESS FOR ANY PARTICULAR PURPOSE OR THAT THE USE OF THE LICENSED SOFTWARE,
# DATABASE OR DOCUMENTATION WILL NOT INFRINGE ANY THIRD PARTY PATENTS, COPYRIGHTS, TRADEMARKS OR OTHER RIGHTS.
# The name of Princeton University or Princeton may not be used in advertising or publicity pertaining to
# distribution of the software and/or database. Title to copyright in this software, database and any associated
# documentation shall at all times remain with Princeton University and LICENSEE agrees to preserve same.
"""


def tag_counts(folder: Path) -> Counter[str]:
    """How many times SemCor tagged each lemma, over all its senses (cntlist.rev: sense key, sense, count)."""
    counts: Counter[str] = Counter()
    for line in (folder / "cntlist.rev").read_text(encoding="latin-1").splitlines():
        key, _, count = line.split()
        counts[key.split("%")[0]] += int(count)
    return counts


def table(folder: Path, min_count: int) -> list[str]:
    """The table's lines: each kept lemma's first sense per part of speech, then the irregular forms."""
    wordnet, counts = WordNet(folder), tag_counts(folder)
    kept = sorted(w for w, n in counts.items() if n >= min_count and w.isalpha())
    lines = []
    for lemma in kept:
        for part in PARTS:
            words = sorted(set(wordnet.first_sense(part, lemma)) - {lemma})
            if words:
                lines.append(f"{part} {lemma} {' '.join(words)}")
    wanted = set(kept)
    for part in PARTS:
        path = folder / f"{part}.exc"
        pairs = (line.split()[:2] for line in path.read_text(encoding="latin-1").splitlines()) if path.is_file() else ()
        lines += [f"{part}! {form} {lemma}" for form, lemma in pairs if lemma in wanted and form.isalpha()]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, nargs="?", default=Path("/usr/share/wordnet"))
    parser.add_argument("--min-count", type=int, default=20)
    args = parser.parse_args(argv)
    lines = table(args.folder, args.min_count)
    TABLE.write_text(NOTICE.format(count=args.min_count) + "\n".join(lines) + "\n", encoding="utf-8")
    print(f"{TABLE}: {len(lines)} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
