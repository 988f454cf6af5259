"""The embedded dev stack: starts from nothing, is reused, reports status, stops; external parts
given by environment variables are used and never started or stopped."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import psutil
import psycopg
import pytest
from temporalio.testing import WorkflowEnvironment

from longrun.errors import StackNotRunning
from longrun.models import RunSpec
from longrun.service import devstack
from longrun.service.settings import Settings
from longrun.store import Store, head_revision, libpq_url


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("LONGRUN_DATABASE_URL", "TEMPORAL_ADDRESS", "LONGRUN_NAMESPACE"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def home(tmp_path: Path, clean_env: None) -> Iterator[Path]:
    home = tmp_path / "lr"
    yield home
    devstack.down(home)  # whatever the test did, leave no server behind


def _tcp_open(address: str) -> bool:
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=1):
            return True
    except OSError:
        return False


def _db_answers(url: str) -> bool:
    try:
        with psycopg.connect(libpq_url(url), connect_timeout=2) as conn:
            conn.execute("SELECT 1")
        return True
    except psycopg.Error:
        return False


@pytest.mark.slow
def test_stack_starts_is_reused_reports_and_stops(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = devstack.status(home)
    assert (before.database_ok, before.temporal_ok) == (False, False)
    assert "not started: run `longrun dev up`" in str(before)

    port, ui_port = devstack.free_port(), devstack.free_port()
    info = devstack.up(home, temporal_port=port, ui_port=ui_port)
    assert info.started == ["postgres", "temporal"] and info.reused == []
    assert info.temporal_address == f"127.0.0.1:{port}"
    assert info.temporal_ui == f"http://127.0.0.1:{ui_port}"
    assert info.schema_revision == head_revision()
    assert info.database_url.startswith("postgresql://")
    assert _tcp_open(info.temporal_address) and _db_answers(info.database_url)
    assert psutil.Process(info.temporal_pid).is_running()
    assert (home / "pg" / "PG_VERSION").exists() and (home / "temporal.db").exists()

    # stack.json is what Settings reads
    written = json.loads((home / "stack.json").read_text())
    assert written["database_url"] == info.database_url and written["temporal_address"] == info.temporal_address
    monkeypatch.setenv("LONGRUN_HOME", str(home))
    settings = Settings.from_env()
    assert (settings.database_url, settings.temporal_address) == (info.database_url, info.temporal_address)

    # the database is migrated and usable
    with Store.from_url(info.database_url) as store:
        store.create_run("dev-smoke", RunSpec(objective="smoke", workspace="/tmp"))
        assert store.verify_chain("dev-smoke").ok

    again = devstack.up(home)
    assert again.started == [] and again.reused == ["postgres", "temporal"]
    assert (again.postgres_pid, again.temporal_pid) == (info.postgres_pid, info.temporal_pid)
    assert again.temporal_address == info.temporal_address

    st = devstack.status(home)
    assert st.ok and st.database_ok and st.temporal_ok
    assert f"schema {head_revision()}" in st.database_detail and "Temporal serving" in st.temporal_detail
    as_json = json.loads(st.to_json())
    assert as_json["ok"] is True and as_json["temporal_address"] == info.temporal_address
    assert as_json["temporal_pid"] == info.temporal_pid and as_json["postgres_pid"] == info.postgres_pid

    devstack.down(home)
    assert not _tcp_open(info.temporal_address)
    assert not _db_answers(info.database_url)
    assert not psutil.pid_exists(info.temporal_pid) or \
        psutil.Process(info.temporal_pid).status() == psutil.STATUS_ZOMBIE
    after = devstack.status(home)
    assert (after.database_ok, after.temporal_ok) == (False, False)

    # data survives a restart: the run created above is still there
    restarted = devstack.up(home, temporal_port=devstack.free_port(), ui=False)
    assert restarted.started == ["postgres", "temporal"] and restarted.temporal_ui is None
    with Store.from_url(restarted.database_url) as store:
        assert store.load_state("dev-smoke").objective == "smoke"


async def test_external_parts_are_used_not_started(
    home: Path, empty_db_url: str, temporal_env: WorkflowEnvironment, monkeypatch: pytest.MonkeyPatch
) -> None:
    address = temporal_env.client.service_client.config.target_host
    monkeypatch.setenv("LONGRUN_DATABASE_URL", empty_db_url)
    monkeypatch.setenv("TEMPORAL_ADDRESS", address)

    info = devstack.up(home)
    assert info.started == [] and info.reused == []
    assert (info.database_embedded, info.temporal_embedded) == (False, False)
    assert (info.database_url, info.temporal_address) == (empty_db_url, address)
    assert info.schema_revision == head_revision()  # the external database was migrated
    assert not (home / "pg").exists() and not (home / "temporal.pid").exists()

    st = devstack.status(home)
    assert st.ok and (st.postgres_pid, st.temporal_pid) == (None, None)

    devstack.down(home)  # leaves external servers alone
    assert _db_answers(empty_db_url) and _tcp_open(address)
    assert devstack.status(home).ok


def test_external_parts_that_do_not_answer_say_what_to_do(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LONGRUN_DATABASE_URL", f"postgresql://nobody@/x?host={home}/no-such-socket-dir")
    with pytest.raises(StackNotRunning, match="LONGRUN_DATABASE_URL does not answer.*unset the variable"):
        devstack.up(home)


def test_temporal_address_that_does_not_answer_says_what_to_do(
    home: Path, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LONGRUN_DATABASE_URL", db_url)
    monkeypatch.setenv("TEMPORAL_ADDRESS", f"127.0.0.1:{devstack.free_port()}")
    with pytest.raises(StackNotRunning, match="TEMPORAL_ADDRESS .* does not answer.*unset the variable"):
        devstack.up(home)
    st = devstack.status(home)
    assert st.database_ok and not st.temporal_ok


def test_a_taken_default_port_is_not_ours_so_another_is_chosen() -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        taken = squatter.getsockname()[1]
        chosen = devstack._pick_port(None, taken, set())
        assert chosen != taken
        with pytest.raises(StackNotRunning, match=f"port {taken} is taken by another program"):
            devstack._pick_port(taken, taken, set())
