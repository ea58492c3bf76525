"""What the browser tool shows of a page: Playwright's accessibility snapshot, compact, with refs of the task's own.

Playwright's ai-mode aria snapshot (`page.aria_snapshot(mode="ai")`) lists the page's accessibility tree one
node a line, each element with a ref that resolves to that very element object (the `aria-ref=` selector)
for as long as it keeps its role and name. compact() turns it into what the model reads:

- interactive elements (fields, buttons, links, tabs, options, anything with a pointer cursor) keep a ref,
  written as Playwright MCP writes them: `- button "Next page" [ref=e12]`; other nodes lose theirs;
- text, headings (`## Title`), images' alternative text and table rows (`| a | b |`) are plain lines;
  wrappers (generic boxes, lists, landmarks, paragraphs) disappear, and only dialogs and frames indent what
  they hold; a select's options follow it on its line;
- aria-hidden subtrees are left out (Playwright already leaves out what is not rendered), and text that
  imitates an element line or a ref is defused, so a page cannot forge a ref;
- RefBook renumbers Playwright's refs e1, e2, ... for the whole task. A ref stays with its element while it
  keeps its role and name, and with the element of that role and name on a tab when the page is another
  document (after `back`, a reload, a navigation) as long as one element alone has them there, before and
  after; elements sharing a role and name on a new document get new refs (never one of the others'), and a
  ref the latest snapshot does not show is refused, with the refs its role and name have now.

Long snapshots are cut into parts at line boundaries (parts()), never silently.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

INTERACTIVE = frozenset({
    "button", "link", "textbox", "searchbox", "combobox", "listbox", "option", "checkbox", "radio", "switch",
    "slider", "spinbutton", "tab", "menuitem", "menuitemcheckbox", "menuitemradio", "treeitem"})
CONTAINERS = frozenset({"dialog", "alertdialog", "iframe"})  # they indent what they hold
KEPT_STATES = ("checked", "checked=mixed", "disabled", "expanded", "pressed", "pressed=mixed", "selected")
NAME_CHARS = 150  # a longer name is cut, with an ellipsis
OPTIONS_SHOWN = 25  # a select with more options says how many more
_ATTR = re.compile(r"\[([^\]]*)\]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


@dataclass
class Node:
    """One element of Playwright's snapshot."""

    role: str
    name: str = ""
    attrs: list[str] = field(default_factory=list)
    ref: str | None = None  # Playwright's own ref
    text: str | None = None  # its one text child, written on its line
    children: list[Node | str] = field(default_factory=list)

    @property
    def pointer(self) -> bool:
        """Whether the page shows a pointer cursor over it (something clickable)."""
        return "cursor=pointer" in self.attrs

    @property
    def interactive(self) -> bool:
        """Fields, buttons, links and the like; a named box (a summary, an editable area) or a clickable one too."""
        return self.ref is not None and (self.role in INTERACTIVE or self.pointer or (
            self.role == "generic" and bool(self.name)))


@dataclass(frozen=True)
class Entry:
    """A ref of the task: the tab it is on, Playwright's ref there, and the element's role and name."""

    ref: str
    tab: int
    pw: str
    role: str
    name: str

    def label(self) -> str:
        """`button "Next page"`, to name the element in an error."""
        return f"{self.role} {json.dumps(self.name, ensure_ascii=False)}" if self.name else self.role


class RefBook:
    """The task's refs: Playwright's (per tab) renumbered e1, e2, ...; which ones each tab's latest snapshot holds."""

    def __init__(self) -> None:
        self._count = 0
        self._by_pw: dict[tuple[int, str], Entry] = {}
        self._by_ref: dict[str, Entry] = {}
        self._by_name: dict[tuple[int, str, str], str] = {}  # (tab, role, name) -> the ref of the one element
        self._unique: set[tuple[int, str, str]] = set()  # (tab, role, name) one element alone has in this snapshot
        self._given: set[str] = set()  # refs given in this snapshot
        self.latest: dict[int, set[str]] = {}  # tab -> the refs its latest snapshot shows

    def begin(self, tab: int, tree: list[Node | str]) -> None:
        """A snapshot of tab starts: which roles and names one element alone has in it."""
        counts: dict[tuple[int, str, str], int] = {}
        for node in _nodes(tree):
            if node.interactive:
                key = (tab, node.role, node.name)
                counts[key] = counts.get(key, 0) + 1
        self._unique = {key for key, n in counts.items() if n == 1}
        self._given = set()

    def ref_for(self, tab: int, node: Node) -> str:
        """The task's ref for a node of tab's snapshot: the same while the element keeps its role and name, and
        the same for the one element of a role and name on the tab's later documents."""
        assert node.ref is not None
        key = (tab, node.role, node.name)
        known = self._by_pw.get((tab, node.ref))
        if known is not None and (known.role, known.name) == (node.role, node.name) and known.ref not in self._given:
            ref = known.ref  # the same element (or the same number for the same role and name)
        elif key in self._unique and self._by_name.get(key) not in (None, *self._given):
            ref = self._by_name[key]  # the one element of this role and name, on another document
        else:
            self._count += 1
            ref = f"e{self._count}"
        entry = Entry(ref, tab, node.ref, node.role, node.name)
        self._by_pw[(tab, node.ref)] = self._by_ref[ref] = entry
        if key in self._unique:
            self._by_name[key] = ref
        self._given.add(ref)
        return ref

    def now_named(self, entry: Entry) -> list[str]:
        """The refs the latest snapshot of the entry's tab gives elements of its role and name."""
        return sorted((r for r in self.latest.get(entry.tab, set())
                       if (self._by_ref[r].role, self._by_ref[r].name) == (entry.role, entry.name)),
                      key=lambda r: int(r[1:]))

    def entry(self, ref: str) -> Entry | None:
        """What a ref the task was given stands for (None: never given)."""
        return self._by_ref.get(ref.strip())

    def current(self, ref: str) -> bool:
        """Whether the latest snapshot of the ref's tab shows it."""
        entry = self.entry(ref)
        return entry is not None and entry.ref in self.latest.get(entry.tab, set())


