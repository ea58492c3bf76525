"""`main.py docs index DIR` and `main.py docs search DIR "QUERY"`: a document folder's index, by hand."""

from __future__ import annotations

import argparse
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
from tools.docsearch import folder_index

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
    search.add_argument("query", help="words the passages would contain")
    search.add_argument("-k", type=int, default=8, help="how many passages (default 8)")
    return p


def main(argv: list[str]) -> int:
    """Run `docs index` or `docs search`; 0 on success (ConfigError for a folder that is not one, a usage error
    for a query with no word to search for)."""
    p = parser()
    args = p.parse_args(argv)
    if args.command == "search" and not fts_query(args.query):
        p.error(NO_WORDS if args.query.strip() else "the query is empty: give the words the passages would contain")
    settings = load_settings({"runs_dir": args.runs_dir})
    _check_folder(args.folder, args.command)
    index = folder_index(args.folder, settings)
    if args.command == "index":
        with progress_bar() as bar:
            report = index.update(bar)
        print("\n".join(report_lines(index, report)))
        return 0
    with progress_bar() as bar:  # a folder never indexed is indexed first
        index.update(bar)
    hits = index.search(args.query, max(args.k, 1))
    index.close()
    if not hits:
        print(f"no passage holds these words: {terminal_safe(args.query, one_line=True)}")
    redact = SecretRedactor.of(settings)  # a file named with a key (the passages were redacted when indexed)
    for n, hit in enumerate(hits, start=1):
        print(f"{n}. {terminal_safe(redact(hit.place), one_line=True)}\n"
              f"   {terminal_safe(snippet(hit.passage, args.query))}")
    return 0


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


