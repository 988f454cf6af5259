"""Terminal rendering for the CLI: tables, token counts, the context meter, a terminal chart of
the request size over a run, and the same chart as an SVG image.

Everything here is pure (strings in, strings out) so it is tested without a terminal, and it
needs nothing beyond the standard library: the demo must run on a fresh machine.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from html import escape
from typing import Any

FULL, EMPTY, TRIGGER_MARK = "█", "░", "┃"
SCRIPTED_NOTE = "scripted = a deterministic offline stand-in for a model (a Python policy), not an LLM"
BARS = " ▁▂▃▄▅▆▇█"


def tokens(n: int | float | None) -> str:
    """4321 -> '4.3k', 1_250_000 -> '1.25M'; short enough for a meter line."""
    if n is None:
        return "-"
    n = int(n)
    if abs(n) < 1_000:
        return str(n)
    if abs(n) < 1_000_000:
        return f"{n / 1_000:.1f}k"
    return f"{n / 1_000_000:.2f}M"


def when(ts: datetime | None) -> str:
    """A timestamp as local wall-clock time with seconds (the date only when not today)."""
    if ts is None:
        return "-"
    local = ts.astimezone()
    now = datetime.now(UTC).astimezone()
    return local.strftime("%H:%M:%S" if local.date() == now.date() else "%Y-%m-%d %H:%M:%S")


def until(ts: datetime | None) -> str:
    """'in 29m 12s' / 'expired 3s ago' for an expiry."""
    if ts is None:
        return "-"
    delta = ts - datetime.now(UTC)
    secs = int(abs(delta.total_seconds()))
    span = f"{secs // 3600}h {secs % 3600 // 60}m" if secs >= 3600 else f"{secs // 60}m {secs % 60}s" if secs >= 60 else f"{secs}s"
    return f"in {span}" if delta > timedelta(0) else f"expired {span} ago"


_DURATION = re.compile(r"^\s*(\d+)\s*([smhd]?)\s*$", re.I)
_UNIT = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> int:
    """'30m' -> 1800, '2h' -> 7200, '45s' / '45' -> 45, '1d' -> 86400.

    Raises:
        ValueError: anything else (the message shows the accepted forms).
    """
    m = _DURATION.match(text or "")
    if not m or int(m.group(1)) <= 0:
        raise ValueError(f"not a duration: {text!r}; use a positive number with s, m, h or d (e.g. 45s, 30m, 2h)")
    return int(m.group(1)) * _UNIT[m.group(2).lower()]


def table(rows: Sequence[Sequence[Any]], headers: Sequence[str], *, max_width: int = 80) -> str:
    """A plain left-aligned table; numbers right-aligned; cells clipped to `max_width`."""

    def cell(v: Any) -> str:
        s = "" if v is None else str(v)
        s = s.replace("\n", " ")
        return s if len(s) <= max_width else s[: max_width - 1] + "…"

    cells = [[cell(v) for v in r] for r in rows]
    widths = [len(h) for h in headers]
    for r in cells:
        for i, c in enumerate(r):
            widths[i] = max(widths[i], len(c))
    numeric = [all(isinstance(r[i], (int, float)) for r in rows) and bool(rows) for i in range(len(headers))]

    def line(values: Sequence[str]) -> str:
        out = [v.rjust(widths[i]) if numeric[i] else v.ljust(widths[i]) for i, v in enumerate(values)]
        return "  ".join(out).rstrip()

    return "\n".join([line(list(headers)), line(["-" * w for w in widths]), *(line(r) for r in cells)])


def key_values(pairs: Iterable[tuple[str, Any]]) -> str:
    pairs = [(k, v) for k, v in pairs if v is not None]
    width = max((len(k) for k, _ in pairs), default=0)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in pairs)


def meter(used: int, limit: int, trigger: int | None, *, width: int = 40, label: str = "context ") -> str:
    """The context meter: the request's calibrated tokens against the hard limit, the compaction
    trigger marked with ┃.

        context [██████████████░░░░░┃░░░░░░░░░░░░░░░░░░░░]  2.6k / 5.8k  (trigger 3.0k)
    """
    limit = max(limit, 1)
    filled = min(width, round(width * used / limit))
    bar = [FULL] * filled + [EMPTY] * (width - filled)
    if trigger is not None and 0 < trigger < limit:
        pos = min(width - 1, round(width * trigger / limit))
        bar[pos] = TRIGGER_MARK
    over = "  OVER TRIGGER" if trigger is not None and used > trigger else ""
    trig = f"  (trigger {tokens(trigger)} ┃)" if trigger is not None else ""
    return f"{label}[{''.join(bar)}]  {tokens(used)} / {tokens(limit)}{trig}{over}"


@dataclass(frozen=True)
class Point:
    """One model request of a run: its size and whether a compaction followed it."""

    turn: int
    tokens: int
    compacted_after: bool = False
    after_tokens: int | None = None


def chart(points: Sequence[Point], *, limit: int, trigger: int | None, height: int = 10) -> str:
    """A column chart of request sizes over a run, one column per model request, the trigger as a
    dotted line and each compaction marked ▼ under the request it followed."""
    if not points:
        return "(no model requests yet)"
    top = max(limit, max(p.tokens for p in points), 1)
    col = 3
    rows: list[str] = []
    trigger_row = round(height * trigger / top) if trigger else None
    for level in range(height, 0, -1):
        lo = top * (level - 1) / height
        label = tokens(top * level / height).rjust(6)
        line = []
        for p in points:
            if p.tokens >= top * level / height:
                ch = FULL
            elif p.tokens > lo:
                ch = BARS[max(1, round(8 * (p.tokens - lo) / (top / height)))]
            else:
                ch = "┈" if level == trigger_row else " "
            line.append((ch * (col - 1)) + ("┈" if level == trigger_row else " "))
        mark = " trigger" if level == trigger_row else ""
        rows.append(f"{label} ┤{''.join(line)}{mark}")
    rows.append(" " * 7 + "└" + "─" * (col * len(points)))
    rows.append(" " * 8 + "".join(("▼" if p.compacted_after else " ").ljust(col) for p in points) + "  ▼ compaction")
    turns = "".join(str(p.turn)[-2:].ljust(col) for p in points)
    rows.append(" " * 8 + turns + "  turn")
    return "\n".join(rows)


def svg_chart(points: Sequence[Point], *, limit: int, trigger: int | None, title: str) -> str:
    """The same chart as a standalone SVG image (opens in any browser)."""
    w, h, left, bottom, top_pad, right = 760, 360, 60, 40, 40, 130
    plot_w, plot_h = w - left - right, h - bottom - top_pad
    top = max([limit, *(p.tokens for p in points), 1])
    n = max(len(points), 1)
    step = plot_w / n
    bar_w = max(2.0, step * 0.7)

    def y(v: float) -> float:
        return top_pad + plot_h * (1 - v / top)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
        'font-family="monospace" font-size="11">',
        f'<rect width="{w}" height="{h}" fill="white"/>',
        f'<text x="{left}" y="20" font-size="14">{escape(title)}</text>',
    ]
    for frac in (0, 0.25, 0.5, 0.75, 1.0):
        v = top * frac
        out.append(f'<line x1="{left}" y1="{y(v):.1f}" x2="{left + plot_w}" y2="{y(v):.1f}" stroke="#eee"/>')
        out.append(f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{tokens(v)}</text>')
    for i, p in enumerate(points):
        x = left + i * step + (step - bar_w) / 2
        out.append(
            f'<rect x="{x:.1f}" y="{y(p.tokens):.1f}" width="{bar_w:.1f}" height="{plot_h * p.tokens / top:.1f}" '
            f'fill="#4a7ebb"><title>turn {p.turn}: {p.tokens} tokens</title></rect>'
        )
        out.append(f'<text x="{x + bar_w / 2:.1f}" y="{h - bottom + 14}" text-anchor="middle">{p.turn}</text>')
        if p.compacted_after:
            out.append(f'<text x="{x + bar_w / 2:.1f}" y="{y(p.tokens) - 4:.1f}" text-anchor="middle" fill="#c0392b">▼</text>')
            if p.after_tokens is not None:
                out.append(
                    f'<line x1="{x:.1f}" y1="{y(p.after_tokens):.1f}" x2="{x + bar_w:.1f}" y2="{y(p.after_tokens):.1f}" '
                    'stroke="#c0392b" stroke-width="2"/>'
                )
    out.append(f'<line x1="{left}" y1="{y(limit):.1f}" x2="{left + plot_w}" y2="{y(limit):.1f}" stroke="#555"/>')
    out.append(f'<text x="{left + plot_w + 6}" y="{y(limit) + 4:.1f}">limit {tokens(limit)}</text>')
    if trigger:
        out.append(
            f'<line x1="{left}" y1="{y(trigger):.1f}" x2="{left + plot_w}" y2="{y(trigger):.1f}" '
            'stroke="#c0392b" stroke-dasharray="5,4"/>'
        )
        out.append(f'<text x="{left + plot_w + 6}" y="{y(trigger) + 4:.1f}" fill="#c0392b">trigger {tokens(trigger)}</text>')
    out.append(f'<line x1="{left}" y1="{top_pad + plot_h}" x2="{left + plot_w}" y2="{top_pad + plot_h}" stroke="black"/>')
    out.append(f'<text x="{left + plot_w / 2:.1f}" y="{h - 8}" text-anchor="middle">turn (one bar per model request; '
               '▼ compaction, red tick: size after it)</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
