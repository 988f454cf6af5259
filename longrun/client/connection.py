"""Opening the two halves of the stack a client needs: Temporal (the runs' workflows) and
PostgreSQL (their record). Each failure says which half does not answer and how to start it."""

from __future__ import annotations

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.runtime import Runtime

from longrun.errors import StackNotRunning
from longrun.store import Store, make_engine
from longrun.telemetry.tracing import tracing_interceptors

HINT_UP = "run `longrun dev up` to start the embedded stack, or set LONGRUN_DATABASE_URL and TEMPORAL_ADDRESS"


async def connect_temporal(target: str, namespace: str, *, runtime: Runtime | None = None) -> Client:
    """A Temporal client with the pydantic data converter every longrun workflow uses (on
    `runtime`, else the SDK's default one), and Temporal's tracing interceptor when the `OTEL_*`
    environment turns tracing on (a worker built on the client inherits it: one trace from the
    start through the workflow to its activities).

    Raises:
        StackNotRunning: Temporal does not answer at `target`.
        ConfigError: the `OTEL_*` environment names an exporter or protocol longrun cannot use.
    """
    interceptors = tracing_interceptors()
    try:
        return await Client.connect(target, namespace=namespace, data_converter=pydantic_data_converter,
                                    interceptors=interceptors, runtime=runtime)
    except Exception as exc:
        raise StackNotRunning(f"Temporal does not answer at {target} ({exc}); {HINT_UP}") from exc


def open_database(database_url: str | None) -> Store:
    """The store on `database_url`, checked with one round trip.

    Raises:
        StackNotRunning: no URL, or PostgreSQL does not answer.
    """
    if not database_url:
        raise StackNotRunning(f"no database configured; {HINT_UP}")
    try:
        store = Store(make_engine(database_url))
        store.ping()
    except Exception as exc:
        raise StackNotRunning(f"PostgreSQL does not answer at {database_url} ({exc}); {HINT_UP}") from exc
    return store


__all__ = ["HINT_UP", "connect_temporal", "open_database"]
