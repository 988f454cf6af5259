"""Tool activities: the invariant gate, the effects ledger (intent, settle, reconcile) and the
tool run itself.

Which version each write lands on: an effect's intent and a state tool's change on the version
the gate checked (a moved head sends the call back through the gate); the ledger's attempts and
settles on whatever the head is (they record what happened at the target, which no state
version changes)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from temporalio import activity

from longrun.activities.base import action_id_for, brief
from longrun.activities.changes import ChangeSetActivities
from longrun.activities.contract import Activities, implements
from longrun.activities.ledger_edits import clip_value, count_attempt, preview, prior_approval, settled, with_intent
from longrun.activities.signing_keys import SigningKeys
from longrun.auth.scopes import PATH_ARGUMENT, constraints_sha256, covering_scope
from longrun.errors import EffectUndecidable, InvalidToolCall, StaleStateError, ToolError
from longrun.invariants import GateFacts, evaluate
from longrun.mcp.registry import mcp_hint_note
from longrun.models.audit import EffectIntent, EffectSettled, GateVerdict, ScopeUsed, ToolRan
from longrun.models.blocks import ToolUseBlock
from longrun.models.canonical import action_hash
from longrun.models.gate import CallKind, GateRule
from longrun.models.io import (
    GateInput,
    GateResult,
    IntentInput,
    IntentResult,
    ReconcileResult,
    RunRef,
    RunToolInput,
    RunToolResult,
    ToolResultRef,
)
from longrun.models.state import EffectStatus, NextAction, TaskState, utcnow
from longrun.telemetry import spans
from longrun.tools.base import Tool, ToolContext

if TYPE_CHECKING:
    from opentelemetry.trace import Span


class ToolActivities(ChangeSetActivities):
    @implements(Activities.gate)
    def gate(self, inp: GateInput) -> GateResult:
        """Check the invariants over the persisted state; audit the verdict."""
        with spans.tool_span(inp.run_id, inp.turn, inp.call.call_id, inp.call.name, self.redactor) as span:
            result = self._gate(inp)
            spans.record_gate(span, kind=result.kind, verdict=result.verdict, rule=result.rule.value,
                              action_hash=result.action_hash, action_id=result.action_id, redactor=self.redactor)
            return result

    def _gate(self, inp: GateInput) -> GateResult:
        run_id = inp.run_id
        spec = self.spec(run_id)
        state = self.read_call(run_id, inp.call)
        name, arguments = self.tool_call(run_id, inp.call)
        action_id = action_id_for(run_id, inp.turn, inp.call.index)
        proposed = inp.proposed_version or state.state_version
        ahash = action_hash(name, arguments, proposed)
        kind: CallKind = "unknown"
        needs_approval, allowed = False, frozenset(NextAction)
        args_error: str | None = None
        check_error: str | None = None
        registry = self.tools_for(run_id)
        try:
            tool = registry.get(name)
            kind, needs_approval, allowed = tool.kind, tool.needs_approval, tool.allowed_next_actions
            arguments = registry.validate_arguments(name, arguments)
            if tool.check is not None:
                check_error = tool.check(arguments, self.tool_context(run_id, action_id, inp.now))
        except ToolError as exc:
            args_error = str(exc)
        missing = tuple(r.sha256 for r in state.artifact_refs if not self.store.has_artifact(r.sha256))
        scope, scope_refusal, keys = None, "", SigningKeys(self.store)
        if needs_approval and kind == "effect" and args_error is None:
            closed_scopes = self.store.closed_scopes(run_id) if state.closed.scopes else []
            scope, scope_refusal = covering_scope(state, name, arguments, inp.now, paths=tool.changed_paths(arguments),
                                                  key_refusal=keys.scope, closed=closed_scopes)
        decision = evaluate(
            GateFacts(
                state=state,
                expected_version=inp.expected_version,
                original_objective=spec.objective,
                tool_name=name,
                tool_kind=kind,
                needs_approval=needs_approval,
                allowed_next_actions=allowed,
                action_hash=ahash,
                now=inp.now,
                missing_artifacts=missing,
                tool_check_error=check_error,
                arguments_error=args_error,
                prior_approval=prior_approval(state, self.approvals_bound(run_id, ahash) if needs_approval else [],
                                               ahash, inp.now),
                read_only_run=spec.read_only,
                scope_id=scope.id if scope is not None else None,
                scope_refusal=scope_refusal,
                approval_key_refusal=keys.approval(state, ahash, inp.now) if needs_approval else "",
            )
        )
        reason = self.redactor.redact(decision.reason)
        if decision.verdict == "needs_approval":
            reason += mcp_hint_note(self.mcp_listing(run_id), name)
        self.audit(
            run_id,
            GateVerdict(
                action_id=action_id,
                tool=name,
                verdict=decision.verdict,
                rule=decision.rule,
                reason=reason,
                action_hash=ahash,
                state_version=state.state_version,
            ),
        )
        return GateResult(
            verdict=decision.verdict,
            rule=decision.rule,
            reason=reason,
            action_id=action_id,
            action_hash=ahash,
            tool=name,
            kind=kind,
            # only a pending approval shows its arguments; nothing else of the transcript crosses Temporal
            arguments_preview=self.redactor.redact_json(preview(arguments)) if decision.verdict == "needs_approval" else {},
            state_version=state.state_version,
            scope_id=scope.id if decision.rule is GateRule.scope and scope is not None else None,
        )

    @implements(Activities.record_intent)
    def record_intent(self, inp: IntentInput) -> IntentResult:
        """Write the effect's intent (status unknown) before the call, and use up the approval
        that covers it, in one compare-and-set on the version the gate checked.

        A head that moved past that version writes nothing: the result says `stale` and the call
        goes back through the gate, on the new state. An intent an earlier attempt of this same
        call already wrote (the worker died before answering) is found and its attempt counted."""
        self.read_call(inp.run_id, inp.call)
        name, arguments = self.tool_call(inp.run_id, inp.call)
        tool = self.tools_for(inp.run_id).get(name)
        head = self.head(inp.run_id)
        existing = self.effect_of(inp.run_id, inp.action_id)
        if existing is not None and head.effect(inp.action_id) is None:
            # settled and closed by an earlier attempt: nothing left to count in the state; the
            # run resumes at `run_tool`, which finds it settled and runs nothing
            attempt = existing.attempts + 1
            self.audit(inp.run_id, EffectIntent(action_id=inp.action_id, tool=inp.tool, attempt=attempt))
            return IntentResult(state_version=head.state_version, attempt=attempt, state=brief(head))
        if existing is not None:
            attempt = existing.attempts + 1
            new = self.reapply_on_head(
                inp.run_id, lambda s: count_attempt(s, inp.action_id, attempt), "ledger", f"attempt {attempt} of {inp.action_id}"
            )
            self.audit(inp.run_id, EffectIntent(action_id=inp.action_id, tool=inp.tool, attempt=attempt))
            return IntentResult(state_version=new.state_version, attempt=attempt, state=brief(new))
        if head.state_version != inp.expected_version:
            return IntentResult(state_version=head.state_version, attempt=0, outcome="stale", state=brief(head))
        before = None
        if tool.fingerprint is not None:
            before = tool.fingerprint(arguments, self.tool_context(inp.run_id, inp.action_id))

        def mutate(state: TaskState) -> TaskState:
            return with_intent(state, inp, before)

        keys, refusal = SigningKeys(self.store), None
        if inp.scope_id is not None:
            scope = head.scope(inp.scope_id)
            refusal = "no such scope" if scope is None else (
                scope.refusal(utcnow(), constraints_sha256(head.constraints)) or keys.scope(scope))
        elif inp.uses_approval:
            refusal = keys.approval(head, inp.action_hash, utcnow()) or None
        if refusal is not None:  # it ended (or its key was revoked) since the gate: back through the gate
            return IntentResult(state_version=head.state_version, attempt=0, outcome="stale", state=brief(head))
        try:
            new = self.write_at(inp.run_id, inp.expected_version, mutate, "ledger", f"intent {inp.action_id}")
        except StaleStateError:
            head = self.fresh_head(inp.run_id)
            return IntentResult(state_version=head.state_version, attempt=0, outcome="stale", state=brief(head))
        if inp.scope_id is not None:
            used = head.scope(inp.scope_id)  # as checked above; this write took one of its uses
            assert used is not None
            path = ", ".join(tool.changed_paths(arguments)) or str(arguments.get(PATH_ARGUMENT, ""))
            self.audit(inp.run_id, ScopeUsed(scope_id=used.id, action_id=inp.action_id, tool=inp.tool, path=path,
                                             action_hash=inp.action_hash, uses_left=used.max_uses - used.uses - 1),
                       actor=f"human:{used.granted_by}")
        self.audit(inp.run_id, EffectIntent(action_id=inp.action_id, tool=inp.tool, attempt=1))
        return IntentResult(state_version=new.state_version, attempt=1, state=brief(new))

    @implements(Activities.run_tool)
    def run_tool(self, inp: RunToolInput) -> RunToolResult:
        """Run one tool call. Effects: reconcile an unknown intent first (a retry after a crash
        must not apply it twice), then run, then settle confirmed/none. State tools write on the
        version the gate checked; a moved head runs nothing (`stale`: back through the gate)."""
        with spans.tool_span(inp.run_id, inp.turn, inp.call.call_id, inp.call.name, self.redactor) as span:
            result = self._run_tool(inp)
            if span is not None:
                self._trace_run(span, inp, result)
            return result

    def _trace_run(self, span: Span, inp: RunToolInput, result: RunToolResult) -> None:
        """How the call ran, on its span; its arguments and output only with content opted in."""
        name, arguments = self.tool_call(inp.run_id, inp.call)
        registry = self.tools_for(inp.run_id)
        kind = registry.get(name).kind if name in registry else "unknown"
        output = None
        if spans.content_on() and result.result.artifact_sha256:
            output = self.artifact(result.result.artifact_sha256).decode("utf-8", "replace")
        spans.record_tool_run(span, kind=kind, is_error=result.result.is_error, effect_status=result.effect_status,
                              outcome=result.outcome, arguments=arguments if spans.content_on() else None,
                              result=output, redactor=self.redactor)

    def _run_tool(self, inp: RunToolInput) -> RunToolResult:
        run_id = inp.run_id
        self.read_call(run_id, inp.call)
        name, arguments = self.tool_call(run_id, inp.call)
        registry = self.tools_for(run_id)
        tool = registry.get(name)
        arguments = registry.validate_arguments(name, arguments)
        ctx = self.tool_context(run_id, inp.action_id, inp.now)
        effect_status = sandbox = None
        if tool.kind == "state":
            applied = self._run_state_tool(run_id, tool, arguments, inp)
            if applied is None:
                head = self.fresh_head(run_id)
                stale = ToolResultRef(call_id=inp.call.call_id, tool=name, is_error=True, error_text="stale")
                return RunToolResult(result=stale, state=brief(head), outcome="stale")
            text, is_error = applied
        elif tool.kind == "read":
            text, is_error = self._run(tool, arguments, ctx)
        else:
            text, is_error, effect_status, sandbox = self._run_effect(run_id, tool, arguments, ctx, inp)
            note = self._edit_note(run_id, inp)
            if note:
                text = note + "\n" + text
        ref = self._store_result(run_id, inp, name, text, is_error, sandbox)
        state = self.head(run_id)
        return RunToolResult(result=ref, state=brief(state), effect_status=effect_status)

    def _edit_note(self, run_id: str, inp: RunToolInput) -> str:
        """What the model must be told when the approver edited the call it proposed: which
        arguments changed, to what, and by whom ('' for a call nobody edited)."""
        edited = self.edited_call(run_id, inp.call.seq, inp.call.call_id)
        if edited is None:
            return ""
        approval, now = edited
        entries = self.store.transcript(run_id, after_seq=inp.call.seq - 1, through_seq=inp.call.seq)
        proposed = next((dict(b.input) for b in entries[0].message.content
                         if isinstance(b, ToolUseBlock) and b.id == inp.call.call_id), {}) if entries else {}
        changed = [k for k in sorted(set(proposed) | set(now)) if proposed.get(k) != now.get(k)]
        shown = "; ".join(f"{k} is now {clip_value(now.get(k))}" for k in changed) or "no argument changed"
        return (f"[note: {approval.approved_by} edited this call before approving it, and it ran with the edited "
                f"arguments, not the ones you proposed. Changed: {shown}]")

    def _run_state_tool(
        self, run_id: str, tool: Tool, arguments: dict[str, Any], inp: RunToolInput
    ) -> tuple[str, bool] | None:
        """(text, is_error), or None when the head moved past the version the gate checked."""
        apply_state = tool.apply_state
        assert apply_state is not None
        try:
            new = self.write_at(
                run_id, inp.expected_version, lambda s: apply_state(s, arguments, inp.now), "model",
                f"{tool.name} (turn {inp.turn})",
            )
        except StaleStateError:
            return None
        except ToolError as exc:
            return f"error: {exc}", True
        return f"ok: {tool.name} applied; state_version is now {new.state_version}", False

    def _run(self, tool: Tool, arguments: dict[str, Any], ctx: ToolContext) -> tuple[str, bool]:
        assert tool.run is not None
        try:
            with self.heartbeating():
                outcome = tool.run(arguments, ctx)
            return outcome.text, outcome.is_error
        except ToolError as exc:
            return f"error: {exc}", True

    def _run_effect(
        self, run_id: str, tool: Tool, arguments: dict[str, Any], ctx: ToolContext, inp: RunToolInput
    ) -> tuple[str, bool, str, str | None]:
        """(text, is_error, the effect's status, where a command ran)."""
        assert tool.run is not None
        effect = self.effect_of(run_id, inp.action_id)
        if effect is None:
            raise InvalidToolCall(f"no intent recorded for {inp.action_id}: effects run only after their intent")
        if effect.status is not EffectStatus.unknown:
            return (
                f"already {effect.status.value} (external id {effect.external_id}); not run again",
                effect.status is EffectStatus.none,
                effect.status.value,
                None,
            )
        retry = activity.in_activity() and activity.info().attempt > 1
        if retry:
            attempts = effect.attempts + 1
            self.reapply_on_head(
                run_id, lambda s: count_attempt(s, inp.action_id, attempts), "ledger", f"attempt {attempts} of {inp.action_id}"
            )
            self.audit(run_id, EffectIntent(action_id=inp.action_id, tool=tool.name, attempt=attempts))
        if (retry or effect.attempts > 1) and tool.reconcile is not None:
            verdict = self.reconcile_effect(run_id, tool, arguments,
                                            self.tool_context(run_id, inp.action_id, inp.now, before=effect.before))
            if verdict.status == "confirmed":
                self._settle(run_id, inp.action_id, tool.name, EffectStatus.confirmed, verdict.external_id, "reconciled: " + verdict.detail, "reconciled")
                return f"already applied (reconciled, external id {verdict.external_id})", False, "confirmed", None
            if verdict.status == "undecidable":
                raise EffectUndecidable(f"cannot tell whether {inp.action_id} happened: {verdict.detail}")
        self.flush_before_effect()  # the verdict and the intent are in the audit before the effect runs
        try:
            with self.heartbeating():
                outcome = tool.run(arguments, ctx)
        except ToolError as exc:
            self._settle(run_id, inp.action_id, tool.name, EffectStatus.none, None, str(exc), "ran")
            return f"error: {exc}", True, "none", None
        status = EffectStatus.none if outcome.is_error else EffectStatus.confirmed
        external = outcome.external_id or (None if outcome.is_error else inp.action_id)
        first = outcome.text.splitlines()[0][:200] if outcome.text else ""
        text = outcome.text
        if status is EffectStatus.confirmed:  # a git change set: one commit, before the settle
            committed = self.commit_change(run_id, tool, arguments, inp.action_id, first)
            text = f"{text}\n{committed}" if committed else text
        self._settle(run_id, inp.action_id, tool.name, status, external, first, "ran")
        return text, outcome.is_error, status.value, outcome.sandbox

    def _settle(
        self, run_id: str, action_id: str, tool_name: str, status: EffectStatus, external_id: str | None,
        detail: str, how: Literal["ran", "reconciled"],
    ) -> None:
        self.reapply_on_head(
            run_id, lambda s: settled(s, action_id, status, external_id, detail), "ledger", f"settle {action_id}: {status.value}"
        )
        self.audit(
            run_id,
            EffectSettled(
                action_id=action_id, tool=tool_name, status=status.value, external_id=external_id, how=how,
                detail=self.redactor.redact(detail)[:500],
            ),
        )

    def _store_result(
        self, run_id: str, inp: RunToolInput, name: str, text: str, is_error: bool, sandbox: str | None = None
    ) -> ToolResultRef:
        text = self.redactor.redact(text)
        sha = self.put_result(run_id, text.encode("utf-8"))  # written with the `tool_ran` event below
        first = text.splitlines()[0][:200] if text else ""
        self.audit(
            run_id,
            ToolRan(tool=name, call_id=inp.call.call_id, is_error=is_error, artifact_sha256=sha, output_bytes=len(text.encode()), summary=first,
                    sandbox=sandbox),
        )
        return ToolResultRef(call_id=inp.call.call_id, tool=name, is_error=is_error, artifact_sha256=sha)

    @implements(Activities.reconcile)
    def reconcile(self, inp: RunRef) -> ReconcileResult:
        """Resolve every `unknown` effect through its tool's reconcile function. What cannot be
        decided stays unknown and the run asks a human (the gate denies new effects meanwhile)."""
        run_id = inp.run_id
        state = self.head(run_id)
        unknown = state.unknown_effects()
        confirmed = none = 0
        undecidable: list[str] = []
        registry = self.tools_for(run_id)
        for effect in unknown:
            found = self.tool_call_for_action(run_id, effect.action_id)
            tool = registry.get(effect.tool) if effect.tool in registry else None
            if found is None or tool is None or tool.reconcile is None:
                undecidable.append(effect.action_id)
                continue
            _, arguments = found
            verdict = self.reconcile_effect(run_id, tool, arguments,
                                            self.tool_context(run_id, effect.action_id, before=effect.before))
            if verdict.status == "undecidable":
                undecidable.append(effect.action_id)
                continue
            status = EffectStatus.confirmed if verdict.status == "confirmed" else EffectStatus.none
            self._settle(run_id, effect.action_id, effect.tool, status, verdict.external_id, "reconciled: " + verdict.detail, "reconciled")
            if status is EffectStatus.confirmed:
                confirmed += 1
            else:
                none += 1
        return ReconcileResult(
            checked=len(unknown), confirmed=confirmed, none=none, undecidable=undecidable, state=brief(self.head(run_id))
        )
