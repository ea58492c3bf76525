"""The browser tool's actions on a task's page: open, click, type, select, check, press, scroll, back, read.

perform() runs one action on the browser's loop and returns what the observation shows. An action on an
element names it by a ref of the latest snapshot: the page is snapshotted again first, and a ref that is
not in that snapshot any more (the page changed, the element went, or its role or name changed) is refused
with the new snapshot, never used on another element; a ref of another tab says which. Before a click,
the element's centre is looked at: when something else covers it (a cookie banner, a modal), the error
names the cover and lists what it holds, with refs, so that the model can dismiss it. Typing into a
password or payment-card field is refused, and so are keys pressed while one has the focus.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from tools.documents.confined import page_reading
from tools.documents.errors import ConversionError
from tools.web.browser.headless import first_line
from tools.web.browser.hidden import marked_hidden, visible_text
from tools.web.browser.page import VIEWPORT, TaskBrowser
from tools.web.browser.snapshot import Entry, compact, find, parse, parts
from tools.web.errors import BlockedURLError

SNAPSHOT_CHARS = 8_000  # one part of a snapshot
READ_CHARS = 10_000  # one part of a page's text
CLICK_WAIT = 10.0  # longest wait for an element to be clickable
SCROLL = 800  # pixels a scroll moves

SENSITIVE_JS = """(e) => {
  const type = (e.getAttribute('type') || '').toLowerCase();
  const auto = (e.getAttribute('autocomplete') || '').toLowerCase();
  const words = [e.name, e.id, e.getAttribute('aria-label'), e.getAttribute('placeholder'),
                 ...(e.labels ? [...e.labels].map(l => l.textContent) : [])].join(' ').toLowerCase();
  if (type === 'password' || /\\b(current-password|new-password|one-time-code)\\b/.test(auto)
      || /passwor|passwort|mot de passe|\\bpin\\b/.test(words)) return 'a password field';
  if (/(^|\\s)cc-/.test(auto)
      || /card.?(number|num|no\\b)|credit.?card|\\bcvc|\\bcvv|\\bcsc\\b|security.?code|expir|\\biban\\b/.test(words))
    return 'a payment card field';
  return null;
}"""
FOCUSED_JS = "() => { let a = document.activeElement; while (a && a.shadowRoot && a.shadowRoot.activeElement) " \
             "a = a.shadowRoot.activeElement; return document.hasFocus() && a && a !== document.body ? (" \
             + SENSITIVE_JS + ")(a) : null; }"
COVER_JS = """(e) => {
  const r = e.getBoundingClientRect();
  if (!r.width || !r.height || r.bottom < 0 || r.right < 0 || r.top > innerHeight || r.left > innerWidth) return null;
  const root = e.getRootNode().elementFromPoint ? e.getRootNode() : document;
  const top = root.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
  if (!top || top === e || e.contains(top) || top.contains(e)) return null;
  if (e.labels && [...e.labels].some(l => l.contains(top))) return null;
  let cover = top;
  while (cover.parentElement && cover.parentElement !== document.body && !cover.parentElement.contains(e))
    cover = cover.parentElement;
  cover.setAttribute('data-agent-cover', '');
  const id = cover.id ? '#' + cover.id : (cover.classList[0] ? '.' + cover.classList[0] : '');
  return '<' + cover.tagName.toLowerCase() + id + '>';
}"""
UNCOVER_JS = "() => document.querySelectorAll('[data-agent-cover]').forEach(e => e.removeAttribute('data-agent-cover'))"
VISIBLE_HTML_JS = """() => {
  const clone = document.documentElement.cloneNode(true);
  const live = document.body ? document.body.getElementsByTagName('*') : [];
  const copies = clone.querySelector('body') ? clone.querySelector('body').getElementsByTagName('*') : [];
  const gone = [];
  for (let i = 0; i < live.length && i < copies.length; i++) {
    const el = live[i];
    if (el.tagName === 'BR' || el.tagName === 'WBR') continue;
    if (!el.checkVisibility({visibilityProperty: true, opacityProperty: true})
        && getComputedStyle(el).display !== 'contents') gone.push(copies[i]);
  }
  gone.forEach(c => c.remove());
  clone.querySelectorAll('[data-agent-hidden]').forEach(c => c.remove());
  return clone.outerHTML;
}"""
SELECT_OPTIONS_JS = "(e) => e.tagName === 'SELECT' ? [...e.options].map(o => [o.label.trim(), o.value]) : null"


class ActionError(Exception):
    """The action cannot be done as asked; the message is for the model, `lines` a new snapshot to show with it."""

    def __init__(self, message: str, lines: list[str] | None = None) -> None:
        super().__init__(message)
        self.lines = lines


@dataclass
class Outcome:
    """What one action gives the observation: what was done, the page's state (or text), and its text as a source."""

    done: str
    body: str
    source: str | None = None  # the page text this observation read (None: it read nothing new)


