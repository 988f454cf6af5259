"""`longrun compact`: offline compaction of an Anthropic-format transcript, no database needed (what
it does and its arguments: `longrun.cli.parsers.compact`, whose docstring is its `--help`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from longrun.context import Calibration, compact, estimate_request, fit_request, render_request
from longrun.context.state_block import notes_budget
from longrun.context.summary import summary_references
from longrun.context.transcript import artifact_sha, cleared_references, normalize_pairs
from longrun.models.blocks import Message
from longrun.models.context import TranscriptItem
from longrun.models.spec import ContextPolicy
from longrun.models.state import TaskState

DEFAULT_WINDOW = 200_000
OFFLINE_TARGET_RATIO = 0.9
"""Offline the budget is the goal itself, so compaction aims just under it (10% margin)."""


class UsageError(Exception):
    """Bad arguments or input files: exit code 2."""


def load_transcript(path: Path) -> list[TranscriptItem]:
    """The transcript's messages as items (seq 1..n), tool results moved next to their tool_use
    where another client delivered them late (see `normalize_pairs`)."""
    if not path.is_file():
        raise UsageError(f"transcript not found: {path}")
    messages: list[Message] = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                if not isinstance(data, dict):
                    raise ValueError("not a JSON object")
                msg = Message.from_wire({"role": data.get("role"), "content": data.get("content")})
            except (ValueError, ValidationError) as exc:
                first = str(exc).splitlines()[0]
                raise UsageError(f"{path}:{lineno}: not an Anthropic message {{\"role\", \"content\"}}: {first}") from exc
            messages.append(msg)
    if not messages:
        raise UsageError(f"{path}: no messages")
    messages, _ = normalize_pairs(messages)
    return [TranscriptItem(seq=i + 1, message=m) for i, m in enumerate(messages)]


NO_OBJECTIVE = "(offline compaction: no objective was given; the conversation states the task)"
"""The objective when STATE.json gives none. It used to be the first user text, which may be a
plan the conversation later rejected: rendered as the state block's authoritative objective, it
overrode what was decided after it (issue 25, cause 6)."""


def load_state(path: str | None, items: list[TranscriptItem]) -> TaskState:
    """The TaskState from STATE.json, missing required fields filled: run_id "offline",
    state_version 1, objective `NO_OBJECTIVE` (never taken from the conversation: `items` are
    not read for it)."""
    data: dict[str, Any] = {}
    if path is not None:
        p = Path(path)
        if not p.is_file():
            raise UsageError(f"state file not found: {p}")
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise UsageError(f"{p}: not valid JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise UsageError(f"{p}: expected a JSON object (a TaskState or a subset of its fields)")
    data.setdefault("run_id", "offline")
    data.setdefault("state_version", 1)
    data.setdefault("objective", NO_OBJECTIVE)
    try:
        return TaskState.model_validate(data)
    except ValidationError as exc:
        raise UsageError(f"{path}: not a valid TaskState: {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}") from exc


def build(args: argparse.Namespace) -> dict[str, Any]:
    """The projection as it would be sent and its report, as one JSON-able object."""
    items = load_transcript(Path(args.transcript))
    state = load_state(args.state, items)
    fields: dict[str, Any] = {}
    if args.keep is not None:
        fields["keep"] = args.keep
    if args.clear_at_least is not None:
        fields["clear_at_least"] = args.clear_at_least
    if args.exclude_tools:
        fields["exclude_tools"] = [t.strip() for t in args.exclude_tools.split(",") if t.strip()]
    try:
        if args.budget is not None:
            probe = ContextPolicy(**fields)
            policy = ContextPolicy(**fields, budget=args.budget, trigger=max(500, args.budget), target_ratio=OFFLINE_TARGET_RATIO)
            window = args.budget + probe.reserve_output + probe.headroom
        else:
            policy = ContextPolicy(**fields)
            window = DEFAULT_WINDOW
    except ValidationError as exc:
        raise UsageError(f"bad option: {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}") from exc
    calibration = Calibration()
    projection = compact(items, previous=None, state=state, policy=policy, window=window, trigger="offline",
                         calibration=calibration)
    request = render_request(model="offline", system="", projection=projection, new_items=items, state=state,
                             tools=[], max_tokens=policy.reserve_output, notes_tokens=notes_budget(policy.limit(window)))
    request, freed = fit_request(request, limit=policy.limit(window), calibration=calibration,
                                 keep_min_tail_turns=policy.min_tail_turns)
    report = projection.report.model_dump(mode="json")
    final = estimate_request(request)
    report.update({
        "tokens_sent_estimated": final,
        "freed_at_send": freed,
        "messages_in": len(items),
        "messages_out": len(request.messages),
        "cleared": cleared_references(projection.messages) + _resolved(summary_references(projection.summary), items),
    })
    return {"messages": [m.to_wire() for m in request.messages], "report": report}


def _resolved(refs: list[dict[str, str]], items: list[TranscriptItem]) -> list[dict[str, str]]:
    """`refs` with each artifact prefix the summary names (12 hex digits, what read_artifact takes)
    replaced by the full sha256 of the transcript's result it stands for: offline there is no
    store to ask, and a reader of this report matches results exactly."""
    full = {artifact_sha(b) for it in items for b in it.message.tool_results()}
    out = []
    for r in refs:
        found = [sha for sha in full if sha.startswith(r["sha256"])]
        out.append({**r, "sha256": found[0]} if len(found) == 1 else r)
    return out


def run(args: argparse.Namespace) -> int:
    """Exit codes: 0 done, 2 usage (missing file, malformed line, bad state), 1 failure."""
    try:
        out = build(args)
    except UsageError as exc:
        print(f"longrun compact: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        print(f"longrun compact: failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(out, ensure_ascii=False))
        return 0
    r = out["report"]
    rows = [
        ("messages in / out", f"{r['messages_in']} / {r['messages_out']}"),
        ("budget", r["budget"]),
        ("tokens before (est.)", r["tokens_before_estimated"]),
        ("tokens after (est.)", r["tokens_after_estimated"]),
        ("tokens sent (est.)", r["tokens_sent_estimated"]),
        ("stages run", ", ".join(r["stages_run"])),
        *((f"  freed by {k}", v) for k, v in r["freed_per_stage"].items()),
        ("results cleared", r["cleared_results"]),
        ("messages summarized", r["messages_summarized"]),
        ("summary tokens", f"{r['summary_tokens']} ({r['summary_source']})"),
        ("fact ledger", f"{r['ledger_facts']} lines quoted, {r['ledger_left_out']} left out for size"),
        ("tail kept", f"{r['tail_messages']} messages, {r['tail_tokens']} tokens"),
        ("dropped", r["dropped_messages"]),
        ("outcome", r["outcome"]),
        ("duration ms", r["duration_ms"]),
    ]
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    if r["cleared"]:
        print("\ncleared results (sha256 of the original content, tool, stage, tokens):")
        for c in r["cleared"]:
            print(f"  {c['sha256']}  {c['tool']}  {c['stage']}  {c.get('tokens', '')}")
    return 0
