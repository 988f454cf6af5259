"""One error mapping on every activity: deterministic failures fail at the first attempt with a
stable type, transient ones are retried. Each case runs a real activity on a real worker (the
project's `build_worker`, so the mapping interceptor is the one production registers) and counts
the attempts from Temporal's own history."""

from __future__ import annotations

import uuid

import psycopg
import pytest
from sqlalchemy.exc import DBAPIError
from temporalio.api.enums.v1 import EventType
from temporalio.worker import Worker

from longrun.activities import ErrorType
from longrun.activities import names as N
from longrun.errors import StaleStateError, StoreUnavailable
from longrun.models.spec import RunSpec
from longrun.service.worker import build_worker
from longrun.store import Store, translate_db_error
from longrun.tools import default_registry
from tests.support.boundary_workflow import CallActivity, CallInput, CallOutcome
from tests.support.faults import FaultyStore, raising
from tests.support.policy import PlanProvider

pytestmark = pytest.mark.slow

MAX_ATTEMPTS = 5


async def call(client, store: Store, activity: str, arg: dict) -> tuple[CallOutcome, int]:
    """Run `activity(arg)` once under a 5-attempt policy; (outcome, attempts Temporal made)."""
    queue = f"tq-{uuid.uuid4().hex[:10]}"
    worker = build_worker(client, store, registry=default_registry(), provider_for=lambda _m: PlanProvider(plan=[]),
                          task_queue=queue)
    caller = Worker(client, task_queue=queue + "-caller", workflows=[CallActivity])
    async with worker, caller:
        handle = await client.start_workflow(
            CallActivity.run, CallInput(activity=activity, arg=arg, task_queue=queue, max_attempts=MAX_ATTEMPTS),
            id=f"call-{uuid.uuid4().hex[:10]}", task_queue=queue + "-caller",
        )
        outcome = await handle.result()
        history = await handle.fetch_history()
    started = [e.activity_task_started_event_attributes.attempt for e in history.events
               if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED]
    return outcome, max(started)


def new_run(store: Store, tmp_path, run_id: str = "run-errs") -> str:
    store.create_run(run_id, RunSpec(objective="x", workspace=str(tmp_path)))
    return run_id


async def test_an_unknown_run_fails_at_once(store, temporal_client):
    outcome, attempts = await call(temporal_client, store, N.LOAD_RUN, {"run_id": "run-nobody"})
    assert (outcome.error_type, outcome.non_retryable, attempts) == (ErrorType.RUN_NOT_FOUND.value, True, 1)
    assert "unknown run id 'run-nobody'" in outcome.message


async def test_a_stale_version_fails_at_once(store, temporal_client, tmp_path):
    run_id = new_run(store, tmp_path)
    faulty = FaultyStore(store)
    faulty.inject("reapply_on_head", raising(StaleStateError(run_id, 1, 2)), times=100)
    outcome, attempts = await call(temporal_client, faulty, N.ASK_HUMAN, {"run_id": run_id, "reason": "r"})
    assert (outcome.error_type, outcome.non_retryable, attempts) == (ErrorType.STALE_STATE.value, True, 1)
    assert faulty.fired["reapply_on_head"] == 1


async def test_invalid_input_fails_at_once(store, temporal_client, tmp_path):
    run_id = new_run(store, tmp_path)
    arg = {"run_id": run_id, "constraint": False, "turn": 1, "instruction_id": 7}
    outcome, attempts = await call(temporal_client, store, N.STEER, arg)
    assert (outcome.error_type, outcome.non_retryable, attempts) == (ErrorType.INVALID_INPUT.value, True, 1)
    assert "has no instruction 7" in outcome.message


async def test_a_database_that_does_not_answer_is_retried_to_the_policys_limit(temporal_client, tmp_path):
    with Store.from_url("postgresql://longrun@127.0.0.1:9/longrun", connect_args={"connect_timeout": 1}) as down:
        outcome, attempts = await call(temporal_client, down, N.LOAD_RUN, {"run_id": "run-any"})
    assert (outcome.error_type, outcome.non_retryable, attempts) == (ErrorType.STORE_UNAVAILABLE.value, False, MAX_ATTEMPTS)
    assert "PostgreSQL does not answer" in outcome.message


async def test_a_transient_failure_is_retried_until_it_passes(store, temporal_client, tmp_path):
    run_id = new_run(store, tmp_path)
    faulty = FaultyStore(store)
    faulty.inject("get_run", raising(StoreUnavailable("injected: the server is restarting")), times=2)
    outcome, attempts = await call(temporal_client, faulty, N.LOAD_RUN, {"run_id": run_id})
    assert outcome.ok and attempts == 3


@pytest.mark.parametrize("error, sqlstate", [
    (psycopg.errors.SerializationFailure, "40001"),
    (psycopg.errors.DeadlockDetected, "40P01"),
    (psycopg.errors.AdminShutdown, "57P01"),
    (psycopg.errors.TooManyConnections, "53300"),
])
def test_transient_sqlstates_become_store_unavailable(error, sqlstate):
    wrapped = DBAPIError.instance(None, None, error("injected"), psycopg.Error)
    assert getattr(wrapped.orig, "sqlstate", None) == sqlstate
    assert isinstance(translate_db_error(wrapped, "a write"), StoreUnavailable)


def test_deterministic_sqlstates_do_not():
    wrapped = DBAPIError.instance(None, None, psycopg.errors.UniqueViolation("injected"), psycopg.Error)
    assert not isinstance(translate_db_error(wrapped, "a write"), StoreUnavailable)
