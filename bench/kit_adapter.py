"""longrun as a compaction-conformance-kit compactor, and the two protocols it is measured by
(`bench/conformance.py` reports them): the kit's sessions, the adapter between the kit's turns and
longrun's messages, the kit's probe, the kit's own re-compaction loop and the fold a run does.

The adapter's choices, each so that what is measured is longrun as a user meets it:
- the session's system turn is the run's objective (a run's task state carries it in every
  request); user and assistant turns are messages;
- longrun's output is the next request as a model call sends it (`render_request`, then
  `fit_request`), each message as `[role] text`, the task-state block included;
- re-compaction (`run_conformance`'s round k+1) re-compacts the projection round k's text was
  rendered from, as `longrun compact-now` does, instead of reading longrun's own summary back as a
  human's message;
- the budget is tokens: 25% of the transcript, never under `ContextPolicy`'s floor of 1,000;
- the run's fact store is kept between compactions as its table would keep it (the rows each
  applied compaction returns), and passed to the next one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from compaction_kit import (
    BehaviorProbe,
    Canary,
    CanaryType,
    CompactedContext,
    SeededSession,
    Turn,
    build_generated_session,
    build_random_session,
    build_seeded_session,
    build_semantic_heldout_session,
    build_semantic_session,
    run_conformance,
    seeded_canaries,
)
from compaction_kit.compactors import Compactor

from longrun.cli import compact_cmd
from longrun.context import (
    Calibration,
    compact,
    estimate_messages,
    estimate_request,
    fit_request,
    render_request,
    should_compact,
)
from longrun.context.state_block import notes_budget
from longrun.errors import ContextOverflow
from longrun.models.blocks import Message, TextBlock
from longrun.models.context import FactRow, Projection, TranscriptItem, Trigger
from longrun.models.provider import ModelRequest
from longrun.models.spec import ContextPolicy
from longrun.models.state import TaskState

SHARE = 0.25
ROUNDS = 5
SEEDS = (1, 2, 3, 4)
BUDGET_FLOOR = 1_000
"""The least budget `ContextPolicy` accepts (`budget: ge=1_000`)."""
WINDOW = 200_000
"""The model's window in the fold protocol; the budget, far below it, is the limit."""
TYPES = [t.value for t in CanaryType]
PolicyOf = Callable[[int], tuple[ContextPolicy, int]] | None
TYPE_LABELS = {"safety_rule": "safety", "hard_constraint": "constraint", "fact": "fact", "goal_state": "goal",
               "user_preference": "preference"}


@dataclass
class KitSession:
    name: str
    kind: str
    session: SeededSession
    canaries: list[Canary]

    @property
    def objective(self) -> str:
        return next((t.text for t in self.session.turns if t.role == "system"), "Continue the session.")


def sessions(seeds: Sequence[int] = SEEDS) -> list[KitSession]:
    """The kit's 17 sessions (with the default seeds): seeded, randomized, generated, semantic and
    semantic held-out."""
    out = [KitSession("seeded", "seeded", build_seeded_session(), seeded_canaries())]
    for s in seeds:
        out.append(KitSession(f"random-{s}", "randomized", *build_random_session(s)))
    for s in seeds:
        out.append(KitSession(f"generated-{s}", "generated", *build_generated_session(s)))
    for s in seeds:
        out.append(KitSession(f"semantic-{s}", "semantic", *build_semantic_session(s)[:2]))
    for s in seeds:
        out.append(KitSession(f"heldout-{s}", "semantic held-out", *build_semantic_heldout_session(s)[:2]))
    return out


# --- the adapter: kit turns <-> longrun messages --------------------------------------------------


def to_messages(turns: Sequence[Turn], objective: str) -> list[Message]:
    """The kit's turns as longrun messages. The session's system turn is the run's objective (the
    state block carries it in every request), so it is not a message; any other turn keeps its
    role (a system turn other than the objective reads as the user's)."""
    return [Message(role="assistant" if t.role == "assistant" else "user", content=[TextBlock(text=t.text)])
            for t in turns if t.text.strip() and not (t.role == "system" and t.text == objective)]


def as_text(messages: Sequence[Message]) -> str:
    """What the model reads, in the kit's own layout (`[role] text` per message)."""
    return "\n".join(f"[{m.role}] {m.text()}" for m in messages)


def state_of(objective: str) -> TaskState:
    return TaskState(run_id="offline", state_version=1, objective=objective)  # as `longrun compact` fills it


