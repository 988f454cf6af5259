"""Temporal's RPC failures become longrun's errors by status code (`longrun.client.calls`):
an unknown run is `RunNotFoundError`, a server that does not answer is `StackNotRunning`."""

from __future__ import annotations

import pytest

import longrun
from longrun.client import calls


@pytest.mark.timeout(60)
async def test_a_run_temporal_does_not_know_is_not_found(temporal_client):
    assert await calls.query_status(temporal_client, "run-nobody-0000") is None
    with pytest.raises(longrun.RunNotFoundError, match="unknown run id 'run-nobody-0000'"):
        await calls.control(temporal_client, "run-nobody-0000", "pause")


@pytest.mark.timeout(60)
async def test_status_of_an_unknown_run_raises_not_found(store, db_url, temporal_env):
    target = temporal_env.client.service_client.config.target_host
    async with await longrun.Client.connect(target=target, namespace="default", database_url=db_url) as client:
        with pytest.raises(longrun.RunNotFoundError):
            await client.status("run-nobody-0001")
        with pytest.raises(longrun.RunNotFoundError):
            await client.pause("run-nobody-0001")


@pytest.mark.timeout(60)
async def test_a_temporal_that_does_not_answer_is_stack_not_running(db_url):
    with pytest.raises(longrun.StackNotRunning, match="Temporal does not answer at 127.0.0.1:9"):
        await longrun.Client.connect(target="127.0.0.1:9", namespace="default", database_url=db_url)