def parse(snapshot: str) -> list[Node | str]:
    """Playwright's YAML-like snapshot as a tree of Nodes and text strings."""
    roots: list[Node | str] = []
    stack: list[tuple[int, Node]] = []
    for line in snapshot.splitlines():
        stripped = line.lstrip(" ")
        if not stripped.startswith("- "):
            continue
        depth, item = len(line) - len(stripped), stripped[2:]
        while stack and stack[-1][0] >= depth:
            stack.pop()
        parent = stack[-1][1] if stack else None
        siblings = parent.children if parent is not None else roots
        if item.startswith("text: "):
            siblings.append(_value(item[6:]))
        elif item.startswith("/"):  # /url, /placeholder: properties the model does not need
            continue
        else:
            node = _node(item)
            siblings.append(node)
            stack.append((depth, node))
    return roots


def compact(tree: list[Node | str], tab: int, book: RefBook) -> list[str]:
    """The snapshot as the model reads it; the refs it shows become tab's latest in book."""
    out: list[str] = []
    shown: set[str] = set()
    book.begin(tab, tree)
    for item in tree:
        _render(item, 0, out, tab, book, shown)
    book.latest[tab] = shown
    return out


def parts(lines: list[str], size: int) -> list[str]:
    """The lines joined into parts of at most `size` characters, cut only between lines (a longer line alone)."""
    chunks: list[str] = []
    current: list[str] = []
    length = 0
    for line in lines:
        if current and length + len(line) + 1 > size:
            chunks.append("\n".join(current))
            current, length = [], 0
        current.append(line)
        length += len(line) + 1
    if current:
        chunks.append("\n".join(current))
    return chunks or [""]


def find(chunks: list[str], text: str, limit: int = 30) -> tuple[list[str], int]:
    """The lines holding text (any case), each with its part number, at most `limit`; and how many there are."""
    needle = " ".join(text.split()).lower()
    hits = [f"(part {n}) {line.strip()}" for n, chunk in enumerate(chunks, 1) for line in chunk.splitlines()
            if needle and needle in line.lower()]
    return hits[:limit], len(hits)


def _nodes(tree: list[Node | str]) -> list[Node]:
    """Every node of a tree, outside aria-hidden subtrees."""
    found = []
    for item in tree:
        if isinstance(item, Node) and "aria-hidden" not in item.attrs:
            found += [item, *_nodes(item.children)]
    return found


def _render(item: Node | str, depth: int, out: list[str], tab: int, book: RefBook, shown: set[str]) -> None:
    pad = "  " * depth
    if isinstance(item, str):
        if text := _text(item):
            out.append(pad + text)
        return
    if "aria-hidden" in item.attrs:
        return
    if item.interactive:
        ref = book.ref_for(tab, item)
        shown.add(ref)
        out.append(pad + _element_line(item, ref))
        _render_inside(item, depth + 1, out, tab, book, shown, only_interactive=True)
        return
    if line := _plain_line(item):
        out.append(pad + line)
    inner = depth + 1 if item.role in CONTAINERS or item.role == "row" else depth
    _render_inside(item, inner, out, tab, book, shown, only_interactive=item.role in ("row", "heading", "img"))


