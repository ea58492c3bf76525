"""`main.py docs index DIR` and `main.py docs search DIR "QUERY"`: a document folder's index, by hand."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from config import flag_variables, load_settings
from core.cli import ArgumentParser
from core.errors import ConfigError
from core.secrets import SecretRedactor
from core.text import human_size, terminal_safe
from docindex import DocIndex, IndexReport
from docindex.passages import NO_WORDS, fts_query, snippet
from docindex.store import Progress
from docindex.vectors import VectorReport, Vectors
from tools.docsearch import find, folder_index, folder_vectors

SHOWN_NAMES = 5  # skipped files named per reason; the rest counted
BAR_AFTER = 20  # files to read before a progress bar is worth showing


def parser() -> argparse.ArgumentParser:
    """`docs index DIR` and `docs search DIR QUERY [-k N]`, each with --runs-dir (where the index is kept)."""
    p = ArgumentParser(prog="main.py docs", description="Index a folder of your documents, or search it as "
                       "search_docs does (--docs DIR gives the agent the same search).")
    p.variables = flag_variables()
    sub = p.add_subparsers(dest="command", required=True)
    index = sub.add_parser("index", help="build or update the folder's index; print what it holds and skipped")
    search = sub.add_parser("search", help="the best passages for a query, with file, page and a snippet")
    for q in (index, search):
        q.add_argument("folder", type=Path, help="the document folder")
        q.add_argument("--runs-dir", type=Path, metavar="DIR",
                       help="the run store; the index is kept in its docindex/ folder (default runs/)")
        q.add_argument("--embeddings", metavar="MODEL", help="an embeddings model (openai:text-embedding-3-small, "
                       "ollama:nomic-embed-text, a models.toml alias): passages get vectors, search finds them by "
                       "meaning too (AGENT_EMBEDDINGS_MODEL)")
    search.add_argument("query", help="words the passages would contain")
    search.add_argument("-k", type=int, default=8, help="how many passages (default 8)")
    search.add_argument("--mode", choices=["bm25", "hybrid"], help="bm25: by words alone; hybrid: words and "
                        "meaning fused (the default with an embeddings model, which it needs)")
    search.add_argument("--json", action="store_true", help="one JSON object per passage and line on stdout: "
                        "file, page or unit, score (higher is better), text")
    return p


def main(argv: list[str]) -> int:
    """Run `docs index` or `docs search`; 0 on success (ConfigError for a folder that is not one, a usage error
    for a query with no word to search for)."""
    p = parser()
    args = p.parse_args(argv)
    if args.command == "search" and not fts_query(args.query):
        p.error(NO_WORDS if args.query.strip() else "the query is empty: give the words the passages would contain")
    settings = load_settings({"runs_dir": args.runs_dir, "embeddings_model": args.embeddings})
    if args.command == "search" and args.mode == "hybrid" and not settings.embeddings_model:
        p.error("--mode hybrid needs an embeddings model: --embeddings MODEL or AGENT_EMBEDDINGS_MODEL")
    _check_folder(args.folder, args.command)
    index = folder_index(args.folder, settings)
    vectors = folder_vectors(index, settings)
    try:
        with progress_bar() as bar:  # a folder never indexed is indexed first
            report = index.update(bar)
            made = vectors.sync(report, bar, settings.max_run_cost or settings.max_cost) if vectors else None
        if made is not None and made.failed:
            print(terminal_safe(made.failed, one_line=True), file=sys.stderr)
        if args.command == "index":
            print("\n".join(report_lines(index, report) + (vector_lines(made, vectors) if made and vectors else [])))
            return 0
        hits = find(index, None if args.mode == "bm25" else vectors, args.query, max(args.k, 1))
        if vectors is not None and vectors.failed and not (made and made.failed):
            print(terminal_safe(vectors.failed, one_line=True), file=sys.stderr)
    finally:
        index.close()
    if args.json:
        for hit in hits:
            print(json.dumps({"file": hit.path, "page": hit.label, "score": -hit.score, "text": hit.passage}))
        return 0
    if not hits:
        print(f"no passage holds these words: {terminal_safe(args.query, one_line=True)}")
    redact = SecretRedactor.of(settings)  # a file named with a key (the passages were redacted when indexed)
    for n, hit in enumerate(hits, start=1):
        print(f"{n}. {terminal_safe(redact(hit.place), one_line=True)}\n"
              f"   {terminal_safe(snippet(hit.passage, args.query))}")
    return 0


def vector_lines(made: VectorReport, vectors: Vectors) -> list[str]:
    """What `docs index` prints of the vectors: how many passages have one, of how many, by which model; what this
    update embedded (requests, tokens, cost); which passages still lack one and when they get it."""
    spend = getattr(vectors.embedder, "spend", None)
    cost = "n/a" if spend is None or spend.cost is None else f"${spend.cost:.4f}"
    lines = [f"  vectors ({terminal_safe(made.model, one_line=True)}): {made.have:,} of {made.total:,} passages"
             + (f"; embedded {made.embedded:,} now in {made.seconds:.1f} s ({spend.requests:,} requests, "
                f"{spend.tokens:,} tokens, {cost})" if spend is not None and spend.requests else "")]
    if made.note:
        lines.append(f"  {terminal_safe(made.note, one_line=True)}")
    if made.have < made.total:
        lines.append(f"  {made.total - made.have:,} passages lack a vector (found by their words alone until the "
                     f"next `docs index` or search embeds them): {_names(made.lacking)}")
    return lines


def _check_folder(folder: Path, command: str) -> None:
    """ConfigError unless `folder` is one: a file is answered with the command that takes its folder."""
    shown = terminal_safe(str(folder), one_line=True)
    if folder.is_file():
        parent = terminal_safe(str(folder.resolve().parent), one_line=True)
        raise ConfigError(f"{shown} is a file, not a folder: `docs {command}` takes the folder that holds your "
                          f"documents (python main.py docs {command} {parent}"
                          f"{' QUERY' if command == 'search' else ''}); to ask about one file, use "
                          f"python main.py ask QUESTION --file {shown}", "docs_dirs")
    if not folder.is_dir():
        raise ConfigError(f"{shown}: no such folder", "docs_dirs")


def report_lines(index: DocIndex, report: IndexReport) -> list[str]:
    """What `docs index` prints: the folder, its files (read and unreadable), pages, passages, what changed, what
    could not be read and what was skipped, and why."""
    unreadable = sum(len(v) for v in report.unreadable.values())
    held = f"{report.files:,} files" + (f" ({report.files - unreadable:,} read, {unreadable:,} unreadable)"
                                        if unreadable else "")
    lines = [f"{terminal_safe(str(index.folder), one_line=True)}: {held}, {report.pages:,} pages "
             f"or sections, {report.passages:,} passages ({report.seconds:.1f} s)",
             f"  new {len(report.new):,}, changed {len(report.changed):,}, removed {len(report.removed):,}, "
             f"unchanged {report.unchanged:,}" + (f", not read yet {report.pending:,}" if report.pending else "")]
    for what, names in (("changed", report.changed), ("removed", report.removed)):
        if names:
            lines.append(f"  {what}: {_names(names)}")
    for title, groups in (("unreadable", report.unreadable), ("skipped", report.skipped)):
        count = sum(len(v) for v in groups.values())
        if count or title == "skipped":
            lines.append(f"  {title} {count:,}" + (":" if count else ""))
        for reason, names in sorted(groups.items()):
            lines.append(f"    {terminal_safe(reason, one_line=True)} ({len(names):,}): {_names(names)}")
    lines.append(f"  index: {terminal_safe(str(index.db), one_line=True)} ({human_size(index.size_bytes())}); "
                 "dotfiles and dot-folders are never listed")
    return lines


def _names(names: list[str]) -> str:
    shown = ", ".join(terminal_safe(n, one_line=True) for n in names[:SHOWN_NAMES])
    return shown + (f" and {len(names) - SHOWN_NAMES:,} more" if len(names) > SHOWN_NAMES else "")


@contextmanager
def progress_bar() -> Iterator[Progress | None]:
    """A rich progress bar on stderr while many files are read (on a terminal only); None elsewhere."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
    from rich.progress import Progress as Bar

    with Bar(TextColumn("indexing"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
             TextColumn("{task.description}"), console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("", total=None, visible=False)

        def step(done: int, total: int, name: str) -> None:
            if total >= BAR_AFTER:
                bar.update(task, completed=done, total=total, visible=True,
                           description=terminal_safe(name, one_line=True)[-40:])

        yield step


