"""`recall` (issue 25): what the compacted context left out is one call away. It answers from the
run's fact store in PostgreSQL (current rows first, superseded ones marked, with their source seq,
speaker and lineage), and falls back to the transcript's text, saying so."""

from __future__ import annotations

from pathlib import Path

import pytest

from longrun.errors import ToolError
from longrun.models import CompactionReport, Message, Projection, RunSpec
from longrun.models.context import FactRow
from longrun.store import Store
from longrun.tools import default_registry
from longrun.tools.base import ToolContext
from longrun.tools.recall import MAX_OUTPUT_BYTES, RECALL, RunMemory


def _row(seq: int, text_: str, **kw: object) -> FactRow:
    fields: dict[str, object] = {"kind": "value", "source": "user", "subject": text_.lower(), "source_seq": seq + 1, **kw}
    return FactRow(seq=seq, text=text_, **fields)  # type: ignore[arg-type]


def _save(store: Store, run_id: str, version: int, rows: list[FactRow]) -> None:
    p = Projection(version=version, base_state_version=1, covers_through_seq=3, summary="s", messages=[],
                   report=CompactionReport(trigger="threshold"), new_facts=rows)
    store.save_projection(run_id, p, expected_state_version=1)


def _ctx(store: Store, run_id: str) -> ToolContext:
    return ToolContext(run_id=run_id, workspace=Path("."), memory=RunMemory(store, run_id))


def _recall(ctx: ToolContext, **args: object) -> str:
    assert RECALL.run is not None
    return RECALL.run(default_registry().validate_arguments("recall", args), ctx).text


def test_recall_answers_the_current_value_first_and_marks_the_superseded_one(store: Store) -> None:
    store.create_run("rc1", RunSpec(objective="recall", workspace="/tmp/ws"))
    _save(store, "rc1", 1, [_row(1, "billing-svc listens on port 8443.", value="8443"),
                            _row(2, "Never deploy on Fridays.", kind="rule", value="")])
    _save(store, "rc1", 2, [_row(3, "Actually billing-svc listens on port 9443.", value="9443", final=True,
                                 supersedes=[1], source_seq=7)])
    out = _recall(_ctx(store, "rc1"), query="billing-svc port")
    lines = out.splitlines()
    assert lines[0] == "1 current and 1 superseded fact(s) match 'billing-svc port':"
    assert lines[1] == "[fact 3] (value, said by user, transcript seq 7) Actually billing-svc listens on port 9443."
    assert "  value: 9443" in lines and "  supersedes fact 1: billing-svc listens on port 8443." in lines
    old = lines.index("[fact 1] (value, said by user, transcript seq 2) billing-svc listens on port 8443.")
    assert old > 1 and lines[old + 2] == "  SUPERSEDED by fact 3 (transcript seq 7)"
    assert "Fridays" not in out
    assert _recall(_ctx(store, "rc1"), query="deploy", kind="rule").splitlines()[0] == \
        "1 current and 0 superseded fact(s) match 'deploy' (kind rule):"


def test_recall_falls_back_to_the_transcript_and_says_so(store: Store) -> None:
    store.create_run("rc2", RunSpec(objective="recall", workspace="/tmp/ws"))
    store.append_transcript("rc2", Message.user_text("The staging bucket is s3://acme-stage-7."), token_estimate=9, turn=0)
    store.append_transcript("rc2", Message.user_text("Carry on."), token_estimate=3, turn=1)
    out = _recall(_ctx(store, "rc2"), query="staging bucket")
    assert out.splitlines()[0].startswith("no fact in the store matches 'staging bucket'; searched the text of the "
                                          "newest 200 transcript entries instead: 1 match(es), newest first")
    assert "[transcript seq 1, user] The staging bucket is s3://acme-stage-7." in out
    assert _recall(_ctx(store, "rc2"), query="kubernetes").endswith("nothing matches either")


def test_recall_output_is_capped() -> None:
    class Big:
        def facts(self) -> list[FactRow]:
            return [_row(i, f"service {i} listens on port {9000 + i}. " + "x" * 2000) for i in range(1, 30)]

        def recent_entries(self, limit: int) -> list[object]:
            return []

    out = _recall(ToolContext(run_id="r", workspace=Path("."), memory=Big()), query="service")
    assert out.endswith(f"[truncated at {MAX_OUTPUT_BYTES} bytes; narrow the query]")
    assert len(out.encode()) < MAX_OUTPUT_BYTES + 100


def test_recall_without_a_store_says_what_to_do() -> None:
    with pytest.raises(ToolError, match="no fact store is available to this run; search the workspace with grep"):
        _recall(ToolContext(run_id="r", workspace=Path(".")), query="port")
    with pytest.raises(ToolError, match="'kind' must be one of|kind"):
        default_registry().validate_arguments("recall", {"query": "port", "kind": "gossip"})


@pytest.mark.slow
async def test_a_run_calls_recall_and_the_call_is_audited(store: Store, temporal_client, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Through a real worker: the activity hands recall the run's store, and the call is a tool_ran
    event like every tool's, its output stored as an artifact."""
    from longrun.models.audit import ToolRan
    from tests.support.harness import running_worker
    from tests.support.policy import PlanProvider

    provider = PlanProvider(plan=[[("recall", {"query": "Fridays"})]])
    async with running_worker(temporal_client, store, provider=provider) as h:
        run_id = await h.start(RunSpec(objective="Never deploy on Fridays. Look around.", workspace=str(tmp_path)))
        assert (await h.result(run_id)).status == "completed"
    ran = next(r.event for r in store.audit(run_id) if isinstance(r.event, ToolRan) and r.event.tool == "recall")
    assert not ran.is_error
    output = store.get_artifact(ran.artifact_sha256 or "").decode()
    assert "no fact in the store matches 'Fridays'; searched the text of the newest 200 transcript entries" in output
    assert "Never deploy on Fridays." in output
