"""Text a person does not see on a page, kept from the browser tool's model: marked before a snapshot or a read.

Playwright's snapshot already leaves out what is not rendered (`display:none`, `visibility:hidden`) and
`aria-hidden` subtrees. marked_hidden() marks, in every frame, what is rendered but not seen and makes it
`visibility:hidden` (a style of the agent's, which moves no box), so that the snapshot and `read` leave it
out too; afterwards the marks and the style are removed:

- an element and all it holds: `opacity:0` (a text field, drop-down or check box itself excepted: pages
  hide the real control under a drawn one), `clip-path: inset(50%)` or more, `clip: rect()` with no area,
  a box entirely outside the page (left of or above it, or past its right edge or bottom), a box with
  `overflow` other than visible and no height or width (a collapsed section), `text-indent` of -999px or
  less;
- an element's own text (not its children's): a transparent colour, a font under 1px, or the colour of
  the background behind it (within a small distance; behind any background image the colour is not
  judged).

Text clipped away inside a link or button (the `sr-only` label of an icon button) stays: it is the name a
screen reader reads for that control. Not judged: text covered by another element, text too small or too
faint to read but not zero, colours that differ slightly but are hard to tell apart, text drawn in a canvas
or an image, and text placed with transforms.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

ATTR = "data-agent-hidden"
MARK_JS = r"""(mark) => {
  const ATTR = 'data-agent-hidden';
  const STYLE = 'agent-hidden-style';
  if (!mark) {
    document.querySelectorAll('[' + ATTR + ']').forEach(e => {
      if (e.getAttribute(ATTR) === 'wrap') e.replaceWith(...e.childNodes); else e.removeAttribute(ATTR);
    });
    const style = document.getElementById(STYLE);
    if (style) style.remove();
    return 0;
  }
  if (!document.body) return 0;
  const W = Math.max(document.documentElement.scrollWidth, innerWidth);
  const H = Math.max(document.documentElement.scrollHeight, innerHeight);
  const rgba = (c) => { const m = /rgba?\(([^)]*)\)/.exec(c || ''); if (!m) return null;
    const p = m[1].split(/[\s,\/]+/).filter(Boolean).map(parseFloat);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; };
  const background = (el) => {
    for (let e = el; e; e = e.parentElement) {
      const s = getComputedStyle(e);
      if (s.backgroundImage && s.backgroundImage !== 'none') return null;
      const c = rgba(s.backgroundColor);
      if (c && c[3] > 0) return c;
    }
    return [255, 255, 255, 1];
  };
  const field = (el) => el.matches('input, select, textarea');
  const boxHidden = (el, s) => {
    if (parseFloat(s.opacity) === 0 && !field(el)) return true;
    const inset = /inset\(\s*([\d.]+)%/.exec(s.clipPath || '');
    if (inset && parseFloat(inset[1]) >= 50) return true;
    const rect = /rect\(([^)]*)\)/.exec(s.clip || '');
    if (rect && (s.position === 'absolute' || s.position === 'fixed')) {
      const v = rect[1].split(/[\s,]+/).map(parseFloat);
      if (v.length === 4 && !v.some(isNaN) && (v[2] <= v[0] || v[1] <= v[3])) return true;
    }
    if (s.display !== 'inline' && s.display !== 'contents' && (s.overflowX !== 'visible' || s.overflowY !== 'visible')
        && (el.clientHeight === 0 || el.clientWidth === 0) && el.firstChild) return true;
    if (parseFloat(s.textIndent) <= -999) return true;
    const r = el.getBoundingClientRect();
    if (r.width > 0 || r.height > 0) {
      const x = r.left + scrollX, y = r.top + scrollY;
      if (x + r.width <= 0 || y + r.height <= 0 || x >= W || y >= H) return true;
    }
    return false;
  };
  const insideControl = (el) => { const c = el.parentElement && el.parentElement.closest(
    'a, button, label, summary, [role=button], [role=link], [role=tab], [role=menuitem]');
    return c && !c.closest('[' + ATTR + ']'); };
  const clipped = (s) => /inset|rect/.test((s.clipPath || '') + (s.clip || ''));
  const textHidden = (el, s) => {
    if (parseFloat(s.fontSize) < 1) return true;
    const c = rgba(s.color);
    if (!c || c[3] === 0) return !!c;
    const b = background(el);
    return !!b && Math.abs(c[0] - b[0]) + Math.abs(c[1] - b[1]) + Math.abs(c[2] - b[2]) < 24;
  };
  let marked = 0;
  for (const el of document.body.querySelectorAll('*')) {
    if (el.closest('[' + ATTR + ']')) continue;
    const s = getComputedStyle(el);
    if (s.display === 'none' || s.visibility === 'hidden') continue;
    if (boxHidden(el, s) && !(clipped(s) && insideControl(el))) {
      el.setAttribute(ATTR, '');
      marked++;
      continue;
    }
    const own = [...el.childNodes].filter(n => n.nodeType === 3 && n.textContent.trim());
    if (own.length && textHidden(el, s)) {
      for (const t of own) {
        const wrap = document.createElement('agent-hidden');
        wrap.setAttribute(ATTR, 'wrap');
        t.replaceWith(wrap);
        wrap.appendChild(t);
        marked++;
      }
    }
  }
  if (marked) {  // hidden from the snapshot and innerText; visibility keeps every box where it was
    const style = document.createElement('style');
    style.id = STYLE;
    style.textContent = '[' + ATTR + '], [' + ATTR + '] * { visibility: hidden !important; }';
    (document.head || document.documentElement).appendChild(style);
  }
  return marked;
}"""


@contextlib.asynccontextmanager
async def marked_hidden(page: Any) -> AsyncIterator[None]:
    """While inside: what a person does not see on page is aria-hidden, in every frame (see the module)."""
    frames = list(page.frames)
    for frame in frames:
        with contextlib.suppress(Exception):  # a frame that went away, or a page that is closing
            await frame.evaluate(MARK_JS, True)
    try:
        yield
    finally:
        for frame in frames:
            with contextlib.suppress(Exception):
                await frame.evaluate(MARK_JS, False)


async def visible_text(page: Any) -> str:
    """The text of page's body as a person sees it (what marked_hidden() marks is left out)."""
    async with marked_hidden(page):
        return str(await page.inner_text("body"))
