"""`read_artifact` reads only within the run's family (issue 15, finding 6).

Artifacts are stored once per sha256 for every run, and 12-hex prefixes of tool outputs appear in
audit logs; before the fix any run could read another run's output from one. Now a run reads the
artifacts it, its parent or its children stored (`run_artifacts`, migration 0005), and another
run's prefix or full hash is refused as if nobody had stored it.
"""

from __future__ import annotations

import psycopg
import pytest

from longrun.errors import ToolError
from longrun.models.audit import ToolRan
from longrun.models.spec import RunSpec
from longrun.store import InvalidInputError, Store, libpq_url, migrate
from longrun.store.roles import app_role_name
from longrun.tools import READ_ARTIFACT, ToolContext
from longrun.tools.artifacts import RunArtifacts
from tests.support.harness import running_worker
from tests.support.policy import PlanProvider


def _spec(tmp_path) -> RunSpec:
    return RunSpec(objective="o", workspace=str(tmp_path))


def _read(store: Store, run_id: str, ref: str) -> str:
    assert READ_ARTIFACT.run is not None
    ctx = ToolContext(run_id=run_id, workspace=None, artifacts=RunArtifacts(store, run_id))  # type: ignore[arg-type]
    return READ_ARTIFACT.run({"sha256": ref}, ctx).text


def test_another_runs_prefix_and_hash_are_refused(store: Store, tmp_path) -> None:
    store.create_run("alice-run", _spec(tmp_path))
    store.create_run("bob-run", _spec(tmp_path))
    mine = store.put_artifact(b"alice's test output\n", run_id="alice-run")
    theirs = store.put_artifact(b"bob's deploy log: DB_HOST=10.0.0.7\n", run_id="bob-run")

    assert _read(store, "alice-run", mine[:12]) == "alice's test output"
    assert _read(store, "alice-run", mine) == "alice's test output"
    for ref in (theirs[:12], theirs[:40], theirs):
        with pytest.raises(ToolError, match="this run, its parent or its children") as info:
            _read(store, "alice-run", ref)
        assert "bob" not in str(info.value) and "10.0.0.7" not in str(info.value)
    assert _read(store, "bob-run", theirs[:12]) == "bob's deploy log: DB_HOST=10.0.0.7"
    # the same answer as for a hash nobody stored: no oracle for what other runs hold
    with pytest.raises(InvalidInputError, match="no artifact of this run, its parent or its children"):
        store.resolve_family_artifact_prefix("alice-run", "0123456789ab")
    with pytest.raises(InvalidInputError, match="no artifact of this run, its parent or its children"):
        store.resolve_family_artifact_prefix("alice-run", theirs[:12])


def test_the_family_is_the_run_its_parent_and_its_children(store: Store, tmp_path) -> None:
    store.create_run("parent", _spec(tmp_path))
    store.create_run("child-1", _spec(tmp_path), parent_run_id="parent")
    store.create_run("child-2", _spec(tmp_path), parent_run_id="parent")
    store.create_run("grandchild", _spec(tmp_path), parent_run_id="child-1")
    art = {r: store.put_artifact(f"output of {r}\n".encode(), run_id=r)
           for r in ("parent", "child-1", "child-2", "grandchild")}
    readable = {
        "parent": {"parent", "child-1", "child-2"},
        "child-1": {"child-1", "parent", "grandchild"},
        "child-2": {"child-2", "parent"},
        "grandchild": {"grandchild", "child-1"},
    }
    for reader, allowed in readable.items():
        for owner, sha in art.items():
            if owner in allowed:
                assert _read(store, reader, sha[:12]) == f"output of {owner}", (reader, owner)
            else:
                with pytest.raises(ToolError, match="this run, its parent or its children"):
                    _read(store, reader, sha[:12])


def test_the_same_bytes_stored_by_two_runs_are_readable_by_both(store: Store, tmp_path) -> None:
    store.create_run("a", _spec(tmp_path))
    store.create_run("b", _spec(tmp_path))
    sha = store.put_artifact(b"exit code: 0\n", run_id="a")
    assert store.put_artifact(b"exit code: 0\n", run_id="b") == sha
    assert _read(store, "a", sha[:12]) == _read(store, "b", sha[:12]) == "exit code: 0"


def test_the_app_role_may_read_and_add_links_only(db_url: str) -> None:
    role = app_role_name()
    with psycopg.connect(libpq_url(db_url)) as conn:
        privileges = {p: conn.execute("SELECT has_table_privilege(%s, 'run_artifacts', %s)", (role, p)).fetchone()[0]
                      for p in ("SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE")}
    assert privileges == {"SELECT": True, "INSERT": True, "UPDATE": False, "DELETE": False, "TRUNCATE": False}


def test_the_migration_links_the_artifacts_runs_stored_before_it(empty_db_url: str, tmp_path) -> None:
    migrate(empty_db_url, "0004")
    with Store.from_url(empty_db_url) as store:
        store.create_run("old", _spec(tmp_path))
        sha = store.put_artifact(b"stored before 0005\n")  # no link table yet
        store.append_audit("old", ToolRan(tool="run_command", call_id="c1", is_error=False, artifact_sha256=sha))
    migrate(empty_db_url)
    with Store.from_url(empty_db_url) as store:
        assert _read(store, "old", sha[:12]) == "stored before 0005"


@pytest.mark.slow
async def test_a_run_cannot_read_another_runs_output_from_its_audit_prefix(store, temporal_client, tmp_path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("the other team's private notes\n")
    async with running_worker(temporal_client, store, provider=PlanProvider(plan=[[("read_file", {"path": "notes.txt"})]])) as h:
        other = await h.start(RunSpec(objective="read the notes", workspace=str(ws)))
        assert (await h.result(other)).status == "completed"
    leaked = next(r.event for r in store.audit(other) if isinstance(r.event, ToolRan) and r.event.tool == "read_file")
    prefix = (leaked.artifact_sha256 or "")[:12]  # as it appears in the other run's audit log

    plan = [[("list_dir", {"path": "."})], [("read_artifact", {"sha256": prefix})]]
    provider = PlanProvider(plan=plan)
    async with running_worker(temporal_client, store, provider=provider) as h:
        run_id = await h.start(RunSpec(objective="look around", workspace=str(tmp_path)))
        assert (await h.result(run_id)).status == "completed"
    ran = [r.event for r in store.audit(run_id) if isinstance(r.event, ToolRan)]
    refused = next(e for e in ran if e.tool == "read_artifact")
    assert refused.is_error
    output = store.get_artifact(refused.artifact_sha256 or "").decode()
    assert "this run, its parent or its children" in output and "private notes" not in output
    # its own output stays readable by reference
    own = next(e for e in ran if e.tool == "list_dir")
    assert _read(store, run_id, (own.artifact_sha256 or "")[:12]) == store.get_artifact(own.artifact_sha256 or "").decode()
