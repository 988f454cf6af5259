"""The long-run benchmark's tables (bench/long_run.py measures, this reads the measurements):
one row per turn bucket, the last row the ratio of the last 50 turns to the first 50."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from bench.long_probe import TABLES, Sample
from bench.report import Table, mark

MiB = 1024 * 1024


@dataclass
class Measured:
    """One run's measurements."""

    tool: str
    turns: int
    calls: list[Any]
    samples: list[Sample]
    statements: bool
    compactions: list[int]
    """The turn (0-based, as the model calls count) of each compaction that changed the projection."""
    reports: list[Any]
    """Each of those compactions' `CompactionReport`, in the same order."""
    segments: list[tuple[int, int]]
    status: str
    reason: str
    wall: float
    state_bytes: int

    @property
    def done(self) -> int:
        """Turns the run took (fewer than `turns` when it failed)."""
        return max(0, len(self.calls) - 1)

    def per_turn(self) -> tuple[list[float], list[float]]:
        """(seconds, CPU seconds) of each turn k: from model call k to call k+1, less the model's
        and the probe's own part."""
        wall, cpu = [], []
        for a, b in zip(self.calls, self.calls[1:], strict=False):
            wall.append(b.start - a.start - a.own)
            cpu.append(b.cpu - a.cpu - a.own_cpu)
        return wall, cpu


def buckets(turns: int) -> list[tuple[str, int, int]]:
    """(label, first turn, end turn) : the first 50, every `width` turns, the last 50."""
    width = 100 if turns <= 1_000 else 500
    out = [("first 50", 0, min(50, turns))]
    out += [(f"{a + 1}-{min(a + width, turns)}", a, min(a + width, turns)) for a in range(0, turns, width)]
    if turns > 50:
        out.append(("last 50", turns - 50, turns))
    return out


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


def _at(samples: list[Sample], turn: int) -> Sample | None:
    """The sample taken at `turn` or the nearest one before it."""
    best = None
    for s in samples:
        if s.turn <= turn and (best is None or s.turn > best.turn):
            best = s
    return best


def _delta(m: Measured, a: int, b: int) -> tuple[float, float, dict[str, float]] | None:
    """Statements, rows and bytes by table per turn over turns [a, b)."""
    sa, sb = _at(m.samples, a), _at(m.samples, b)
    if sa is None or sb is None or sb.turn <= sa.turn:
        return None
    n = sb.turn - sa.turn
    sizes = {t: (sb.sizes.get(t, 0) - sa.sizes.get(t, 0)) / n for t in TABLES if t in sb.sizes}
    return (sb.statements - sa.statements) / n, (sb.rows - sa.rows) / n, sizes


def _rss(m: Measured, a: int, b: int) -> float:
    got = [c.rss for c in m.calls[a:b + 1] if c.rss]
    return got[-1] / MiB if got else float("nan")


def _ratio(last: float, first: float) -> str:
    return f"{last / first:.2f}x" if first and first == first and last == last else "n/a"