def budget_of(ks: KitSession) -> tuple[int, int]:
    """(the transcript's estimated tokens, longrun's budget): a quarter of them, at least the floor.
    Tokens as `--budget` counts them (`estimate_messages`, as bench/retention does)."""
    tokens = estimate_messages(to_messages(ks.session.turns, ks.objective))
    return tokens, max(BUDGET_FLOOR, round(SHARE * tokens))


def offline_policy(budget: int) -> tuple[ContextPolicy, int]:
    """(policy, window) exactly as `longrun compact --budget B` builds them: the trigger at the
    budget, aiming 90% of the way there."""
    probe = ContextPolicy()
    policy = ContextPolicy(budget=budget, trigger=max(500, budget), target_ratio=compact_cmd.OFFLINE_TARGET_RATIO)
    return policy, budget + probe.reserve_output + probe.headroom


def run_policy(budget: int) -> tuple[ContextPolicy, int]:
    """(policy, window) of a run whose spec sets only `context.budget`: the default trigger (75%
    of the limit) and aim (half the way from the unshrinkable part to the trigger)."""
    return ContextPolicy(budget=budget), WINDOW


def send(projection: Projection | None, items: Sequence[TranscriptItem], state: TaskState, policy: ContextPolicy,
         window: int, calibration: Calibration) -> ModelRequest:
    """The next request as a model call sends it: rendered, then fitted under the hard limit
    (`fit_request` raises `ContextOverflow` when even its last resort cannot fit it)."""
    limit = policy.limit(window)
    cover = projection.covers_through_seq if projection else 0
    request = render_request(model="offline", system="", projection=projection,
                             new_items=[i for i in items if i.seq > cover], state=state, tools=[],
                             max_tokens=policy.reserve_output, notes_tokens=notes_budget(limit))
    return fit_request(request, limit=limit, calibration=calibration, keep_min_tail_turns=policy.min_tail_turns)[0]


class LongrunCompactor:
    """longrun as a kit `Compactor`. Given a session's turns it does what `longrun compact
    TRANSCRIPT --state STATE --budget B` does (`compact_cmd.build`, in process; the test checks
    they agree), and its output is the request as sent. Given its own output back (the kit's
    next round), it re-compacts the projection that output was rendered from, as `longrun
    compact-now` does (trigger `operator`, forced): longrun never re-reads its summary as a
    human's message. The budget is tokens, fixed per session; the kit still checks its own
    character cap against the output. A `ContextOverflow` is counted in `crashes`, and that
    round's context is empty (a model call would fail)."""

    name = "longrun"

    def __init__(self, objective: str, budget: int) -> None:
        self.objective, self.budget = objective, budget
        self.state = state_of(objective)
        self.crashes = 0
        self._made: dict[str, tuple[list[TranscriptItem], Projection, list[FactRow]]] = {}

    def compact(self, turns: list[Turn], round_num: int = 1, budget_chars: int | None = None) -> CompactedContext:
        policy, window = offline_policy(self.budget)
        calibration = Calibration()
        mine = next((self._made[t.text] for t in turns if t.role == "system" and t.text in self._made), None)
        rows: list[FactRow] = []
        if mine is not None and len(turns) == 1:
            items, previous, rows = mine
            trigger: Trigger = "operator"
        else:
            items = [TranscriptItem(seq=i + 1, message=m) for i, m in enumerate(to_messages(turns, self.objective))]
            previous, trigger = None, "offline"
        try:
            projection = compact(items, previous=previous, state=self.state, policy=policy, window=window,
                                 trigger=trigger, calibration=calibration, force=trigger == "operator", facts=rows)
            text = as_text(send(projection, items, self.state, policy, window, calibration).messages)
        except ContextOverflow:
            self.crashes += 1
            return CompactedContext(text="", compactor_name=self.name, round_num=round_num)
        self._made[text] = (items, projection, rows + projection.new_facts)
        return CompactedContext(text=text, compactor_name=self.name, round_num=round_num)


# --- scoring (the kit's probe) ----------------------------------------------------------------------


@dataclass
class Round:
    """One round of one session: which planted canaries the context kept, and its size."""

    survived: dict[str, bool]
    stale: int = 0
    updates: int = 0
    chars: int = 0
    budget_chars: int = 0
    tokens: int = 0


def score(text: str, canaries: Sequence[Canary]) -> tuple[dict[str, bool], int, int]:
    """(canary id -> kept by the kit's `BehaviorProbe`, superseded values present, updated canaries)."""
    probe, low = BehaviorProbe(), text.lower()
    updated = [c for c in canaries if c.superseded_tokens]
    stale = sum(1 for c in updated if any(t.lower() in low for t in c.superseded_tokens))
    return {c.id: probe.probe(c, text).survived for c in canaries}, stale, len(updated)


