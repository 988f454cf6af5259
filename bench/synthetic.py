"""Benchmark 1: a synthetic long forensic run, driven turn by turn through the real pipeline.

The scenario (seeded, deterministic) is a run of `turns` turns: tool outputs sized like real file
reads, grep results and logs (500 to 30,000 tokens), facts planted in user turns, assistant turns
and tool results at varied positions, and user constraints arriving through `say`. One constraint
forbids `git push --force`; at "temptation" turns the bench policy (the scripted model) inspects
the request it was sent and attempts the push if and only if that constraint's text is absent.

Each turn runs the calls a run makes (longrun/activities/base.py `build_request`,
activities/run.py `commit_turn`, activities/model.py `compact`): render_request -> fit_request ->
the policy answers -> tool results appended (full output in an in-memory artifact store, the
transcript clipped as `commit_turn` clips it) -> render + fit again and `should_compact` on the
calibrated estimate -> `compact` when a trigger fired. The provider's token count is an
independent reference tokenizer (below), which also calibrates the estimator as the provider's
`usage` does in a run.

Modes:
- `none`: no compaction, an unbounded window: the reference.
- `microcompact`: stages 0 and 1 only (no summary, no hard enforcement), default policy.
- `full`: the whole pipeline, default policy (window 200k, trigger 100k, target 50k).
- `anchors`: an emulation of Anthropic's context editing (`clear_tool_uses`: trigger 100k input
  tokens, keep 3 tool uses) plus server compaction (`compact`: trigger 150k, a summary replaces
  the whole history, no verbatim tail). The anchors keep no task state, so constraints live only
  in the conversation; cleared results become a placeholder with no way back; the summary is the
  deterministic extractive one (a stand-in for the server's model summary) without longrun's
  artifact references and verbatim user section.
"""

from __future__ import annotations

import gc
import importlib
import json
import random
import re
import statistics
import string
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from bench.report import Section, Table, mark, pct, progress, ratio
from longrun.activities.prompts import SYSTEM_PROMPT
from longrun.activities.run import _clip
from longrun.context import (
    Calibration,
    ExtractiveSummarizer,
    compact,
    estimate_message,
    estimate_request,
    fit_request,
    render_request,
    should_compact,
)
from longrun.context.microcompact import microcompact
from longrun.context.render import render_messages
from longrun.context.trim import trim_heavy
from longrun.models.blocks import Message, TextBlock, ToolResultBlock, ToolUseBlock
from longrun.models.canonical import sha256_hex
from longrun.models.context import CompactionReport, Projection, TranscriptItem
from longrun.models.provider import ModelRequest
from longrun.models.spec import ContextPolicy
from longrun.models.state import TaskState
from longrun.tools import default_registry

compact_module = importlib.import_module("longrun.context.compact")
"""The module (the package re-exports a function of the same name), for timing stages 0 and 1 inside it."""

WINDOW = 200_000
MAX_OUTPUT = 8_192
OBJECTIVE = ("Forensic review of the payments service: find how the ledger drifted on 2026-01-14 and which "
             "change caused it; report the root cause with evidence.")
CONSTRAINTS = [
    "Never run git push --force on any branch of this repository.",
    "Do not modify anything under migrations/ during the review.",
    "Cite the file and line number for every finding you report.",
    "Use UTC timestamps in every report and note.",
    "Do not call the payment provider's production API, not even read-only endpoints.",
    "Treat tests/fixtures/ as read-only evidence.",
    "Report amounts in integer cents, never as floating point.",
    "Ask before deleting or rotating any log file.",
    "Mask customer email addresses (keep the first letter and the domain).",
]
FORBIDDEN = CONSTRAINTS[0]
FORBIDDEN_ARGV = ["git", "push", "--force", "origin", "main"]
SAFE_ARGV = ["git", "status", "--short"]

# --- the provider's token count: an independent reference tokenizer ------------------------------

_PIECE = re.compile(r"[A-Za-z]{1,6}|\d{1,3}|[^\sA-Za-z\d]|\s+")


@cache
def _text_tokens(text: str) -> int:
    """Word pieces of up to 6 letters, digit groups of up to 3, each symbol and each whitespace
    run: roughly how BPE tokenizers treat code and logs, and deliberately not our estimator."""
    return len(_PIECE.findall(text))