def time_table(m: Measured) -> tuple[Table, dict[str, float]]:
    wall, cpu = m.per_turn()
    what = "an effect (bench_edit) on every turn" if m.tool == "bench_edit" else "one 1-6 KB read per turn"
    t = Table(f"Long run, {m.turns} turns, {what}: per turn by bucket (16k budget, continue-as-new every 50 turns)",
              ["turns", "per turn p50 / p95", "worker CPU per turn", "compactions", "SQL statements per turn",
               "rows per turn", "worker RSS at end"])
    figures: dict[str, float] = {}
    for label, a, b in buckets(len(wall)):
        w, c = wall[a:b], cpu[a:b]
        comp = sum(1 for k in m.compactions if a <= k < b)
        d = _delta(m, a, b)
        p50, p95, cpu_mean = _pct(w, 0.5), _pct(w, 0.95), statistics.fmean(c) if c else float("nan")
        figures[f"{label} p50"], figures[f"{label} cpu"], figures[f"{label} comp"] = p50, cpu_mean, comp
        if d is not None:
            figures[f"{label} stmts"], figures[f"{label} rows"] = d[0], d[1]
        t.add(label, f"{p50 * 1000:.0f} / {p95 * 1000:.0f} ms", f"{cpu_mean * 1000:.0f} ms", f"{comp} of {b - a}",
              f"{d[0]:.1f}" if d and m.statements else "n/a", f"{d[1]:.0f}" if d and m.statements else "n/a",
              f"{_rss(m, a, b):.0f} MiB")
    if "last 50 p50" in figures:
        f = figures
        t.add("last 50 / first 50", _ratio(f["last 50 p50"], f["first 50 p50"]), _ratio(f["last 50 cpu"], f["first 50 cpu"]),
              _ratio(f["last 50 comp"], f["first 50 comp"]), _ratio(f.get("last 50 stmts", 0), f.get("first 50 stmts", 0)),
              _ratio(f.get("last 50 rows", 0), f.get("first 50 rows", 0)), "")
    t.notes.append(f"Run {m.status} after {len(m.calls)} model calls in {m.wall:.0f} s"
                   + (f": {m.reason}" if m.reason else "") + f"; its task state is {m.state_bytes / 1024:.1f} KB at the end.")
    t.notes.append("Per turn: the gap between the starts of consecutive model calls, less the model's own time "
                   "(instant) and the probe's; worker CPU: this process's CPU (every thread) over the same gap. "
                   "Statements and rows: pg_stat_statements over the bucket, per turn (the probe's own excluded).")
    return t, figures


def bytes_table(m: Measured) -> Table:
    present = [t for t in TABLES if any(t in s.sizes for s in m.samples)]
    t = Table(f"Long run, {m.turns} turns ({m.tool}): storage per turn by table and bucket (pg_total_relation_size)",
              ["turns", *present, "all"])
    first: dict[str, float] = {}
    last: dict[str, float] = {}
    for label, a, b in buckets(m.done):
        d = _delta(m, a, b)
        if d is None:
            continue
        if label == "first 50":
            first = d[2]
        if label == "last 50":
            last = d[2]
        t.add(label, *(f"{d[2].get(x, 0) / 1024:.1f} KB" for x in present), f"{sum(d[2].values()) / 1024:.1f} KB")
    if first and last:
        t.add("last 50 / first 50", *(_ratio(last.get(x, 0), first.get(x, 0)) for x in present),
              _ratio(sum(last.values()), sum(first.values())))
    t.notes.append("Sizes include indexes and TOAST, in whole pages: read the larger buckets for the trend.")
    return t


