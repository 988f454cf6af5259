"""Under a tight budget a fact outranks what tells a run less (issue 25, the kit's losses): a
context-only quote, a tail turn kept beyond the one the ledger was sized for, and the summary's
body. And an update that holds a new number does not replace an unrelated line on one shared word.

Each case was seen losing facts before its fix (the conformance kit's preferences, its release
approver, a fold's last round); the transcripts here are shaped otherwise, so the fix is the
cause's and not the kit's wording."""

from __future__ import annotations

from longrun.context import Calibration, compact, fit_request, ledger, render_request
from longrun.context.layout import SummaryParts, fit_all, parse
from longrun.context.state_block import notes_budget
from longrun.context.tokens import estimate_text
from longrun.models.blocks import Message, TextBlock
from longrun.models.context import TranscriptItem
from longrun.models.spec import ContextPolicy
from longrun.models.state import TaskState

FACTS = [
    "The billing service listens on port 8443 behind the internal gateway.",
    "We must never run database migrations during business hours.",
    "I prefer short answers that lead with the recommendation.",
    "The staging cluster lives in region ap-south-2 on three nodes.",
    "Owner of the payments runbook is Priya Natarajan from platform.",
    "Do not email customers without a ticket number attached.",
    "I'd rather see sizes in kibibytes than in kilobytes.",
    "Release train R-204 is blocked on the certificate renewal.",
    "The nightly export writes to bucket s3://exports-eu/nightly.",
    "Always tag images with the git sha, never with latest.",
    "I like diffs shown before any file is rewritten.",
    "The fraud model threshold is 0.82 since the last review.",
    "Support escalations go to the channel #ops-escalate first.",
    "Keep total cloud spend under 4,200 euros per month.",
    "Please keep replies free of emoji in commit messages.",
    "The legacy API v1 is retired on 2027-03-31 for all tenants.",
    "Current work item: porting the ledger exporter, step 2 of 4 done.",
    "The feature flag checkout_v3 is enabled for 10% of traffic.",
    "Backups are retained for 35 days in the cold tier.",
    "The on-call phone number ends in 4471 this quarter.",
    "Never paste production tokens into chat tools.",
    "The search index rebuild takes about 40 minutes on m5.large.",
    "The mobile app minimum version is 5.12.0 after the auth change.",
    "Vendor contract renewal is due on 2027-06-30 with Acme Corp.",
    "I want weekly summaries sent on Monday mornings.",
    "The warehouse sync job runs every 15 minutes from cron-02.",
    "Never rotate the signing keys without two approvers present.",
    "The CDN purge API key lives in vault path kv/cdn/purge.",
    "Grafana dashboard 'Checkout SLO' is the source of truth for latency.",
    "I prefer that you ask before deleting any branch.",
]
CHATTER = [
    "Looking at how the modules are laid out before touching anything.",
    "Thinking about whether the cache layer needs another pass later.",
    "Skimming the old design notes for the exporter to get oriented.",
    "Reading through the test layout to see what is covered already.",
]


def _transcript() -> list[TranscriptItem]:
    texts = [t for i, f in enumerate(FACTS) for t in (CHATTER[i % len(CHATTER)], f)] + CHATTER[:2]
    items: list[TranscriptItem] = []
    for t in texts:
        for m in (Message.user_text(t), Message(role="assistant", content=[TextBlock(text="Noted, carrying on with the plan.")])):
            items.append(TranscriptItem(seq=len(items) + 1, message=m))
    return items


def test_every_fact_is_kept_before_context_quotes_and_extra_tail_turns() -> None:
    """A 1k budget (as `longrun compact --budget 1000` sets it) over thirty facts between chatter:
    the facts fit once the chatter is neither quoted nor kept as a second tail turn, so none is
    left out (before: 4 left out, while two chatter messages were quoted and a chatter turn kept)."""
    items = _transcript()
    policy = ContextPolicy(budget=1000, trigger=1000, target_ratio=0.9)
    window = 1000 + policy.reserve_output + policy.headroom
    state = TaskState(run_id="t", state_version=1, objective="Keep the services healthy.")
    p = compact(items, previous=None, state=state, policy=policy, window=window, trigger="offline",
                calibration=Calibration())
    request = render_request(model="m", system="", projection=p, new_items=[], state=state, tools=[],
                             max_tokens=policy.reserve_output, notes_tokens=notes_budget(policy.limit(window)))
    sent = fit_request(request, limit=policy.limit(window), calibration=Calibration(),
                       keep_min_tail_turns=policy.min_tail_turns)[0]
    text = "\n".join(m.text() for m in sent.messages)
    assert p.report.ledger_left_out == 0
    assert [f for f in FACTS if f not in text] == []
    assert p.report.tokens_after_estimated <= policy.limit(window)


def test_an_update_with_a_new_number_does_not_replace_an_unrelated_line_on_one_shared_word() -> None:
    """"after the auth change" reads as an update, and "version" is the synonym both lines say,
    but a line that holds no value and shares one word is not the minimum version's old value."""
    kept = [e.unit.text for e in ledger.fold([], ledger.units_of([Message.user_text(t) for t in (
        "Release train R-204 is blocked on the certificate renewal.",
        "The mobile app minimum version is 5.12.0 after the auth change.")], {}))]
    assert kept == ["Release train R-204 is blocked on the certificate renewal.",
                    "The mobile app minimum version is 5.12.0 after the auth change."]


def test_the_last_resort_drops_context_quotes_and_the_body_before_facts() -> None:
    """Stage 3's last resort (`fit_all`), short of a few tokens: the quoted message without an
    instruction or a fact and the body go, the ledger and the instruction stay (before: the
    ledger's facts went first)."""
    entries = ledger.fold([], ledger.units_of([Message.user_text(f) for f in FACTS[:6]], {}))
    context = CHATTER[0]
    rule = "From now on, never merge without a green pipeline."
    body = "## Progress\n- read the exporter and the modules around it, nothing decided yet\n" * 3
    summary = SummaryParts(body=body, users=[context, rule], facts=entries).render()
    quotes_and_body = estimate_text(summary) - estimate_text(SummaryParts(users=[rule], facts=entries).render())
    text, users, cut = fit_all(summary, quotes_and_body - 5, [context, rule])
    parts = parse(text, users)
    assert [e.unit.text for e in parts.facts] == FACTS[:6] and parts.left_out == 0
    assert users == [rule] and cut == 1 and parts.body is None