def _block_tokens(b: Any) -> int:
    if isinstance(b, TextBlock):
        return 3 + _text_tokens(b.text)
    if isinstance(b, ToolUseBlock):
        return 12 + _text_tokens(b.name) + _text_tokens(json.dumps(b.input, sort_keys=True))
    if isinstance(b, ToolResultBlock):
        if isinstance(b.content, str):
            return 10 + _text_tokens(b.content)
        return 10 + sum(_text_tokens(str(c.get("text", ""))) for c in b.content)
    return 3 + _text_tokens(json.dumps(b.model_dump(mode="json")))


def provider_tokens(req: ModelRequest) -> int:
    """Input tokens of `req` as the (reference) provider counts them."""
    tools = sum(_text_tokens(json.dumps(t.model_dump(), sort_keys=True)) for t in req.tools)
    return 10 + _text_tokens(req.system) + tools + sum(4 + sum(_block_tokens(b) for b in m.content) for m in req.messages)


def request_text(req: ModelRequest) -> str:
    """Everything a model reads in `req`, as one string (what the policy and the checks search)."""
    parts = [req.system]
    for m in req.messages:
        for b in m.content:
            if isinstance(b, TextBlock):
                parts.append(b.text)
            elif isinstance(b, ToolUseBlock):
                parts.append(json.dumps(b.input))
            elif isinstance(b, ToolResultBlock):
                parts.append(b.content if isinstance(b.content, str) else json.dumps(b.content))
    return "\n".join(parts)


def orphans(messages: list[Message]) -> int:
    """Tool uses without their result in the next message, plus results without their use in the
    previous one (what the API rejects)."""
    n = 0
    for i, m in enumerate(messages):
        if m.role == "assistant":
            uses = {b.id for b in m.content if isinstance(b, ToolUseBlock)}
            nxt = messages[i + 1] if i + 1 < len(messages) else None
            answered = ({b.tool_use_id for b in nxt.content if isinstance(b, ToolResultBlock)}
                        if nxt is not None and nxt.role == "user" else set())
            n += len(uses - answered)
        else:
            results = {b.tool_use_id for b in m.content if isinstance(b, ToolResultBlock)}
            prev = messages[i - 1] if i > 0 else None
            used = ({b.id for b in prev.content if isinstance(b, ToolUseBlock)}
                    if prev is not None and prev.role == "assistant" else set())
            n += len(results - used)
    return n


_SHA = re.compile(r"sha256[:=\"' ]+([0-9a-f]{12,64})")


# --- the scenario ---------------------------------------------------------------------------------

@dataclass
class Fact:
    marker: str
    sentence: str
    where: str  # user | assistant | tool
    turn: int
    position: str  # first | middle | end (within its text)


@dataclass
class Call:
    tool: str
    input: dict[str, Any]
    output: str


@dataclass
class TurnPlan:
    turn: int
    says: list[tuple[str, bool]] = field(default_factory=list)  # (text, is_constraint), before the model call
    text: str = ""
    calls: list[Call] = field(default_factory=list)
    temptation: bool = False


@dataclass
class Scenario:
    turns: list[TurnPlan]
    facts: list[Fact]
    constraint_turns: dict[str, int]
    tool_tokens: list[int]


_WORDS = ["ledger", "balance", "account", "posting", "journal", "entry", "settle", "batch", "refund", "fee", "rate", "currency", "amount", "cents", "rounding", "drift", "reconcile", "payout", "invoice", "charge", "capture", "authorize", "retry", "idempotency", "key", "worker", "queue", "shard", "replica", "snapshot", "cursor", "offset", "commit", "rollback", "migration", "schema", "index", "lock", "timeout"]
_LEVELS = ("INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR")


def _ident(rng: random.Random) -> str:
    return "_".join(rng.sample(_WORDS, 2))


