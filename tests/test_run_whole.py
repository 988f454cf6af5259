"""A whole run on a sample workspace with the scripted provider, real Postgres and the real
Temporal dev server: reads, notes, an edit that waits for approval, approve, the edit applied
once, the run completes, every chain verifies and the state history shows each transition."""

from __future__ import annotations

import shlex
import sys

import pytest

from longrun.models.spec import RunSpec
from longrun.models.state import EffectStatus
from tests.support.harness import copy_sample, running_worker

pytestmark = pytest.mark.slow

TEST_ARGV = [sys.executable, "-m", "unittest", "discover", "-s", "tests", "-q"]
OBJECTIVE = "The moving averages reported by the stats helper look wrong. Find the defect and propose a fix."


def tiny_spec(workspace, **extra) -> RunSpec:
    return RunSpec(
        objective=OBJECTIVE,
        constraints=[f"tests: {shlex.join(TEST_ARGV)}", *extra.pop("constraints", [])],
        workspace=str(workspace),
        approvers=["alice"],
        allowed_commands=[TEST_ARGV],
        **extra,
    )


async def test_whole_run_waits_for_approval_applies_edit_once_and_completes(store, temporal_client, tmp_path):
    ws = copy_sample("tiny", tmp_path)
    original = (ws / "stats.py").read_text()
    async with running_worker(temporal_client, store) as h:
        run_id = await h.start(tiny_spec(ws))
        waiting = await h.wait_for(run_id, lambda s: s.status == "waiting_approval", what="the approval request")
        pending = waiting.pending_approval
        assert pending is not None and pending.tool == "apply_patch"
        assert pending.arguments["path"] == "stats.py"
        assert (ws / "stats.py").read_text() == original, "nothing may change before the approval"

        from longrun.client import decide

        message = await decide.approve(h.client, run_id, pending.approval_id, "alice")
        assert "approved" in message
        result = await h.result(run_id)

    assert result.status == "completed", result.reason
    patched = (ws / "stats.py").read_text()
    assert patched != original
    state = store.load_state(run_id)
    edits = [e for e in store.all_effects(run_id, state) if e.tool == "apply_patch"]
    assert len(edits) == 1 and edits[0].status is EffectStatus.confirmed and edits[0].attempts == 1
    approvals = store.all_approvals(run_id, state)
    assert [a.approved_by for a in approvals] == ["alice"] and approvals[0].used
    assert state.notes, "the agent keeps its findings in the state"

    verdict = store.verify_chain(run_id)
    assert verdict.ok, str(verdict)
    history = store.state_history(run_id)
    assert [v.version for v in history] == list(range(1, state.state_version + 1))
    reasons = " | ".join(v.reason for v in history)
    assert "approval" in reasons and "intent" in reasons and "settle" in reasons

    kinds = [r.kind for r in store.audit(run_id)]
    for kind in ("run_started", "model_called", "gate_verdict", "approval_requested", "approval_granted",
                 "effect_intent", "effect_settled", "tool_ran", "run_finished"):
        assert kind in kinds, f"audit lacks {kind}"
    assert kinds.index("approval_granted") < kinds.index("effect_intent")
    # the run's test command ran after the fix, and passed
    ran = [r.event for r in store.audit(run_id) if r.kind == "tool_ran" and r.event.tool == "run_command"]
    assert ran and ran[-1].summary.startswith("exit code: 0")
