"""Fused activities: the same steps as the one-by-one activities, in fewer round trips.

The Temporal server paces activities (tens of milliseconds between scheduling one and a worker
starting it), so a turn's time is mostly its number of activities. These two cut a turn with one
plain tool call from five activities (reconcile, model call, gate, run, commit) to two, without
dropping a step or a guarantee: each calls the very methods the one-by-one activities are, in the
same order, with the same idempotency, so a retried attempt resumes where the last one stopped.

- `turn`: commit the previous turn's results (and stop there when compaction must run first:
  compaction stays after the commit and before the next request), reconcile the ledger (stop
  when an effect is undecidable), the token cap and the budget from the spend ledger (stop when
  either is reached), then the model call.
- `tool_step`: the gate; when it allows the call without a human, the effect's intent on the
  version it checked, and the run. A moved head goes back through the gate. A retry after the
  intent was written skips straight to the run, whose reconcile decides whether the effect
  happened (the gate would rightly refuse the call's own unknown effect).
"""

from __future__ import annotations

from longrun.activities.base import action_id_for, brief
from longrun.activities.budget import SpendChecks
from longrun.activities.contract import Activities, implements
from longrun.activities.model import ModelActivities
from longrun.activities.run import RunActivities
from longrun.activities.tools import ToolActivities
from longrun.errors import ConfigError
from longrun.models.audit import GateVerdict
from longrun.models.gate import GateRule
from longrun.models.io import (
    GateInput,
    GateResult,
    IntentInput,
    ModelCallInput,
    RunRef,
    RunToolInput,
    ToolStepInput,
    ToolStepResult,
    TurnInput,
    TurnResult,
)
from longrun.telemetry import spans

MAX_REGATES = 3


class FusedActivities(ModelActivities, ToolActivities, RunActivities, SpendChecks):
    @implements(Activities.turn)
    def turn(self, inp: TurnInput) -> TurnResult:
        """See the module docstring."""
        # head, calibration, newest entry, projection, the results to commit and the transcript's
        # tail the request renders: one read for every step
        shas = [r.artifact_sha256 for r in inp.commit.results if r.artifact_sha256] if inp.commit else []
        try:
            tail_base: float | None = self.tail_base(inp.run_id)
        except ConfigError:  # no provider for the run's model here: the model call says so, after the commit
            tail_base = None
        self.read_turn(inp.run_id, shas, tail_base)
        commit = None
        if inp.commit is not None:
            commit = self.commit_turn(inp.commit)
            trigger = "operator" if inp.operator_compact else commit.compaction_trigger
            if trigger:
                return TurnResult(outcome="compact", state=commit.state, commit=commit, trigger=trigger)
        elif inp.operator_compact:
            return TurnResult(outcome="compact", state=brief(self.head(inp.run_id)), trigger="operator")
        reconciled = self.reconcile(RunRef(run_id=inp.run_id))
        if reconciled.undecidable:
            return TurnResult(
                outcome="undecidable", state=reconciled.state, commit=commit, undecidable=reconciled.undecidable
            )
        answered = self.answered(inp.run_id, inp.turn)
        capped = "" if answered else self.token_cap(inp.run_id)
        if capped:
            return TurnResult(outcome="cap", state=reconciled.state, commit=commit, cap=capped)
        budget = self.budget_check(inp.run_id, inp.turn)
        if budget is not None and (budget.reached or budget.refusal) and not answered:
            return TurnResult(outcome="budget", state=reconciled.state, commit=commit, budget=budget)
        model = self.model_call(
            ModelCallInput(
                run_id=inp.run_id, turn=inp.turn, overflow_retry=inp.overflow_retry,
                limit_override=inp.limit_override, limit_hard=inp.limit_hard,
            )
        )
        return TurnResult(outcome="called", state=reconciled.state, commit=commit, model=model, budget=budget)

    def answered(self, run_id: str, turn: int) -> bool:
        """This turn's model call already answered (a retry after a crash): the token cap and the
        budget were held before it was sent, and its answer is replayed rather than asked for again."""
        last = self.last_entry(run_id)
        return last is not None and last.role == "assistant" and last.turn == turn

    @implements(Activities.tool_step)
    def tool_step(self, inp: ToolStepInput) -> ToolStepResult:
        """See the module docstring. One `execute_tool` span: the gate and the run add to it."""
        with spans.tool_span(inp.run_id, inp.turn, inp.call.call_id, inp.call.name, self.redactor):
            return self._tool_step(inp)

    def _tool_step(self, inp: ToolStepInput) -> ToolStepResult:
        action_id = action_id_for(inp.run_id, inp.turn, inp.call.index)
        head = self.read_call(inp.run_id, inp.call)  # the head and the call: one read for every step
        if self.effect_of(inp.run_id, action_id) is not None:
            # an earlier attempt passed the gate and wrote the intent: resume at the run
            ran = self.run_tool(self._run_input(inp, action_id, head.state_version))
            gate = GateResult(
                verdict="allow", rule=GateRule.effects, reason="resumed after its intent was written",
                action_id=action_id, action_hash="", tool=ran.result.tool, kind="effect", state_version=head.state_version,
            )
            return ToolStepResult(gate=gate, ran=ran)
        version = inp.expected_version
        for _ in range(MAX_REGATES):
            gate = self.gate(
                GateInput(run_id=inp.run_id, turn=inp.turn, call=inp.call, expected_version=version, now=inp.now)
            )
            if gate.verdict != "allow" or gate.kind == "delegate":
                return ToolStepResult(gate=gate)
            run_version = gate.state_version
            if gate.kind == "effect":
                intent = self.record_intent(
                    IntentInput(
                        run_id=inp.run_id, call=inp.call, action_id=action_id, tool=gate.tool,
                        expected_version=gate.state_version, action_hash=gate.action_hash,
                        uses_approval=gate.rule is GateRule.approval, scope_id=gate.scope_id,
                    )
                )
                if intent.outcome == "stale" and intent.state is not None:
                    version = intent.state.version
                    continue
                run_version = intent.state_version
            ran = self.run_tool(self._run_input(inp, action_id, run_version))
            if ran.outcome == "stale":
                version = ran.state.version
                continue
            return ToolStepResult(gate=gate, ran=ran)
        refused = gate.model_copy(update={
            "verdict": "deny", "rule": GateRule.head,
            "reason": f"the task state kept changing while this call was checked ({MAX_REGATES} times); call it again",
        })
        self.audit(inp.run_id, GateVerdict(
            action_id=action_id, tool=refused.tool, verdict="deny", rule=GateRule.head.value, reason=refused.reason,
            action_hash=refused.action_hash, state_version=refused.state_version,
        ))
        return ToolStepResult(gate=refused)

    @staticmethod
    def _run_input(inp: ToolStepInput, action_id: str, version: int) -> RunToolInput:
        return RunToolInput(
            run_id=inp.run_id, turn=inp.turn, call=inp.call, action_id=action_id, expected_version=version, now=inp.now
        )