def history_table(m: Measured) -> Table:
    t = Table(f"Long run, {m.turns} turns ({m.tool}): Temporal history per continue-as-new segment",
              ["segment", "events", "history KB"])
    segs = m.segments
    show = sorted({0, 1, len(segs) // 2, len(segs) - 2, len(segs) - 1} & set(range(len(segs))))
    for i in show:
        t.add(str(i + 1), str(segs[i][0]), f"{segs[i][1] / 1024:.1f}")
    if len(segs) >= 3:
        # the last segment ends the run (a shorter one); compare the one before it
        t.add("second-last / first", _ratio(segs[-2][0], segs[0][0]), _ratio(segs[-2][1], segs[0][1]))
    t.notes.append(f"{len(segs)} segments; the first opens the run, the last closes it.")
    return t


def spacing_table(m: Measured) -> Table:
    """What decides how far apart compactions are: where each one lands (tokens after, calibrated)
    and what of that is the summary, against the trigger it must stay under."""
    t = Table(f"Long run, {m.turns} turns ({m.tool}): compactions by bucket, where they land",
              ["turns", "compactions", "turns between (mean)", "tokens after (mean)", "summary tokens (mean)",
               "tail messages (mean)", "target tokens"])
    ks = m.compactions
    for label, a, b in buckets(m.done):
        got = [i for i, k in enumerate(ks) if a <= k < b and i < len(m.reports)]
        if not got:
            t.add(label, "0", "-", "-", "-", "-", "-")
            continue
        gaps = [ks[i] - ks[i - 1] for i in got if i > 0]
        rs = [m.reports[i] for i in got]
        t.add(label, str(len(got)), f"{statistics.fmean(gaps):.1f}" if gaps else "-",
              f"{statistics.fmean(r.tokens_after_calibrated for r in rs):,.0f}",
              f"{statistics.fmean(r.summary_tokens for r in rs):,.0f}",
              f"{statistics.fmean(r.tail_messages for r in rs):.1f}", f"{rs[-1].target_tokens:,}")
    t.notes.append("A compaction fires when a request reaches the trigger; the turns between two are the room "
                   "it left (trigger - tokens after) over what a turn adds.")
    return t


def goals(m: Measured, figures: dict[str, float]) -> list[str]:
    """The issue's goals, each with its figure and met / MISSED."""
    out = []
    f = figures
    if "last 50 p50" in f and f["first 50 p50"]:
        r = f["last 50 p50"] / f["first 50 p50"]
        out.append(f"Goal: last-50 / first-50 p50 <= 1.1x: {r:.2f}x ({mark(r <= 1.1)}).")
        c = f["last 50 cpu"] / f["first 50 cpu"] if f["first 50 cpu"] else float("nan")
        out.append(f"Goal: last-50 / first-50 worker CPU <= 1.2x: {c:.2f}x ({mark(c <= 1.2)}).")
    n = m.done
    if n >= 300:
        mid = sum(1 for k in m.compactions if 100 <= k < 200)
        end = sum(1 for k in m.compactions if n - 100 <= k < n)
        out.append(f"Goal: compactions in the last 100 turns no more frequent than in turns 101-200: {end} vs {mid} "
                   f"({mark(end <= mid)}).")
        a, b = _delta(m, 100, 200), _delta(m, n - 100, n)
        if a and b and a[2].get("projections"):
            r = b[2]["projections"] / a[2]["projections"]
            out.append(f"Goal: projection bytes per turn flat within 20% (last 100 vs turns 101-200): {r:.2f}x "
                       f"({mark(0.8 <= r <= 1.2)}).")
    w = 100 if n <= 1_000 else 500
    if n >= 4 * w:
        a, b = _delta(m, w, 2 * w), _delta(m, n - w, n)
        if a and b and sum(a[2].values()):
            r = sum(b[2].values()) / sum(a[2].values())
            out.append(f"Goal: bytes per turn (all tables) flat within 20% (last {w} vs turns {w + 1}-{2 * w}): "
                       f"{sum(b[2].values()) / 1024:.1f} vs {sum(a[2].values()) / 1024:.1f} KB, {r:.2f}x "
                       f"({mark(0.8 <= r <= 1.2)}).")
    if m.tool == "bench_edit":
        out.append(f"Goal: the task state row under 8 KB after {n} effects: {m.state_bytes / 1024:.1f} KB "
                   f"({mark(m.state_bytes < 8 * 1024)}).")
    rss = [(k, c.rss) for k, c in enumerate(m.calls) if c.rss]
    if rss and n >= 1_000:
        at500 = next((v for k, v in rss if k >= 500), rss[-1][1])
        r = rss[-1][1] / at500
        out.append(f"Worker RSS from turn 500 to the end: {at500 / MiB:.0f} -> {rss[-1][1] / MiB:.0f} MiB, {r:.2f}x "
                   f"(goal within 10%: {mark(r <= 1.1)}).")
    return out


def tables(measured: list[Measured]) -> list[Table]:
    out: list[Table] = []
    for m in measured:
        t, figures = time_table(m)
        t.notes = goals(m, figures) + t.notes
        out += [t, spacing_table(m), bytes_table(m), history_table(m)]
    return out
