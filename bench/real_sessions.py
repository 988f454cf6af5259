"""Benchmark 2: the five real sessions (../shared/data/real-sessions).

1. The token estimator against the provider's counts: the real token count of the messages added
   between two requests is the difference of their `input_total`; the estimate is the sum of
   `estimate_message` over the same messages. Before calibration: the raw estimator. After: each
   delta scaled by the `Calibration` learned online from the session's earlier deltas (as a run
   learns from earlier requests), scored from the fourth delta on. Zero deltas (usage not
   refreshed in the source logs) are merged into the next one.
2. Compaction at the moment the client compacted: `compact` + `render_request` + `fit_request`,
   the path of `longrun compact --budget`, at 25% of the client's `pre_tokens`, with the
   calibration the session's deltas taught; compared with the client's own summary
   (compaction.json): tokens, the file paths and commands of the session's tool calls, and the
   human's texts.
"""

from __future__ import annotations

import json
import re
import statistics
import time
from pathlib import Path
from typing import Any

from bench.report import Section, Table, mark, pct, progress, ratio
from bench.synthetic import orphans, request_text
from longrun.cli.compact_cmd import OFFLINE_TARGET_RATIO
from longrun.context import (
    Calibration,
    compact,
    estimate_message,
    estimate_request,
    estimate_text,
    fit_request,
    render_request,
)
from longrun.context.summary import summary_references
from longrun.context.transcript import artifact_sha, cleared_references, normalize_pairs
from longrun.models.blocks import Message, TextBlock, ToolResultBlock, ToolUseBlock
from longrun.models.context import TranscriptItem
from longrun.models.spec import ContextPolicy
from longrun.models.state import TaskState

SESSIONS = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "real-sessions"
PATH_KEYS = ("file_path", "notebook_path", "path")
COMMAND_TOOLS = {"Bash": "command"}
SCORE_FROM = 3
"""Deltas before this one only teach the calibration (a run's first requests)."""


def sessions(root: Path = SESSIONS) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []


def load(d: Path) -> tuple[list[dict[str, Any]], list[dict[str, int]], dict[str, Any]]:
    msgs = [json.loads(line) for line in (d / "messages.jsonl").read_text().splitlines() if line.strip()]
    reqs = [json.loads(line) for line in (d / "requests.jsonl").read_text().splitlines() if line.strip()]
    return msgs, reqs, json.loads((d / "compaction.json").read_text())


# --- 1. the estimator on request-to-request deltas ---------------------------------------------------

def deltas(msgs: list[dict[str, Any]], reqs: list[dict[str, int]]) -> list[tuple[int, int]]:
    """(estimated, actual) tokens of the messages added between consecutive requests."""
    ests = [estimate_message(m) for m in msgs]
    out = []
    prev = reqs[0]
    for r in reqs[1:]:
        actual = r["input_total"] - prev["input_total"]
        if actual <= 0:
            continue
        out.append((sum(ests[prev["before"]: r["before"]]), actual))
        prev = r
    return out


def estimator_errors(pairs: list[tuple[int, int]]) -> dict[str, float]:
    """Sum and median errors of the raw and the online-calibrated estimates."""
    cal = Calibration()
    raw_sum = cal_sum = actual_sum = 0
    raw_errs: list[float] = []
    cal_errs: list[float] = []
    for k, (est, actual) in enumerate(pairs):
        if k >= SCORE_FROM:
            calibrated = cal.apply(est)
            raw_sum += est
            cal_sum += calibrated
            actual_sum += actual
            raw_errs.append(abs(est - actual) / actual)
            cal_errs.append(abs(calibrated - actual) / actual)
        cal = cal.update(est, actual)
    return {
        "scored": len(raw_errs),
        "actual": actual_sum,
        "raw_sum": (raw_sum - actual_sum) / actual_sum,
        "cal_sum": (cal_sum - actual_sum) / actual_sum,
        "raw_median": statistics.median(raw_errs),
        "cal_median": statistics.median(cal_errs),
        "final_ratio": cal.ratio,
    }


