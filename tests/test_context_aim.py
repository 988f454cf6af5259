"""The fact selection fills the room it is allowed (issue 25, cause 7): under a run's default
policy (aim half the way to the trigger) a compaction whose facts do not fit the aim lets them
fill up to `aim.FACTS_RATIO` of the way, still under the trigger, and its report says where it
aimed."""

from __future__ import annotations

from longrun.context import Calibration, compact, should_compact
from longrun.context.aim import FACTS_RATIO
from longrun.models import ContextPolicy, Message, TaskState, TranscriptItem
from longrun.models.blocks import TextBlock

STATE = TaskState(run_id="r1", state_version=1, objective="Keep the fleet's latency budgets")
SERVICES = ["billing", "auth", "search", "media", "ledger", "quota", "notify", "export", "import", "report",
            "gateway", "cache", "queue", "index", "audit", "mailer", "pricing", "invoice", "profile", "session"]


def _items() -> list[TranscriptItem]:
    out = []
    for i, svc in enumerate(SERVICES):
        out.append(Message.user_text(f"HARD CONSTRAINT: {svc}-svc p99 latency must stay under {100 + 7 * i}ms."))
        out.append(Message(role="assistant", content=[TextBlock(text="Noted.")]))
    return [TranscriptItem(seq=i + 1, message=m) for i, m in enumerate(out)]


def test_a_runs_default_policy_keeps_the_facts_that_fit_under_the_trigger() -> None:
    policy, window = ContextPolicy(budget=1_400), 200_000
    items = _items()
    p = compact(items, previous=None, state=STATE, policy=policy, window=window, trigger="threshold",
                calibration=Calibration())
    assert p.report.outcome == "applied"
    assert p.report.ledger_left_out == 0, f"{p.report.ledger_left_out} facts left out with room before the trigger"
    assert p.report.target_tokens < p.report.facts_target_tokens < policy.effective_trigger(window)
    assert p.report.tokens_after_calibrated <= p.report.facts_target_tokens
    assert should_compact(p.report.tokens_after_calibrated, policy=policy, window=window, last_compaction_turn=None,
                          turn=1) is None, "the next request is under the trigger"
    assert policy.target_ratio < FACTS_RATIO


def test_the_facts_leave_room_for_the_next_turn_below_the_trigger() -> None:
    """The demo's shape (trigger 5.8k, 4.1k that no compaction shrinks, tools that return pages):
    filling the facts 80% of the way to the trigger left the request right after a compaction over
    it, so a compaction fired again at once. The facts stop what one turn adds short of the trigger,
    and never below the aim; a run of short exchanges keeps the whole 80%."""
    from longrun.context.aim import aim, facts_aim, turn_growth

    pages = [40, 650, 30, 700, 35, 620]  # an assistant call, then its tool result, three times
    growth = turn_growth(pages)
    assert growth == 1_350
    assert facts_aim(5_800, 4_100, 0.5, 7_800, growth) == aim(5_800, 4_100, 0.5, 7_800) == 4_950
    assert facts_aim(5_800, 4_100, 0.5, 7_800, turn_growth([40, 300, 30, 250])) == 5_800 - 550
    assert facts_aim(5_800, 4_100, 0.5, 7_800, turn_growth([20, 25, 30])) == 4_100 + int(1_700 * 0.8)
