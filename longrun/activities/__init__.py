"""Thin Temporal activity definitions over the store, the tools, the providers and the context
pipeline. `AgentActivities(deps).all()` is what a worker registers."""

from __future__ import annotations

from longrun.activities.base import Deps, action_id_for
from longrun.activities.children import ChildActivities
from longrun.activities.model import ModelActivities
from longrun.activities.run import RunActivities
from longrun.activities.tools import ToolActivities


class AgentActivities(ModelActivities, ToolActivities, RunActivities, ChildActivities):
    """Every activity of the run workflow, sharing one set of dependencies."""

    def all(self) -> list:
        return [
            self.load_run,
            self.record_event,
            self.grant_approval,
            self.commit_turn,
            self.steer,
            self.ask_human,
            self.finish_run,
            self.model_call,
            self.compact,
            self.gate,
            self.record_intent,
            self.run_tool,
            self.reconcile,
            self.create_child,
            self.collect_child,
        ]


__all__ = ["AgentActivities", "Deps", "action_id_for"]