def session_calibration(pairs: list[tuple[int, int]]) -> Calibration:
    cal = Calibration()
    for est, actual in pairs:
        cal = cal.update(est, actual)
    return cal


# --- 2. compaction where the client compacted ---------------------------------------------------------

def _contains(haystack: str, needle: str) -> bool:
    return needle in haystack or json.dumps(needle, ensure_ascii=False)[1:-1] in haystack


def tool_targets(messages: list[Message]) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """File paths and commands of the session's tool calls, each with the ids of its tool uses."""
    paths: dict[str, list[str]] = {}
    commands: dict[str, list[str]] = {}
    for m in messages:
        for b in m.content:
            if not isinstance(b, ToolUseBlock):
                continue
            for k in PATH_KEYS:
                v = b.input.get(k)
                if isinstance(v, str) and v:
                    paths.setdefault(v, []).append(b.id)
            key = COMMAND_TOOLS.get(b.name)
            v = b.input.get(key) if key else None
            if isinstance(v, str) and v:
                commands.setdefault(v, []).append(b.id)
    return paths, commands


def project_root(paths: list[str]) -> str:
    """The longest directory shared by at least 60% of the absolute paths: the session's project,
    which the client's summary names files relative to."""
    absolute = [p.split("/") for p in paths if p.startswith("/")]
    root: list[str] = []
    depth = 1
    while absolute:
        counts: dict[tuple[str, ...], int] = {}
        for parts in absolute:
            if len(parts) > depth + 1:
                key = tuple(parts[: depth + 1])
                counts[key] = counts.get(key, 0) + 1
        if not counts:
            break
        best, n = max(counts.items(), key=lambda kv: kv[1])
        if n < 0.6 * len(absolute):
            break
        root = list(best)
        depth += 1
    return "/".join(root)


def client_keeps_path(path: str, summary: str, root: str) -> tuple[bool, bool]:
    """(named by the full path or the path relative to the project, named by the file name alone)."""
    rel = path[len(root) + 1:] if root and path.startswith(root + "/") else path
    return (path in summary or rel in summary), (path.rsplit("/", 1)[-1] in summary)


def human_texts(messages: list[Message]) -> list[str]:
    return [b.text for m in messages if m.role == "user" for b in m.content if isinstance(b, TextBlock) and b.text.strip()]


