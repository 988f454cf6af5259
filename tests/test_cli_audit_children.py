"""`longrun audit` nests a run's subagents under it and verifies their chains too."""

from __future__ import annotations

import json

import psycopg

from longrun.cli import main
from longrun.models.audit import ToolRan
from longrun.models.blocks import Message
from longrun.models.spec import RunSpec
from longrun.store import libpq_url


def make_family(store, tmp_path):
    spec = RunSpec(objective="parent", workspace=str(tmp_path))
    store.create_run("run-p", spec)
    store.append_transcript("run-p", Message.user_text("Objective: parent"), token_estimate=4, turn=0)
    child = RunSpec(objective="Subagent brief:\nlook", workspace=str(tmp_path), read_only=True)
    store.create_run("run-p.t1c0", child, parent_run_id="run-p")
    store.append_transcript("run-p.t1c0", Message.user_text("Objective: look"), token_estimate=4, turn=0)
    store.append_audit("run-p.t1c0", ToolRan(tool="read_file", call_id="toolu_1", is_error=False))


def test_audit_shows_children_nested_and_verifies_them(store, db_url, tmp_path, monkeypatch, capsys):
    make_family(store, tmp_path)
    monkeypatch.setenv("LONGRUN_DATABASE_URL", db_url)
    assert main(["audit", "run-p", "--verify", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [c["run_id"] for c in out["children"]] == ["run-p.t1c0"]
    assert out["children"][0]["verify"]["ok"] and any(r["kind"] == "tool_ran" for r in out["children"][0]["timeline"])

    assert main(["audit", "run-p"]) == 0
    table = capsys.readouterr().out
    assert "subagent run-p.t1c0 (child of run-p)" in table

    with psycopg.connect(libpq_url(db_url), autocommit=True) as conn:
        conn.execute("ALTER TABLE audit_events DISABLE TRIGGER USER")
        conn.execute("UPDATE audit_events SET actor = 'mallory' WHERE run_id = 'run-p.t1c0' AND seq = 2")
        conn.execute("ALTER TABLE audit_events ENABLE TRIGGER USER")
    assert main(["audit", "run-p", "--verify"]) == 1
    err = capsys.readouterr().err
    assert "run-p.t1c0" in err and "audit_events" in err