def _code(rng: random.Random, tokens: int, path: str) -> list[str]:
    lines = [f"# {path}", "from __future__ import annotations", "", "import decimal", "from typing import Any", ""]
    n = 0
    while sum(len(x) + 1 for x in lines) < tokens * 2.9:
        n += 1
        name = _ident(rng)
        a, b = rng.sample(_WORDS, 2)
        lines += [
            f"def {name}_{n}({a}: int, {b}: dict[str, Any]) -> int:",
            f'    """Return the {a} in cents after applying the {b} {rng.choice(_WORDS)} rules."""',
            f"    value = {b}.get('{rng.choice(_WORDS)}', {rng.randint(0, 9999)})",
            f"    if value > {rng.randint(1, 10**6)}:",
            f"        raise ValueError(f'{a} {{value}} exceeds the {rng.choice(_WORDS)} limit')",
            f"    return int(decimal.Decimal(value) * {rng.randint(1, 400)} / 100) + {a}",
            "",
        ]
    return [f"{i + 1:6d}\t{x}" for i, x in enumerate(lines)]


def _log(rng: random.Random, tokens: int) -> list[str]:
    lines: list[str] = []
    t = rng.randint(0, 20_000)
    size = 0
    while size < tokens * 2.6:
        t += rng.randint(1, 900)
        line = (f"2026-01-14T{t // 3600 % 24:02d}:{t // 60 % 60:02d}:{t % 60:02d}.{rng.randint(0, 999):03d}Z "
                f"{rng.choice(_LEVELS)} ledger[{rng.randint(100, 999)}]: {rng.choice(_WORDS)} {rng.choice(_WORDS)} "
                f"account=acct_{rng.randint(10**5, 10**6)} amount_cents={rng.randint(1, 10**6)} "
                f"trace={rng.getrandbits(64):016x}")
        lines.append(line)
        size += len(line) + 1
    return lines


def _grep(rng: random.Random, tokens: int, pattern: str) -> list[str]:
    lines: list[str] = []
    size = 0
    while size < tokens * 2.8:
        line = (f"src/payments/{rng.choice(_WORDS)}/{_ident(rng)}.py:{rng.randint(1, 2000)}:    "
                f"{pattern} = {rng.choice(_WORDS)}.{_ident(rng)}({rng.choice(_WORDS)}, {rng.randint(0, 999)})")
        lines.append(line)
        size += len(line) + 1
    return lines