async def perform(tb: TaskBrowser, args: dict[str, Any], seconds: float) -> Outcome:
    """Run one action (already checked against the tool's schema); ActionError when it cannot be done."""
    tb.begin()
    action = str(args["action"])
    if action not in ("open", "tabs") and tb.page.url == "about:blank" and len(tb.tabs) == 1:
        raise ActionError('no page is open yet: start with {"action": "open", "url": "https://..."}')
    done = await _ACTIONS[action](tb, args, seconds)
    if action in ("find", "read", "tabs"):
        return done  # type: ignore[return-value]
    if action == "snapshot":  # nothing was done to the page: no wait for it
        return await view(tb, str(done), int(args.get("part") or 1))
    await tb.settle(seconds)
    return await view(tb, str(done), int(args.get("part") or 1))


async def view(tb: TaskBrowser, done: str, part: int = 1) -> Outcome:
    """The current tab's snapshot, part `part`, under what was done."""
    chunks = parts(await tb.snapshot(), SNAPSHOT_CHARS)
    return Outcome(done, _part(chunks, part, "snapshot"), chunks[min(part, len(chunks)) - 1])


async def _open(tb: TaskBrowser, args: dict[str, Any], seconds: float) -> str:
    url = _required(args, "url").strip()
    if urlsplit(url).scheme.lower() not in ("http", "https"):
        raise BlockedURLError(f"only http:// and https:// pages can be opened (not {url[:60]!r}): no file:, "
                              "javascript: or data: URLs", url)
    await tb.new_tab_if_closed()
    tb.url = url
    for attempt in (1, 2):
        try:
            await tb.page.goto(url, wait_until="domcontentloaded", timeout=seconds * 1000)
            break
        except Exception as exc:  # noqa: BLE001 - Playwright's error: said in the renderer's words below
            if "Download is starting" in str(exc):  # a file: the download listener saves it
                break
            if "interrupted by another navigation" in str(exc) and tb.job.refusal is None:
                with contextlib.suppress(Exception):  # an earlier error page committing, or ours restarted
                    await tb.page.wait_for_load_state("load", timeout=seconds * 1000)
                if tb.page.url == url:
                    break
                if attempt == 1:
                    continue
            with contextlib.suppress(Exception):  # Chromium's error page for a refusal: let it commit first
                await tb.page.wait_for_url(lambda now: now.startswith("chrome-error:"), timeout=2000)
            raise tb.browser.failure_of(exc, url, tb.job, tb.started) from None
    return f"Opened {url}."


async def _click(tb: TaskBrowser, args: dict[str, Any], seconds: float) -> str:
    locator, entry = await resolve(tb, _required(args, "ref"))
    await _uncovered(tb, locator, entry, seconds)
    await _do(locator.click(timeout=min(seconds, CLICK_WAIT) * 1000), tb, locator, entry, "click")
    return f"Clicked {entry.ref} ({entry.label()})."


async def _type(tb: TaskBrowser, args: dict[str, Any], seconds: float) -> str:
    locator, entry = await resolve(tb, _required(args, "ref"))
    await _not_sensitive(locator, entry, "type into")
    text = str(args.get("text", ""))
    await _do(locator.fill(text, timeout=min(seconds, CLICK_WAIT) * 1000), tb, locator, entry, "type into")
    if args.get("submit"):
        await _do(locator.press("Enter"), tb, locator, entry, "press Enter in")
    return f"Typed {json.dumps(text, ensure_ascii=False)} into {entry.ref} ({entry.label()})" + (
        " and pressed Enter." if args.get("submit") else ".")