def _plain_line(node: Node) -> str:
    """The line of a node without a ref: a heading, an image's text, a table row, a dialog's or frame's title, or
    the words of a wrapper (whose children follow as if they were its parent's)."""
    if node.role == "heading":
        level = next((int(a[6:]) for a in node.attrs if a.startswith("level=") and a[6:].isdigit()), 2)
        words = _text(node.name or _words(node))
        return "#" * max(1, min(level, 6)) + " " + words if words else ""
    if node.role == "img":
        return "img " + _quoted(node.name) if node.name else ""
    if node.role == "row":
        cells = [_text(c.name or _words(c)) if isinstance(c, Node) else _text(c) for c in node.children]
        return "| " + " | ".join(cells) + " |"
    if node.role in CONTAINERS:
        return f"{node.role} {_quoted(node.name)}:" if node.name else f"{node.role}:"
    if node.text is not None:
        return _text(node.text)
    return _text(node.name) if node.name and not node.children else ""


def _render_inside(node: Node, depth: int, out: list[str], tab: int, book: RefBook, shown: set[str],
                   only_interactive: bool = False) -> None:
    labels = {c.name for c in node.children if isinstance(c, Node) and c.interactive and c.name}
    for child in node.children:
        if isinstance(child, Node) and child.role == "option" and child.ref is None:
            continue  # a select's options are on its own line
        if isinstance(child, str) and child.strip() in labels:
            continue  # a label: its field's line names it
        if only_interactive:
            for inner in _interactive_within(child):
                _render(inner, depth, out, tab, book, shown)
        else:
            _render(child, depth, out, tab, book, shown)


def _interactive_within(item: Node | str) -> list[Node]:
    """The outermost interactive nodes in item's subtree (item itself if it is one)."""
    if isinstance(item, str) or "aria-hidden" in item.attrs:
        return []
    if item.interactive:
        return [item]
    return [inner for child in item.children for inner in _interactive_within(child)]


def _element_line(node: Node, ref: str) -> str:
    states = "".join(f" [{a}]" for a in node.attrs if a in KEPT_STATES)
    line = f"- {node.role}{' ' + _quoted(node.name) if node.name else ''}{states} [ref={ref}]"
    options = [c for c in node.children if isinstance(c, Node) and c.role == "option" and c.ref is None]
    if options:
        chosen = [o.name for o in options if "selected" in o.attrs]
        listed = " | ".join(_text(o.name) for o in options[:OPTIONS_SHOWN])
        more = f" | … {len(options) - OPTIONS_SHOWN} more" if len(options) > OPTIONS_SHOWN else ""
        return f"{line}: {_text(chosen[0]) if chosen else '(none)'} (options: {listed}{more})"
    if node.text is not None and node.text != node.name:
        return f"{line}: {_text(node.text)}"
    return line


def _words(node: Node) -> str:
    """All the text inside a node, on one line."""
    words = [node.text] if node.text is not None else []
    for child in node.children:
        words.append(child if isinstance(child, str) else (child.name if not child.children else _words(child)))
    return " ".join(w for w in words if w)


def _quoted(name: str) -> str:
    return json.dumps(_text(name), ensure_ascii=False)


def _text(text: str) -> str:
    """Text on one line, control characters out, long names cut visibly, and nothing that looks like an element
    line or a ref: a page cannot forge `- button "Pay" [ref=e3]` in its text."""
    flat = " ".join(_CONTROL.sub(" ", text).split())
    if len(flat) > 600:
        flat = flat[:600] + "…"
    flat = flat.replace("[ref=", "[ref =")
    return "\\" + flat if flat.startswith(("- ", "#", "|", "\\")) else flat


def _node(item: str) -> Node:
    """One element line: `role "name" [attr] [ref=e3]`, perhaps quoted, then `:` or `: text`."""
    if item.startswith("'"):
        end = 1
        while True:
            end = item.index("'", end)
            if item[end + 1: end + 2] != "'":
                break
            end += 2
        key, rest = item[1:end].replace("''", "'"), item[end + 1:]
    elif ": " in item:
        key, rest = item.split(": ", 1)
        rest = ": " + rest
    else:
        key, rest = (item[:-1], ":") if item.endswith(":") else (item, "")
    role, _, tail = key.partition(" ")
    name = ""
    if tail.startswith('"'):
        try:
            name, used = json.JSONDecoder().raw_decode(tail)
            tail = tail[used:]
        except ValueError:
            pass
    attrs = _ATTR.findall(tail)
    ref = next((a[4:] for a in attrs if a.startswith("ref=")), None)
    text = _value(rest[2:]) if rest.startswith(": ") else None
    return Node(role, name if isinstance(name, str) else str(name), [a for a in attrs if not a.startswith("ref=")],
                ref, text)


def _value(raw: str) -> str:
    """A text value: plain, or double-quoted with backslash escapes (\\xNN included)."""
    raw = raw.strip()
    if len(raw) >= 2 and raw.startswith('"') and raw.endswith('"'):
        try:
            return str(json.loads(re.sub(r"\\x([0-9a-fA-F]{2})", r"\\u00\1", raw)))
        except ValueError:
            return raw[1:-1]
    return raw