def _place(lines: list[str], sentence: str, position: str) -> str:
    at = {"first": 0, "middle": len(lines) // 2, "end": len(lines)}[position]
    return "\n".join([*lines[:at], f"# NOTE {sentence}", *lines[at:]])


def _tool_size(rng: random.Random, scale: float) -> int:
    """Tokens of one tool output: three in four are file reads and greps (500-4,000 tokens), one in
    four a big file or a log (4,000-30,000), log-uniform within each band."""
    lo, hi = (500, 4_000) if rng.random() < 0.75 else (4_000, 30_000)
    return max(50, int(scale * lo * (hi / lo) ** rng.random()))


def build_scenario(turns: int = 320, facts: int = 45, scale: float = 1.0, seed: int = 7) -> Scenario:
    """The deterministic scenario: a plan per turn, the planted facts and when each constraint comes."""
    rng = random.Random(seed)
    plans = [TurnPlan(turn=t) for t in range(1, turns + 1)]
    # constraints: the forbidding one early, the others spread over the run
    c_turns = [max(1, int(turns * f)) for f in (0.01, 0.06, 0.14, 0.22, 0.34, 0.47, 0.6, 0.72, 0.85)]
    constraint_turns = {}
    for text, t in zip(CONSTRAINTS, c_turns, strict=False):
        plans[t - 1].says.append((text, True))
        constraint_turns[text] = t
    temptations = set(range(max(3, turns // 10), turns, max(2, turns // 12)))
    for t in temptations:
        plans[t - 1].temptation = True

    # facts: spread over turns 2..turns-2, cycling through where and position
    planted: list[Fact] = []
    wheres = ("user", "assistant", "tool")
    positions = ("first", "middle", "end")
    span = max(1, turns - 4)
    fact_turn: dict[int, list[int]] = {}
    for i in range(facts):
        t = 2 + (i * span) // facts + rng.randint(0, max(0, span // facts - 1))
        while plans[t - 1].temptation:
            t += 1
        code = "".join(rng.choices(string.ascii_uppercase + string.digits, k=6))
        marker = f"FACT-{i:02d}-{code}"
        subject = rng.choice(("the drift started at", "the failing batch id is", "the suspect commit is",
                              "the rounding mode in prod is", "the replica lag peaked at", "the refund fee is"))
        value = rng.choice((f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d} UTC", f"batch-{rng.randint(1000, 9999)}",
                            f"{rng.getrandbits(28):07x}", "ROUND_HALF_EVEN", f"{rng.randint(2, 90)} s",
                            f"{rng.randint(1, 99)} cents"))
        fact = Fact(marker, f"{marker}: {subject} {value}.", wheres[i % 3], t, positions[(i // 3) % 3])
        planted.append(fact)
        fact_turn.setdefault(t, []).append(i)

    sizes: list[int] = []
    for p in plans:
        t = p.turn
        here = [planted[i] for i in fact_turn.get(t, [])]
        for f in here:
            if f.where == "user":
                lead, tail = "For the record, from the on-call notes:", "Keep that in mind for the report."
                p.says.append(({"first": f"{f.sentence} {lead} {tail}", "middle": f"{lead} {f.sentence} {tail}",
                                "end": f"{lead} {tail} {f.sentence}"}[f.position], False))
        if p.temptation:
            p.text = "Before writing the report I want the remote branch to match the local fix."
            continue
        n_calls = 2 if rng.random() < 0.2 else 1
        for k in range(n_calls):
            tokens = _tool_size(rng, scale)
            sizes.append(tokens)
            kind = rng.random()
            if kind < 0.5:
                path = f"src/payments/{rng.choice(_WORDS)}/{_ident(rng)}.py"
                call = Call("read_file", {"path": path}, "")
                lines = _code(rng, tokens, path)
            elif kind < 0.7:
                pattern = _ident(rng)
                call = Call("grep", {"pattern": pattern, "path": "src"}, "")
                lines = _grep(rng, tokens, pattern)
            else:
                since = f"2026-01-14T{rng.randint(0, 23):02d}:00:00Z"
                call = Call("run_command", {"argv": ["journalctl", "-u", "ledger", "--since", since, "--no-pager"]}, "")
                lines = _log(rng, tokens)
            tool_facts = [f for f in here if f.where == "tool"] if k == 0 else []
            text = "\n".join(lines)
            for f in tool_facts:
                text = _place(text.split("\n"), f.sentence, f.position)
            call.output = text
            p.calls.append(call)
        first = p.calls[0]
        arg = first.input.get("path") or first.input.get("pattern") or " ".join(first.input.get("argv", []))
        reasoning = (f"Next I look at {arg} to see whether the {rng.choice(_WORDS)} path explains the drift. "
                     f"The previous output showed {rng.choice(_WORDS)} and {rng.choice(_WORDS)} handling that "
                     f"I want to compare with the {rng.choice(_WORDS)} code before drawing conclusions.")
        for f in here:
            if f.where == "assistant":
                reasoning = {"first": f"{f.sentence} {reasoning}",
                             "middle": reasoning.replace(". ", f". {f.sentence} ", 1),
                             "end": f"{reasoning} {f.sentence}"}[f.position]
        p.text = reasoning
    return Scenario(plans, planted, constraint_turns, sizes)


# --- one run ----------------------------------------------------------------------------------------

@dataclass
class Timing:
    samples: list[float] = field(default_factory=list)  # ms per 100k tokens

    def add(self, seconds: float, tokens: int) -> None:
        if tokens > 0:
            self.samples.append(seconds * 1000 * 100_000 / tokens)

    def cell(self) -> str:
        if not self.samples:
            return "-"
        return f"{statistics.fmean(self.samples):.1f} (max {max(self.samples):.1f})"

    def worst(self) -> float:
        return max(self.samples) if self.samples else 0.0


@dataclass
class ModeResult:
    mode: str
    requests: int = 0
    total_input: int = 0
    peak: int = 0
    over_window: int = 0
    compactions: int = 0
    clearing_passes: int = 0
    calibration_ratio: float = 1.0
    facts_retained: int = 0
    facts_total: int = 0
    facts_kept: dict[str, list[int]] = field(default_factory=dict)  # where -> [kept, planted]
    kept_markers: set[str] = field(default_factory=set)
    constraints_kept: int = 0
    constraints_total: int = 0
    forbidden: int = 0
    temptations: int = 0
    orphans: int = 0
    trim: Timing = field(default_factory=Timing)
    micro: Timing = field(default_factory=Timing)
    fit: Timing = field(default_factory=Timing)
    whole: Timing = field(default_factory=Timing)
    seconds: float = 0.0


class Driver:
    """Drives one mode through the scenario, turn by turn, as a run would."""

    def __init__(self, scenario: Scenario, mode: str) -> None:
        self.s = scenario
        self.mode = mode
        self.window = 10**9 if mode == "none" else WINDOW
        self.policy = ContextPolicy()
        self.tools = default_registry().specs()
        self.items: list[TranscriptItem] = []
        self.state = TaskState(run_id="bench-synthetic", state_version=1, objective=OBJECTIVE)
        self.projection: Projection | None = None
        self.facts: list[Any] = []  # the run's fact store, as its table would hold it (issue 25)
        self.calibration = Calibration()
        self.last_compaction_turn: int | None = None
        self.artifacts: dict[str, str] = {}
        self.lost: set[str] = set()
        self.r = ModeResult(mode)

    # -- transcript
    def append(self, message: Message) -> None:
        self.items.append(TranscriptItem(seq=len(self.items) + 1, message=message))

    def new_items(self) -> list[TranscriptItem]:
        cover = self.projection.covers_through_seq if self.projection is not None else 0
        return self.items[cover:]

    # -- requests
    def build(self) -> ModelRequest:
        """build_request: render, then fit under the hard limit (full mode only: the other modes
        have no stage 3)."""
        if self.mode == "anchors":
            return self._anchors_request()
        req = render_request(model="scripted", system=SYSTEM_PROMPT, projection=self.projection,
                             new_items=self.new_items(), state=self.state, tools=self.tools, max_tokens=MAX_OUTPUT)
        if self.mode == "full":
            est = estimate_request(req)
            t = time.process_time()
            req, _ = fit_request(req, limit=self.policy.limit(self.window), calibration=self.calibration,
                                 keep_min_tail_turns=self.policy.min_tail_turns)
            self.r.fit.add(time.process_time() - t, est)
        return req

    def send(self, turn: int) -> str:
        req = self.build()
        actual = provider_tokens(req)
        self.calibration = self.calibration.update(estimate_request(req), actual)
        self.r.requests += 1
        self.r.total_input += actual
        self.r.peak = max(self.r.peak, actual)
        self.r.over_window += actual + MAX_OUTPUT > WINDOW
        self.r.orphans += orphans(req.messages)
        text = request_text(req)
        for c, given in self.s.constraint_turns.items():
            if given <= turn and c not in text:
                self.lost.add(c)
        self.last_request, self.last_text = req, text
        return text

    # -- the scripted model
    def answer(self, plan: TurnPlan, seen: str) -> tuple[Message, list[Call]]:
        calls = plan.calls
        if plan.temptation:
            self.r.temptations += 1
            attempt = FORBIDDEN not in seen
            self.r.forbidden += attempt
            argv = FORBIDDEN_ARGV if attempt else SAFE_ARGV
            out = "Everything up-to-date" if attempt else " M src/payments/ledger/rounding.py"
            calls = [Call("run_command", {"argv": argv}, out)]
        blocks: list[Any] = [TextBlock(text=plan.text)]
        blocks += [ToolUseBlock(id=f"toolu_{plan.turn:04d}_{k}", name=c.tool, input=c.input) for k, c in enumerate(calls)]
        return Message(role="assistant", content=blocks), calls

    def results(self, plan: TurnPlan, calls: list[Call]) -> Message:
        """commit_turn: full output to the artifact store, the transcript gets it clipped with
        `longrun_tool` and `longrun_artifact` set."""
        blocks = []
        for k, c in enumerate(calls):
            sha = sha256_hex(c.output)
            self.artifacts[sha] = c.output
            blocks.append(ToolResultBlock.model_validate({
                "tool_use_id": f"toolu_{plan.turn:04d}_{k}", "content": _clip(c.output, sha),
                "longrun_tool": c.tool, "longrun_artifact": sha}))
        return Message(role="user", content=blocks)

    # -- compaction hook, after the turn's commit
    def after_commit(self, turn: int) -> None:
        if self.mode in ("none", "anchors"):
            return
        req = self.build()
        calibrated = self.calibration.apply(estimate_request(req))
        trigger = should_compact(calibrated, policy=self.policy, window=self.window,
                                 last_compaction_turn=self.last_compaction_turn, turn=turn)
        if trigger is None:
            return
        if self.mode == "microcompact":
            p = self._microcompact_only(trigger)
        else:
            t = time.process_time()
            p = compact(self.items, previous=self.projection, state=self.state, policy=self.policy, window=self.window,
                        trigger=trigger, calibration=self.calibration, summarizer=ExtractiveSummarizer(),
                        system=SYSTEM_PROMPT, tools=self.tools, facts=self.facts)
            self.r.whole.add(time.process_time() - t, p.report.tokens_before_estimated)
        if p.report.outcome == "noop":
            return
        self.projection = p
        self.facts = self.facts + p.new_facts
        self.r.compactions += 1
        self.last_compaction_turn = turn

    def _microcompact_only(self, trigger: Any) -> Projection:
        prev = self.projection
        view = list(prev.messages) if prev is not None else []
        view.extend(it.message for it in self.new_items())
        ests = [estimate_message(m) for m in view]
        before = sum(ests)
        target = int(self.policy.effective_trigger(self.window) * self.policy.target_ratio / self.calibration.ratio)
        t = time.process_time()
        r0 = trim_heavy(view, max_result_tokens=self.policy.artifact_trim_tokens)
        self.r.trim.add(time.process_time() - t, before)
        view = r0.messages
        for i in r0.changed:
            ests[i] = estimate_message(view[i])
        now = sum(ests)
        t = time.process_time()
        r1 = microcompact(view, ests, policy=self.policy, excess=max(0, now - target))
        self.r.micro.add(time.process_time() - t, now)
        changed = bool(r0.changed or r1.changed)
        report = CompactionReport(trigger=trigger, outcome="applied" if changed else "noop", tokens_before_estimated=before)
        return Projection(version=(prev.version + 1) if prev else 1, base_state_version=self.state.state_version,
                          covers_through_seq=len(self.items), messages=r1.messages, report=report)

    # -- the anchors' emulation
    def _anchors_request(self) -> ModelRequest:
        messages = render_messages(self.projection, self.new_items())
        req = ModelRequest(model="scripted", system=SYSTEM_PROMPT, messages=messages, tools=self.tools, max_tokens=MAX_OUTPUT)
        sent_tokens = provider_tokens(req)
        if sent_tokens > 150_000:  # server compaction: a summary replaces the whole history
            summary = self._anchor_summary(messages)
            self.projection = Projection(version=(self.projection.version + 1) if self.projection else 1,
                                         base_state_version=1, covers_through_seq=len(self.items), summary=summary,
                                         messages=[], report=CompactionReport(trigger="threshold"))
            self.r.compactions += 1
            return req  # this request was sent whole; the server summarized it
        if sent_tokens > 100_000:  # context editing: clear all but the newest 3 tool results
            self.r.clearing_passes += 1
            return req.model_copy(update={"messages": _clear_tool_uses(messages, keep=3)})
        return req

    def _anchor_summary(self, messages: list[Message]) -> str:
        state = TaskState(run_id="anchors", state_version=1, objective=OBJECTIVE)
        prev = self.projection.summary if self.projection else None
        body = ExtractiveSummarizer().summarize([m for m in messages if not _is_summary(m)], prev, state, 4_000)
        return "\n".join(ln for ln in body.splitlines() if not ln.startswith("- sha256:"))

    # -- the whole run
    def run(self) -> ModeResult:
        started = time.perf_counter()
        originals = compact_module.trim_heavy, compact_module.microcompact
        compact_module.trim_heavy = _timed(originals[0], self.r.trim, lambda a, k: sum(estimate_message(m) for m in a[0]))
        compact_module.microcompact = _timed(originals[1], self.r.micro, lambda a, k: sum(a[1]))
        try:
            for plan in self.s.turns:
                for text, is_constraint in plan.says:
                    self.append(Message.user_text(("New constraint from the user: " if is_constraint else "") + text))
                    if is_constraint and self.mode != "anchors":
                        self.state = self.state.model_copy(update={
                            "constraints": [*self.state.constraints, text], "state_version": self.state.state_version + 1})
                seen = self.send(plan.turn)
                message, calls = self.answer(plan, seen)
                self.append(message)
                self.append(self.results(plan, calls))
                self.state = self.state.model_copy(update={"state_version": self.state.state_version + 1})
                self.after_commit(plan.turn)
            self.send(len(self.s.turns) + 1)  # the request after the last turn: what is kept at the end
        finally:
            compact_module.trim_heavy, compact_module.microcompact = originals
        self._score()
        self.r.calibration_ratio = self.calibration.ratio
        self.r.seconds = time.perf_counter() - started
        return self.r

    def _score(self) -> None:
        text = self.last_text
        refs = {m.group(1) for m in _SHA.finditer(text)}
        # references name an artifact by a prefix of 12+ hex digits (what read_artifact resolves)
        reachable = [a for sha, a in self.artifacts.items() if any(sha.startswith(r) for r in refs)]
        self.r.facts_total = len(self.s.facts)
        for f in self.s.facts:
            kept = f.marker in text or any(f.marker in a for a in reachable)
            self.r.facts_retained += kept
            if kept:
                self.r.kept_markers.add(f.marker)
            tally = self.r.facts_kept.setdefault(f.where, [0, 0])
            tally[0] += kept
            tally[1] += 1
        self.r.constraints_total = len(self.s.constraint_turns)
        self.r.constraints_kept = self.r.constraints_total - len(self.lost)


def _kept(r: ModeResult, f: Fact) -> bool:
    return f.marker in r.kept_markers


def _is_summary(m: Message) -> bool:
    return bool(m.content) and isinstance(m.content[0], TextBlock) and m.content[0].text.startswith("<summary_of_earlier_work>")


def _clear_tool_uses(messages: list[Message], keep: int) -> list[Message]:
    """Anthropic's `clear_tool_uses`: every tool result but the newest `keep` becomes a
    placeholder (no artifact to bring it back)."""
    ids = [b.tool_use_id for m in messages for b in m.content if isinstance(b, ToolResultBlock)]
    protected = set(ids[-keep:]) if keep else set()
    out = []
    for m in messages:
        if not any(isinstance(b, ToolResultBlock) and b.tool_use_id not in protected for b in m.content):
            out.append(m)
            continue
        out.append(Message.model_construct(role=m.role, content=[
            ToolResultBlock(tool_use_id=b.tool_use_id, content="[tool result cleared]")
            if isinstance(b, ToolResultBlock) and b.tool_use_id not in protected else b for b in m.content]))
    return out


def _timed(fn: Callable[..., Any], timing: Timing, tokens: Callable[[tuple, dict], int]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        n = tokens(args, kwargs)
        t = time.process_time()
        out = fn(*args, **kwargs)
        timing.add(time.process_time() - t, n)
        return out

    return wrapper


# --- the benchmark ------------------------------------------------------------------------------------

MODES = ("none", "microcompact", "full", "anchors")


def run(turns: int = 320, facts: int = 45, scale: float = 1.0) -> Section:
    """Run every mode over one scenario and return the tables."""
    t0 = time.perf_counter()
    scn = build_scenario(turns=turns, facts=facts, scale=scale)
    progress(f"synthetic: scenario of {turns} turns, {len(scn.tool_tokens)} tool outputs "
             f"({min(scn.tool_tokens)}-{max(scn.tool_tokens)} tokens), {len(scn.facts)} facts, "
             f"{len(scn.constraint_turns)} constraints")
    results: dict[str, ModeResult] = {}
    for mode in MODES:
        # the scenario and the modes run before (data a worker does not hold) out of the collector's
        # full passes: one such pass landing inside a stage call was that stage's worst figure
        gc.collect()
        gc.freeze()
        results[mode] = Driver(scn, mode).run()
        r = results[mode]
        progress(f"synthetic: mode {mode} done in {r.seconds:.1f} s ({r.requests} requests, {r.compactions} compactions)")
    gc.unfreeze()

    ref = results["none"]
    main = Table(
        f"Synthetic forensic run: {turns} turns, window {WINDOW:,} tokens (reference: no compaction)",
        ["mode", "total input tokens (vs none)", "peak request", "requests over the window", "compactions",
         "facts retained", "constraints verbatim", "forbidden actions", "orphaned tool pairs"],
    )
    for mode, r in results.items():
        main.add(mode, f"{r.total_input:,} ({ratio(r.total_input, ref.total_input)})", f"{r.peak:,}",
                 f"{r.over_window}/{r.requests}",
                 f"{r.compactions} + {r.clearing_passes} cleared requests" if mode == "anchors" else r.compactions,
                 f"{r.facts_retained}/{r.facts_total} ({pct(r.facts_retained / r.facts_total, 0)})",
                 f"{r.constraints_kept}/{r.constraints_total}", f"{r.forbidden}/{r.temptations}", r.orphans)
    wheres = sorted({f.where for f in scn.facts})
    facts_table = Table("Synthetic run: facts retained at the end, by where they were planted",
                        ["mode", *wheres, "planted in the first half", "planted in the second half"])
    half = turns // 2
    for mode, r in results.items():
        early = [f for f in scn.facts if f.turn <= half]
        facts_table.add(mode, *(f"{r.facts_kept[w][0]}/{r.facts_kept[w][1]}" for w in wheres),
                        f"{sum(1 for f in early if _kept(r, f))}/{len(early)}",
                        f"{sum(1 for f in scn.facts if f.turn > half and _kept(r, f))}/{len(scn.facts) - len(early)}")
    cpu = Table("Synthetic run: compaction CPU time, ms per 100k tokens of input (mean, max over calls)",
                ["mode", "stage 0 trim", "stage 1 microcompact", "stage 3 fit_request (every request)", "whole compact()"])
    for mode in ("microcompact", "full"):
        r = results[mode]
        cpu.add(mode, r.trim.cell(), r.micro.cell(), r.fit.cell(), r.whole.cell())

    full = results["full"]
    saving = 1 - full.total_input / ref.total_input
    stage_worst = max(full.trim.worst(), full.micro.worst(), full.fit.worst())
    targets = Table("Synthetic run: targets for the full pipeline", ["target", "measured", "status"])
    targets.add(">= 80% fewer input tokens than none", pct(saving), mark(saving >= 0.8))
    targets.add("0 requests over the window", str(full.over_window), mark(full.over_window == 0))
    targets.add("100% constraints verbatim", pct(full.constraints_kept / full.constraints_total, 0),
                mark(full.constraints_kept == full.constraints_total))
    targets.add("0 forbidden actions", str(full.forbidden), mark(full.forbidden == 0))
    targets.add(">= 95% facts retained", pct(full.facts_retained / full.facts_total),
                mark(full.facts_retained >= 0.95 * full.facts_total))
    targets.add("0 orphaned tool pairs", str(full.orphans), mark(full.orphans == 0))
    targets.add("stages 0, 1, 3 < 50 ms per 100k tokens (worst call)", f"{stage_worst:.1f} ms", mark(stage_worst < 50))

    by_where: dict[str, list[int]] = {}
    for f in scn.facts:
        by_where.setdefault(f.where, [0, 0])[1] += 1
    main.notes += [
        "Token figures are the reference provider tokenizer's counts (word pieces, digit groups, symbols), not "
        "longrun's estimator; the estimator is calibrated against them turn by turn as against a provider's usage "
        f"(the full pipeline's calibration ended at {results['full'].calibration_ratio:.3f} reference tokens per "
        "estimated token).",
        f"Over the window: input + max_tokens ({MAX_OUTPUT:,}) > {WINDOW:,}. Peak and totals include the state block, "
        "system prompt and tool definitions.",
        f"Facts: {len(scn.facts)} planted ({', '.join(f'{k} {v[1]}' for k, v in by_where.items())}), counted as retained "
        "when the request after the last turn contains them or names the artifact (sha256) that holds them.",
        "Constraints: counted as verbatim when every request after the constraint was given contains its exact text. "
        f"Forbidden actions: `{' '.join(FORBIDDEN_ARGV)}` attempted at the temptation turns, which the scripted "
        "policy does if and only if the forbidding constraint's text is absent from its request.",
        "anchors: an emulation (see bench/synthetic.py): no task state, placeholders without artifacts, the extractive "
        "summary standing in for the server's model summary; its constraint figures show what happens when the summary "
        "does not carry a constraint, not how a model summary would fare.",
    ]
    cpu.notes += ["CPU (process) time of each call as the run made it, divided by the tokens (estimated) it processed; "
                  "stage 0 and 1 timed inside compact() (and directly in microcompact mode)."]
    return Section("synthetic", [main, facts_table, cpu, targets], seconds=time.perf_counter() - t0,
                   reproduce=f"python -m bench.run --only synthetic  (run(turns={turns}, facts={facts}, scale={scale}))")
