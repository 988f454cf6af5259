"""`longrun facts` (issue 25): the run's fact store, current facts by default, superseded ones with
--all (marked with what replaced them), and which current facts the last projection left out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from longrun.cli import main
from longrun.models import CompactionReport, Projection, RunSpec
from longrun.models.context import FactRow
from longrun.store import Store

LONGRUN = str(Path(sys.executable).parent / "longrun")


def _row(seq: int, text_: str, **kw: object) -> FactRow:
    fields: dict[str, object] = {"kind": "value", "source": "user", "subject": text_.lower(), "source_seq": seq, **kw}
    return FactRow(seq=seq, text=text_, **fields)  # type: ignore[arg-type]


def _save(store: Store, run_id: str, version: int, summary: str, rows: list[FactRow]) -> None:
    p = Projection(version=version, base_state_version=1, covers_through_seq=9, summary=summary, messages=[],
                   report=CompactionReport(trigger="threshold"), new_facts=rows)
    store.save_projection(run_id, p, expected_state_version=1)


def _facts_run(store: Store) -> None:
    store.create_run("fx", RunSpec(objective="facts", workspace="/tmp/ws"))
    _save(store, "fx", 1, "- billing-svc listens on port 8443.\n- Never deploy on Fridays.",
          [_row(1, "billing-svc listens on port 8443.", value="8443"), _row(2, "Never deploy on Fridays.", kind="rule")])
    _save(store, "fx", 2, "## Facts\n- Never deploy on Fridays.",  # the port's correction was left out for room
          [_row(3, "Actually billing-svc listens on port 9443.", value="9443", final=True, supersedes=[1])])


def test_facts_lists_current_rows_and_marks_what_the_last_projection_left_out(
        store: Store, db_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _facts_run(store)
    monkeypatch.setenv("LONGRUN_DATABASE_URL", db_url)
    assert main(["facts", "fx"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == ("run fx: 2 current fact(s), 1 superseded; of those listed, the last projection (v2) left out 1 "
                      "(the model can recall them)")
    assert [line.split()[0] for line in out[1:]] == ["2", "3"]
    assert "LEFT OUT" in out[2] and "port 9443" in out[2] and "shown" in out[1] and "Fridays" in out[1]

    assert main(["facts", "fx", "--all", "--subject", "billing-svc"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in out[1:]] == ["1", "3"]
    assert "superseded by 3" in out[1] and "port 8443" in out[1]

    assert main(["facts", "fx", "--kind", "rule"]) == 0
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()[1:]] == ["2"]


def test_facts_json_through_the_installed_script(store: Store, db_url: str) -> None:
    store.create_run("fj", RunSpec(objective="facts", workspace="/tmp/ws"))
    _save(store, "fj", 1, "- Never deploy on Fridays.",
          [_row(1, "billing-svc listens on port 8443."), _row(2, "Never deploy on Fridays.", kind="rule")])
    env = {**os.environ, "LONGRUN_DATABASE_URL": db_url}
    done = subprocess.run([LONGRUN, "facts", "fj", "--json"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    data = json.loads(done.stdout)
    assert (data["projection_version"], data["current"], data["total"], data["left_out"]) == (1, 2, 2, 1)
    assert [(f["seq"], f["status"], f["last_projection"]) for f in data["facts"]] == \
        [(1, "current", "left out"), (2, "current", "shown")]
    missing = subprocess.run([LONGRUN, "facts", "nope", "--json"], env=env, capture_output=True, text=True, timeout=60)
    assert missing.returncode != 0 and "nope" in missing.stderr and "Traceback" not in missing.stderr
