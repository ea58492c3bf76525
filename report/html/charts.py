"""Inline SVG bar charts drawn here, so the page needs no plotting library to be viewed."""

from __future__ import annotations

from core.text import money
from report.html.markdown import esc

WIDTH, HEIGHT = 560, 140


def bar_chart(values: list[tuple[str, float, bool]], unit: str, label: str) -> str:
    """One bar per (name, value, failed) in order; failed bars are drawn in the alert colour."""
    if not values:
        return f'<p class="meta">No data for {esc(label)}.</p>'
    top = max(v for _, v, _ in values)  # the axis says what the data says (a bar is drawn only above 0)
    step = min(WIDTH / len(values), 40.0)
    gap = 1.0 if step > 3 else 0.0
    bars = []
    for i, (name, value, failed) in enumerate(values):
        h = max(1.0, (value / top) * (HEIGHT - 20)) if value > 0 else 0.0
        cls = ' class="bad"' if failed else ""
        bars.append(f'<rect{cls} x="{i * step:.2f}" y="{HEIGHT - h:.2f}" width="{max(step - gap, 0.5):.2f}" '
                    f'height="{h:.2f}"><title>{esc(name)}: {esc(_fmt(value, unit))}</title></rect>')
    return (f'<svg class="bars" role="img" aria-label="{esc(label)}" viewBox="0 0 {WIDTH} {HEIGHT}" '
            f'width="100%" preserveAspectRatio="none" xmlns="http://www.w3.org/2000/svg">'
            f'<text x="2" y="12" font-size="11" fill="#616875">max {esc(_fmt(top, unit))}</text>'
            + "".join(bars) + "</svg>")


def _fmt(value: float, unit: str) -> str:
    if unit == "$":
        return money(value)
    return f"{value:g} {unit}".strip()
