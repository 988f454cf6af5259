"""`AgentRunInterface` (what clients call) declares the same workflow as `AgentRunWorkflow` (what
the worker runs): the same type name, input and result, and every update, query and signal with
the same name, argument types and result type. A handler renamed or retyped on one side and not
the other fails here, not as a run that never answers a client's call."""

from __future__ import annotations

import pytest
from temporalio.workflow import _Definition

from longrun.workflows import approvals, scopes
from longrun.workflows.agent_run import WORKFLOW_NAME, AgentRunWorkflow
from longrun.workflows.interface import REFUSAL_AUDITED, SIGNING_KEYS_REVOKED, AgentRunInterface

IMPL = _Definition.must_from_class(AgentRunWorkflow)
CALLER = _Definition.must_from_class(AgentRunInterface)


def test_the_workflow_type_input_and_result_are_the_same() -> None:
    assert CALLER.name == IMPL.name == WORKFLOW_NAME == "longrun.AgentRun"
    assert CALLER.arg_types == IMPL.arg_types
    assert CALLER.ret_type == IMPL.ret_type


@pytest.mark.parametrize("kind", ["updates", "queries", "signals"])
def test_every_handler_has_the_same_name_and_types_on_both(kind: str) -> None:
    impl, caller = getattr(IMPL, kind), getattr(CALLER, kind)
    assert sorted(caller) == sorted(impl), f"{kind} differ: interface {sorted(caller)}, workflow {sorted(impl)}"
    for name, handler in caller.items():
        assert handler.arg_types == impl[name].arg_types, (kind, name)
        assert getattr(handler, "ret_type", None) == getattr(impl[name], "ret_type", None), (kind, name)
        assert handler.fn.__name__ == impl[name].fn.__name__, (kind, name)  # the attribute clients name


def test_the_workflow_modules_use_the_interface_strings() -> None:
    assert approvals.REFUSAL_AUDITED is REFUSAL_AUDITED
    assert scopes.SIGNING_KEYS_REVOKED is SIGNING_KEYS_REVOKED


async def test_the_interface_is_never_the_implementation() -> None:
    with pytest.raises(NotImplementedError, match="AgentRunWorkflow"):
        await AgentRunInterface().pause()