async def _select(tb: TaskBrowser, args: dict[str, Any], seconds: float) -> str:
    locator, entry = await resolve(tb, _required(args, "ref"))
    await _not_sensitive(locator, entry, "choose in")
    wanted = _required(args, "value").strip()
    options = await locator.evaluate(SELECT_OPTIONS_JS)
    if options is None:
        raise ActionError(f"{entry.ref} ({entry.label()}) is not a drop-down list (<select>): click it, then click "
                          "the option")
    value = next((v for label, v in options if label.lower() == wanted.lower()), None)
    value = value if value is not None else next((v for _, v in options if v == wanted), None)
    if value is None:
        listed = ", ".join(json.dumps(label, ensure_ascii=False) for label, _ in options[:40])
        raise ActionError(f"{entry.ref} ({entry.label()}) has no option {json.dumps(wanted)}; its options: {listed}")
    await _do(locator.select_option(value=value, timeout=min(seconds, CLICK_WAIT) * 1000), tb, locator, entry,
              "choose in")
    return f"Chose {json.dumps(wanted, ensure_ascii=False)} in {entry.ref} ({entry.label()})."


async def _check(tb: TaskBrowser, args: dict[str, Any], seconds: float) -> str:
    locator, entry = await resolve(tb, _required(args, "ref"))
    checked = args.get("checked", True) is not False
    await _uncovered(tb, locator, entry, seconds)
    await _do(locator.set_checked(checked, timeout=min(seconds, CLICK_WAIT) * 1000), tb, locator, entry,
              "check" if checked else "uncheck")
    return f"{'Checked' if checked else 'Unchecked'} {entry.ref} ({entry.label()})."


async def _press(tb: TaskBrowser, args: dict[str, Any], seconds: float) -> str:
    key = _required(args, "key").strip()
    if len(key.split("+")[-1]) == 1:  # a character: it would be typed into whatever has the focus
        for frame in tb.page.frames:
            field = None
            with contextlib.suppress(Exception):  # a frame that went away meanwhile
                field = await frame.evaluate(FOCUSED_JS)
            if field:
                raise ActionError(f"the focus is in {field}; the browser tool types nothing there")
    try:
        await tb.page.keyboard.press(key)
    except Exception as exc:  # noqa: BLE001 - an unknown key name: Playwright says which
        raise ActionError(f"could not press {key!r}: {first_line(exc)} (keys are named like Enter, Escape, Tab, "
                          "ArrowDown, PageDown, Control+A)") from None
    return f"Pressed {key}."


async def _scroll(tb: TaskBrowser, args: dict[str, Any], seconds: float) -> str:
    direction = str(args.get("direction") or "down")
    if args.get("ref"):
        locator, entry = await resolve(tb, str(args["ref"]))
        await _do(locator.scroll_into_view_if_needed(timeout=min(seconds, CLICK_WAIT) * 1000), tb, locator, entry,
                  "scroll to")
        return f"Scrolled to {entry.ref} ({entry.label()})."
    await tb.page.mouse.move(VIEWPORT["width"] / 2, VIEWPORT["height"] / 2)  # the wheel scrolls what is under it
    await tb.page.mouse.wheel(0, SCROLL if direction == "down" else -SCROLL)
    await asyncio.sleep(0.3)  # scroll handlers start loading what comes into view
    return f"Scrolled {direction}."


async def _back(tb: TaskBrowser, args: dict[str, Any], seconds: float) -> str:
    try:
        await tb.page.go_back(wait_until="domcontentloaded", timeout=seconds * 1000)
    except Exception as exc:  # noqa: BLE001 - Playwright's error, in the renderer's words
        raise tb.browser.failure_of(exc, tb.page.url, tb.job, tb.started) from None
    if tb.page.url == "about:blank":  # the blank page the tab started on is not a page to go back to
        with contextlib.suppress(Exception):
            await tb.page.go_forward(wait_until="domcontentloaded", timeout=seconds * 1000)
        raise ActionError("there is no earlier page in this tab")
    return "Went back."


