"""Path escapes and command injection attempted by the model are denied by the gate with a
clear error that reaches the model, every verdict is audited, and nothing runs."""

from __future__ import annotations

import sys

import pytest

from longrun.models.spec import RunSpec
from tests.support.harness import running_worker
from tests.support.policy import PlanProvider

pytestmark = pytest.mark.slow

ALLOWED = [sys.executable, "-c", "print('ok')"]


async def test_escapes_and_injection_are_denied_audited_and_never_run(store, temporal_client, tmp_path):
    ws = tmp_path / "proj"
    ws.mkdir()
    (ws / "a.txt").write_text("inside\n")
    outside = tmp_path / "secret.txt"
    outside.write_text("TOP SECRET\n")
    sibling = tmp_path / "projevil"
    sibling.mkdir()
    (sibling / "x").write_text("sibling\n")
    (ws / "link").symlink_to(outside)
    marker = tmp_path / "pwned"
    attempts = [
        ("read_file", {"path": "../secret.txt"}),
        ("read_file", {"path": str(outside)}),
        ("read_file", {"path": "../projevil/x"}),
        ("read_file", {"path": "link"}),
        ("list_dir", {"path": "/etc"}),
        ("run_command", {"argv": [*ALLOWED[:-1], f"print('ok'); open('{marker}','w')"]}),
        ("run_command", {"argv": ["sh", "-c", f"touch {marker}"]}),
        ("run_command", {"argv": [*ALLOWED, "&&", "touch", str(marker)]}),
        ("run_command", {"argv": [*ALLOWED, f"$(touch {marker})"]}),
        ("run_command", {"argv": [*ALLOWED, f"`touch {marker}`"]}),
        ("run_command", {"argv": [*ALLOWED, f"\ntouch {marker}"]}),
        ("run_command", {"argv": [*ALLOWED, f"--output={marker}"]}),
        ("read_file", {"path": "a.txt"}),
        ("run_command", {"argv": ALLOWED}),
    ]
    plan = [[("set_next_action", {"next_action": "test"})], *[[a] for a in attempts]]
    provider = PlanProvider(plan=plan)
    async with running_worker(temporal_client, store, provider=provider) as h:
        run_id = await h.start(RunSpec(objective="probe", workspace=str(ws), allowed_commands=[ALLOWED]))
        result = await h.result(run_id)
    assert result.status == "completed"
    assert not marker.exists(), "an injected command ran"

    verdicts = [r.event for r in store.audit(run_id) if r.kind == "gate_verdict"]
    by_tool = [(v.tool, v.verdict) for v in verdicts]
    assert by_tool[1:6] == [("read_file", "deny")] * 4 + [("list_dir", "deny")]
    assert by_tool[6:13] == [("run_command", "deny")] * 7
    assert by_tool[13:] == [("read_file", "allow"), ("run_command", "allow")]
    assert all(v.reason for v in verdicts if v.verdict == "deny")

    # the model saw each refusal as an error tool_result naming the problem
    errors = [
        b for m in provider.requests[-1].messages for b in m.content
        if getattr(b, "type", "") == "tool_result" and b.is_error
    ]
    assert len(errors) == 12
    assert all("denied by the invariant gate" in str(b.content) for b in errors)
    assert "TOP SECRET" not in str([m.model_dump() for m in provider.requests[-1].messages])
    ran = [r.event for r in store.audit(run_id) if r.kind == "tool_ran"]
    assert [e.tool for e in ran if not e.is_error][-1] == "run_command"