def compaction_case(d: Path) -> dict[str, Any]:
    msgs, reqs, comp = load(d)
    pairs = deltas(msgs, reqs)
    cal = session_calibration(pairs)
    messages, _moved = normalize_pairs([Message.from_wire(m) for m in msgs])
    items = [TranscriptItem(seq=i + 1, message=m) for i, m in enumerate(messages)]
    first = next((m.text() for m in messages if m.role == "user" and m.text().strip()), "")
    state = TaskState(run_id="offline", state_version=1, objective=first[:2_000] or "(no objective)")
    budget = comp["pre_tokens"] // 4
    probe = ContextPolicy()
    policy = ContextPolicy(budget=budget, trigger=budget, target_ratio=OFFLINE_TARGET_RATIO)
    window = budget + probe.reserve_output + probe.headroom

    t = time.process_time()
    projection = compact(items, previous=None, state=state, policy=policy, window=window, trigger="offline", calibration=cal)
    request = render_request(model="offline", system="", projection=projection, new_items=items, state=state,
                             tools=[], max_tokens=policy.reserve_output)
    request, _ = fit_request(request, limit=policy.limit(window), calibration=cal, keep_min_tail_turns=policy.min_tail_turns)
    cpu_ms = (time.process_time() - t) * 1000

    sent = request_text(request)
    named = {r["sha256"] for r in cleared_references(projection.messages) + summary_references(projection.summary)}
    named |= set(re.findall(r"sha256:([0-9a-f]{12,64})", sent))
    result_sha = {b.tool_use_id: artifact_sha(b) for m in messages for b in m.content if isinstance(b, ToolResultBlock)}
    # a reference names an artifact by its full hash or by a prefix (12 hex digits: what read_artifact takes)
    named |= {sha for sha in result_sha.values() if any(sha.startswith(p) for p in named)}
    summary = str(comp.get("summary", ""))
    paths, commands = tool_targets(messages)
    humans = human_texts(messages)
    root = project_root(list(paths))
    client_paths = [client_keeps_path(p, summary, root) for p in paths]

    def kept(targets: dict[str, list[str]]) -> tuple[int, int]:
        verbatim = sum(1 for v in targets if _contains(sent, v))
        by_ref = sum(1 for v, ids in targets.items()
                     if _contains(sent, v) or any(result_sha.get(i) in named for i in ids))
        return verbatim, by_ref

    p_verb, p_any = kept(paths)
    c_verb, c_any = kept(commands)
    return {
        "session": d.name[:8],
        "pre_tokens": comp["pre_tokens"],
        "budget": budget,
        "ours_tokens": cal.apply(estimate_request(request)),
        "client_tokens": cal.apply(estimate_text(summary)),
        "paths": len(paths), "paths_ours": p_verb, "paths_ours_any": p_any,
        "paths_client": sum(1 for rel, _ in client_paths if rel),
        "paths_client_name": sum(1 for _, name in client_paths if name),
        "commands": len(commands), "commands_ours": c_verb, "commands_ours_any": c_any,
        "commands_client": sum(1 for v in commands if v in summary),
        "commands_missed_long": sum(1 for v in commands if not _contains(sent, v) and len(v) > 300
                                    and not any(result_sha.get(i) in named for i in commands[v])),
        "humans": len(humans), "humans_ours": sum(1 for h in humans if h in sent),
        "humans_client": sum(1 for h in humans if h in summary),
        "orphans": orphans(request.messages),
        "cpu_ms": cpu_ms,
        "stages": "+".join(projection.report.stages_run),
    }


# --- the benchmark ---------------------------------------------------------------------------------------