async def _snapshot(tb: TaskBrowser, args: dict[str, Any], seconds: float) -> str:
    return "Snapshot."


async def _find(tb: TaskBrowser, args: dict[str, Any], seconds: float) -> Outcome:
    wanted = _required(args, "text")
    chunks = parts(await tb.snapshot(), SNAPSHOT_CHARS)
    hits, total = find(chunks, wanted)
    if not hits:
        return Outcome(f"Found no {json.dumps(wanted, ensure_ascii=False)} on this page.",
                       _part(chunks, 1, "snapshot"), chunks[0])
    more = f" (the first {len(hits)} shown)" if total > len(hits) else ""
    return Outcome(f"Found {json.dumps(wanted, ensure_ascii=False)} on {total} line(s) of the snapshot{more}:",
                   "\n".join(hits), "\n".join(hits))


async def _read(tb: TaskBrowser, args: dict[str, Any], seconds: float) -> Outcome:
    page = tb.page
    async with marked_hidden(page):  # what a person does not see is left out
        html = await page.evaluate(VISIBLE_HTML_JS)
    try:  # parsed in the converter's child, under its limits
        _, text = await asyncio.get_running_loop().run_in_executor(None, page_reading, html, page.url, tb.limits)
    except ConversionError:  # a page past a limit: its visible text, which the browser gives
        text = ""
    if len(text.strip()) < 200:  # no article here (a list, a form): the page's whole visible text
        text = await visible_text(page)
    chunks = parts(text.splitlines(), READ_CHARS)
    part = int(args.get("part") or 1)
    return Outcome("The page's text:", _part(chunks, part, "read"), chunks[min(part, len(chunks)) - 1])


async def _tabs(tb: TaskBrowser, args: dict[str, Any], seconds: float) -> Outcome:
    lines = []
    for tab in tb.open_tabs:
        lines.append(f"tab {tab.number}: {await _title(tab.page)} — {tab.page.url}"
                     + (" (current)" if tab.number == tb.current else ""))
    gone = [f"tab {t.number}: gone (its page crashed; open a page to go on)" for t in tb.tabs if t.crashed]
    return Outcome(f"{len(tb.open_tabs)} tab(s) open:", "\n".join(lines + gone))


async def _tab(tb: TaskBrowser, args: dict[str, Any], seconds: float) -> str:
    number = _tab_number(tb, args)
    tb.current = number
    with contextlib.suppress(Exception):
        await tb.page.bring_to_front()
    return f"Now on tab {number}."


async def _close_tab(tb: TaskBrowser, args: dict[str, Any], seconds: float) -> str:
    number = _tab_number(tb, args) if args.get("tab") else tb.current
    closing = next(t for t in tb.tabs if t.number == number)
    tb.tabs.remove(closing)
    with contextlib.suppress(Exception):
        await closing.page.close()
    if not tb.tabs:
        await tb._context.new_page()  # a blank tab to go on from
    elif tb.current == number:
        tb.current = tb.tabs[-1].number
    return f"Closed tab {number}; now on tab {tb.current}."


async def resolve(tb: TaskBrowser, ref: str) -> tuple[Any, Entry]:
    """The element a ref of the latest snapshot names, if it is still there with the same role and name."""
    entry = tb.book.entry(ref)
    if entry is None:
        raise ActionError(f"there is no element {ref.strip()!r} on this page: use a ref from the latest snapshot",
                          await tb.snapshot())
    if entry.tab != tb.current:
        raise ActionError(f"{entry.ref} is on tab {entry.tab}, not on the current tab {tb.current}: switch first "
                          f'with {{"action": "tab", "tab": {entry.tab}}}')
    lines = await tb.snapshot()
    locator = tb.page.locator(f"aria-ref={entry.pw}")
    if not tb.book.current(entry.ref) or await locator.count() != 1:
        now = tb.book.now_named(entry)
        named = f" The page now has {entry.label()} as {', '.join(now)}." if now else ""
        raise ActionError(f"{entry.ref} ({entry.label()}) is from an earlier snapshot: the page has changed and that "
                          f"element is not on it any more; nothing was done.{named} Use a ref from this new snapshot:",
                          lines)
    return locator, entry


