"""Thin Temporal activity definitions over the store, the tools, the providers and the context
pipeline. `AgentActivities(deps).all()` is what a worker registers; `contract.Activities` is what
the workflow calls; `boundary.ErrorMappingInterceptor` maps every activity's errors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from longrun.activities.base import Deps, action_id_for
from longrun.activities.boundary import ErrorMappingInterceptor, ErrorType, to_application_error
from longrun.activities.budget import BudgetActivities
from longrun.activities.children import ChildActivities
from longrun.activities.contract import Activities, declarations
from longrun.activities.decisions import DecisionActivities
from longrun.activities.fused import FusedActivities
from longrun.activities.mcp import McpActivities
from longrun.activities.notify import NotifyActivities
from longrun.activities.start import StartActivities


class AgentActivities(FusedActivities, ChildActivities, BudgetActivities, DecisionActivities, NotifyActivities, McpActivities,
                      StartActivities, Activities):
    """Every activity of the run workflow, sharing one set of dependencies. `Activities` comes
    last: its declarations are what the implementations before it override (and mypy checks)."""

    def all(self) -> list[Callable[..., Any]]:
        """The bound implementation of every declared activity, in declaration order."""
        return [getattr(self, fn.__name__) for fn in declarations().values()]


__all__ = [
    "Activities",
    "AgentActivities",
    "Deps",
    "ErrorMappingInterceptor",
    "ErrorType",
    "action_id_for",
    "to_application_error",
]