def run(root: Path = SESSIONS, limit: int | None = None) -> Section:
    t0 = time.perf_counter()
    dirs = sessions(root)[:limit]
    if not dirs:
        return Section("real_sessions", skipped=f"real sessions not found at {root}")

    est = Table("Real sessions: the estimator on request-to-request token deltas (error of the sum, signed; "
                "median per-delta error)",
                ["session", "deltas scored", "real tokens", "raw sum error", "calibrated sum error", "target <= 5%",
                 "raw median", "calibrated median", "session ratio"])
    worst = 0.0
    for d in dirs:
        msgs, reqs, _ = load(d)
        e = estimator_errors(deltas(msgs, reqs))
        worst = max(worst, abs(e["cal_sum"]))
        est.add(d.name[:8], e["scored"], f"{e['actual']:,}", f"{e['raw_sum']:+.1%}", f"{e['cal_sum']:+.1%}",
                mark(abs(e["cal_sum"]) <= 0.05), pct(e["raw_median"]), pct(e["cal_median"]), f"{e['final_ratio']:.3f}")
        progress(f"real sessions: estimator on {d.name[:8]}")
    est.notes += [
        "Before = the raw estimator; after = each delta scaled by the Calibration learned from the same session's "
        f"earlier deltas (token-weighted, decayed), scored from delta {SCORE_FROM + 1} on; ratio to the reference "
        "(the provider's count) is 1 + the signed error.",
        f"Worst calibrated sum error: {worst:.1%} ({mark(worst <= 0.05)}).",
    ]

    comp = Table("Real sessions: our projection at 25% of the client's pre_tokens vs the client's own summary",
                 ["session", "pre_tokens", "budget", "ours (calibrated est.)", "client summary", "file paths kept: ours / client",
                  "commands kept: ours / client", "user texts verbatim: ours / client", "orphans", "CPU ms", "stages"])
    cases = []
    for d in dirs:
        c = compaction_case(d)
        cases.append(c)
        progress(f"real sessions: compaction of {c['session']} in {c['cpu_ms']:.0f} ms")

        def frac(n: int, total: int) -> str:
            return f"{n}/{total} ({pct(n / total, 0)})" if total else "0/0"

        comp.add(c["session"], f"{c['pre_tokens']:,}", f"{c['budget']:,}",
                 f"{c['ours_tokens']:,} ({ratio(c['ours_tokens'], c['budget'])} of budget)",
                 f"{c['client_tokens']:,} ({ratio(c['client_tokens'], c['budget'])})",
                 f"{frac(c['paths_ours_any'], c['paths'])} [verbatim {c['paths_ours']}] / {frac(c['paths_client'], c['paths'])} "
                 f"[by name {c['paths_client_name']}]",
                 f"{frac(c['commands_ours_any'], c['commands'])} [verbatim {c['commands_ours']}] / "
                 f"{frac(c['commands_client'], c['commands'])}",
                 f"{frac(c['humans_ours'], c['humans'])} / {frac(c['humans_client'], c['humans'])}",
                 c["orphans"], f"{c['cpu_ms']:.0f}", c["stages"])
    tot = {k: sum(c[k] for c in cases) for k in ("paths", "paths_ours_any", "paths_ours", "paths_client", "paths_client_name", "commands", "commands_missed_long",
                                                 "commands_ours_any", "commands_ours", "commands_client", "humans",
                                                 "humans_ours", "humans_client")}
    within = all(c["ours_tokens"] <= c["budget"] for c in cases)
    comp.notes += [
        "Paths: the unique `file_path`/`notebook_path`/`path` values of the session's tool calls; commands: the unique Bash "
        "`command` values. Ours counts one as kept when it is in the projection verbatim or its result's artifact (sha256) "
        "is named there (read_artifact brings the output back); [verbatim] is the verbatim part alone. The client's "
        "summary is searched for the full path or the path relative to the session's project directory (its own style); "
        "[by name] counts a bare file name as enough. Commands and user texts are searched verbatim on both sides.",
        f"All sessions: file paths ours {pct(tot['paths_ours_any'] / tot['paths'], 0)} (verbatim "
        f"{pct(tot['paths_ours'] / tot['paths'], 0)}) vs client {pct(tot['paths_client'] / tot['paths'], 0)} "
        f"({pct(tot['paths_client_name'] / tot['paths'], 0)} by file name); commands ours "
        f"{pct(tot['commands_ours_any'] / tot['commands'], 0)} (verbatim {pct(tot['commands_ours'] / tot['commands'], 0)}) vs "
        f"client {pct(tot['commands_client'] / tot['commands'], 0)}; user texts ours {pct(tot['humans_ours'] / tot['humans'], 0)} "
        f"vs client {pct(tot['humans_client'] / tot['humans'], 0)}.",
        "Tokens: calibrated with the ratio the session's deltas taught; neither side includes the client's system prompt "
        "and tool definitions (about 26k tokens, not in the data).",
        f"Targets: every file path and command kept: paths {mark(tot['paths_ours_any'] == tot['paths'])}, commands "
        f"{mark(tot['commands_ours_any'] == tot['commands'])} ({tot['commands'] - tot['commands_ours_any']} missed, "
        f"{tot['commands_missed_long']} of them longer than 300 characters); all user instructions verbatim "
        f"{mark(tot['humans_ours'] == tot['humans'])}; projection within budget {mark(within)}.",
    ]
    return Section("real_sessions", [est, comp], seconds=time.perf_counter() - t0,
                   reproduce="python -m bench.run --only real_sessions")