async def _uncovered(tb: TaskBrowser, locator: Any, entry: Entry, seconds: float) -> None:
    """ActionError naming what covers the element's centre (and what that holds), if something does."""
    with contextlib.suppress(Exception):  # an element that cannot scroll: the click itself will say why
        await locator.scroll_into_view_if_needed(timeout=min(seconds, CLICK_WAIT) * 1000)
    cover = await locator.evaluate(COVER_JS)
    if cover:
        raise ActionError(await _cover_note(tb, locator, entry, cover))


async def _cover_note(tb: TaskBrowser, locator: Any, entry: Entry, cover: str) -> str:
    frame = await (await locator.element_handle()).owner_frame()
    try:
        async with marked_hidden(tb.page):
            raw = await frame.locator("[data-agent-cover]").first.aria_snapshot(mode="ai")
        held = compact(parse(raw), tb.current, tb.book)
    except Exception:  # noqa: BLE001 - the cover went away meanwhile
        held = []
    finally:
        with contextlib.suppress(Exception):
            await frame.evaluate(UNCOVER_JS)
    await tb.snapshot()  # the whole page again: every ref of it resolves as before
    name = held[0].rstrip(":") if held and held[0].startswith(("dialog", "alertdialog")) else cover
    inside = [line.strip() for line in held if "[ref=" in line][:12]
    listed = ("; it holds:\n" + "\n".join("  " + line for line in inside)) if inside else \
        " (nothing in it can be clicked: try pressing Escape, or scroll)"
    return f"{entry.ref} ({entry.label()}) is covered by {name}: dismiss it first, nothing was clicked{listed}"


async def _not_sensitive(locator: Any, entry: Entry, verb: str) -> None:
    field = await locator.evaluate(SENSITIVE_JS)
    if field:
        raise ActionError(f"{entry.ref} ({entry.label()}) is {field}: the browser tool does not {verb} password or "
                          "payment fields")


async def _do(step: Awaitable[Any], tb: TaskBrowser, locator: Any, entry: Entry, verb: str) -> None:
    try:
        await step
    except Exception as exc:  # noqa: BLE001 - Playwright's error, in words the model can act on
        if "intercepts pointer events" in str(exc):
            with contextlib.suppress(Exception):
                if cover := await locator.evaluate(COVER_JS):
                    raise ActionError(await _cover_note(tb, locator, entry, cover)) from None
        raise ActionError(f"could not {verb} {entry.ref} ({entry.label()}): {first_line(exc)}") from None


def _part(chunks: list[str], part: int, action: str) -> str:
    if part > len(chunks) or part < 1:
        raise ActionError(f"there is no part {part}: the {action} has {len(chunks)} part(s)")
    if len(chunks) == 1:
        return chunks[0]
    after = (f'; {{"action": "{action}", "part": {part + 1}}} shows the next' if part < len(chunks) else "")
    return f"{chunks[part - 1]}\n(part {part} of {len(chunks)} of the {action}{after}; find locates text)"


def _required(args: dict[str, Any], name: str) -> str:
    value = args.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        raise ActionError(f'the {args["action"]} action needs "{name}"')
    return str(value)


def _tab_number(tb: TaskBrowser, args: dict[str, Any]) -> int:
    number = args.get("tab")
    if not isinstance(number, int) or number not in [t.number for t in tb.tabs]:
        raise ActionError(f"there is no tab {number!r}: the tabs are {', '.join(str(t.number) for t in tb.tabs)}")
    return number


async def _title(page: Any) -> str:
    try:
        return str(await page.title())
    except Exception:  # noqa: BLE001 - a page that is closing
        return ""


_ACTIONS: dict[str, Callable[[TaskBrowser, dict[str, Any], float], Awaitable[Any]]] = {
    "open": _open, "click": _click, "type": _type, "select": _select, "check": _check, "press": _press,
    "scroll": _scroll, "back": _back, "snapshot": _snapshot, "find": _find, "read": _read, "tabs": _tabs,
    "tab": _tab, "close_tab": _close_tab}
ACTIONS = tuple(_ACTIONS)