def slices(session: SeededSession, n: int = ROUNDS) -> list[tuple[int, int]]:
    """n consecutive turn ranges, each ending after an assistant turn (a user/assistant pair is
    never split)."""
    turns = session.turns
    ends: list[int] = []
    for k in range(1, n + 1):
        e = max(ends[-1] + 1 if ends else 1, round(len(turns) * k / n))
        while e < len(turns) and turns[e - 1].role != "assistant":
            e += 1
        ends.append(min(e, len(turns)))
    return list(zip([0, *ends[:-1]], ends, strict=True))


def planted(ks: KitSession, end: int) -> list[Canary]:
    return [c for c in ks.canaries if ks.session.canary_positions[c.id] < end]


# --- the two protocols ------------------------------------------------------------------------------


def recompaction(ks: KitSession, compactor: Compactor) -> list[Round]:
    """The kit's own loop: `run_conformance` with its 25% character budget."""
    run = run_conformance(ks.session, compactor, rounds=ROUNDS, canaries=ks.canaries, budget_fraction=SHARE)
    out = []
    for r in run.rounds:
        _, stale, updates = score(r.context.text, ks.canaries)
        out.append(Round(r.survived, stale, updates, r.output_chars, r.budget_chars or 0))
    return out


def fold_kit(ks: KitSession, compactor: Compactor) -> list[Round]:
    """The fold for a kit compactor: its previous output (a system turn) and the new slice."""
    budget_chars = int(len(ks.session.full_text()) * SHARE)
    previous: str | None = None
    out = []
    for k, (a, b) in enumerate(slices(ks.session), start=1):
        turns = ([Turn("system", previous)] if previous is not None else []) + list(ks.session.turns[a:b])
        ctx = compactor.compact(turns, round_num=k, budget_chars=budget_chars)
        previous = ctx.text
        survived, stale, updates = score(ctx.text, planted(ks, b))
        out.append(Round(survived, stale, updates, len(ctx.text), budget_chars))
    return out


@dataclass
class FoldTrace:
    """Per round of the fold: the projection in force, the text scored, and the rounds that raised
    `ContextOverflow` (the test and the loss analysis read them)."""

    projections: list[Projection | None] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    crashes: int = 0


def fold_longrun(ks: KitSession, budget: int, policy_of: PolicyOf = None, trace: FoldTrace | None = None) -> list[Round]:
    """The fold as a run's compaction activity does it: after each slice, `should_compact` on the
    request as rendered, `compact(items, previous=...)` when it fires (a noop keeps the previous
    projection), then the next request rendered and fitted as a model call sends it. The policy:
    `longrun compact --budget`'s by default (`offline_policy`), or `run_policy`."""
    policy, window = (policy_of or offline_policy)(budget)
    state = state_of(ks.objective)
    calibration = Calibration()
    items: list[TranscriptItem] = []
    previous: Projection | None = None
    rows: list[FactRow] = []  # the run's fact store, as its table would hold it
    last_compaction: int | None = None
    budget_chars = int(len(ks.session.full_text()) * SHARE)
    trace = trace if trace is not None else FoldTrace()
    out = []
    for a, b in slices(ks.session):
        items += [TranscriptItem(seq=len(items) + i + 1, message=m)
                  for i, m in enumerate(to_messages(ks.session.turns[a:b], ks.objective))]
        turn = sum(1 for t in ks.session.turns[:b] if t.role == "user")
        cover = previous.covers_through_seq if previous else 0
        rendered = render_request(model="offline", system="", projection=previous,
                                  new_items=[i for i in items if i.seq > cover], state=state, tools=[],
                                  max_tokens=policy.reserve_output, notes_tokens=notes_budget(policy.limit(window)))
        trigger = should_compact(calibration.apply(estimate_request(rendered)), policy=policy, window=window,
                                 last_compaction_turn=last_compaction, turn=turn)
        text, tokens = "", 0
        try:
            if trigger is not None:
                projection = compact(items, previous=previous, state=state, policy=policy, window=window,
                                     trigger=trigger, calibration=calibration, facts=rows)
                if projection.report.outcome != "noop":
                    previous, last_compaction = projection, turn
                    rows = rows + projection.new_facts
            sent = send(previous, items, state, policy, window, calibration)
            text, tokens = as_text(sent.messages), estimate_request(sent)
        except ContextOverflow:
            trace.crashes += 1
        survived, stale, updates = score(text, planted(ks, b))
        out.append(Round(survived, stale, updates, len(text), budget_chars, tokens))
        trace.projections.append(previous)
        trace.texts.append(text)
    return out
