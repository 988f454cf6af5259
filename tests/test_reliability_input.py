"""Bad input wherever it enters gets a clear error, is recorded, and loses nothing:

- malformed run specs: the validation message names the field;
- unknown tools and malformed tool arguments from the model: the gate denies with a message naming
  the tool or the field, the model gets it as an error tool_result, the run goes on;
- 50 MB of tool output (a command printing it, a 50 MB file read): capped, recorded, memory bounded;
- binary and invalid UTF-8 output: decoded with replacement characters and a note;
- an approval for a finished run: a clear error, an `approval_refused` audit event, nothing else.
"""

from __future__ import annotations

import resource
import sys

import pytest
from pydantic import ValidationError

from longrun.client import decide
from longrun.client import runs as client_runs
from longrun.context.tokens import estimate_request
from longrun.errors import ApprovalError, ConfigError
from longrun.models.blocks import TextBlock, ToolUseBlock
from longrun.models.provider import ModelResponse, Usage
from longrun.models.spec import RunSpec
from longrun.tools.commands import MAX_OUTPUT_BYTES
from tests.support.harness import running_worker
from tests.support.policy import PlanProvider

FIFTY_MB = 50 * 1024 * 1024


class CountingPlan(PlanProvider):
    """Serves each step once, in order (PlanProvider counts the assistant messages of the request,
    and the 50 MB outputs trigger compaction, which shortens the request)."""

    served: int = 0

    def complete(self, request):
        step = self.served
        self.served += 1
        self.requests.append(request)
        usage = Usage(input_tokens=estimate_request(request), output_tokens=20)
        if step >= len(self.plan):
            return ModelResponse(content=[TextBlock(text=self.final_text)], stop_reason="end_turn", usage=usage,
                                 model=self.name)
        calls = [ToolUseBlock(id=f"toolu_c{step + 1:03d}_{i}", name=t, input=a) for i, (t, a) in enumerate(self.plan[step])]
        return ModelResponse(content=calls, stop_reason="tool_use", usage=usage, model=self.name)
PRINT_50MB = [sys.executable, "-c", f"import sys; sys.stdout.write('y' * {FIFTY_MB})"]
PRINT_BAD_BYTES = [sys.executable, "-c", "import sys; sys.stdout.buffer.write(b'ok \\xff\\xfe\\x00 \\xc3\\x28 end\\n')"]


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        (dict(objective="", workspace="/tmp"), "objective"),
        (dict(objective="o", workspace="relative/dir"), "workspace"),
        (dict(objective="o", workspace="/tmp", model="gpt-4"), "model"),
        (dict(objective="o", workspace="/tmp", caps={"max_turns": 0}), "caps.max_turns"),
        (dict(objective="o", workspace="/tmp", allowed_commands=[[]]), "allowed_commands"),
        (dict(objective="o", workspace="/tmp", approvers=[" "]), "approvers"),
        (dict(objective="o", workspace="/tmp", colour="blue"), "colour"),
        (dict(objective="o", workspace="/tmp", context={"keep": -1}), "context.keep"),
        (dict(objective="x" * 100_000, workspace="/tmp"), "objective"),
    ],
)
def test_malformed_run_specs_name_the_field(spec: dict, field: str) -> None:
    with pytest.raises(ValidationError) as info:
        RunSpec.model_validate(spec)
    locations = [".".join(str(p) for p in e["loc"]) for e in info.value.errors()]
    assert any(loc == field or loc.startswith(field) or field in e["msg"]
               for loc, e in zip(locations, info.value.errors(), strict=False)), (field, locations)
    assert field.split(".")[0] in str(info.value)


async def test_a_missing_workspace_is_refused_before_anything_is_written(store, temporal_client, tmp_path) -> None:
    spec = RunSpec(objective="o", workspace=str(tmp_path / "nope"))
    with pytest.raises(ConfigError, match="workspace .* does not exist"):
        await client_runs.start_run(temporal_client, store, spec, task_queue="unused", run_id="never")
    assert store.list_runs() == []


@pytest.mark.slow
async def test_bad_tool_calls_huge_and_binary_output_then_a_late_approval(store, temporal_client, tmp_path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("fine\n")
    with open(ws / "huge.txt", "wb") as f:  # 50 MB: one 40 MB line, then many short ones
        f.write(b"z" * (40 * 1024 * 1024) + b"\n")
        f.write(b"line\n" * ((FIFTY_MB - 40 * 1024 * 1024) // 5))
    (ws / "blob.bin").write_bytes(bytes(range(256)) * 64)
    (ws / "latin1.txt").write_bytes("café crème\n".encode("latin-1"))
    plan = [
        [("no_such_tool", {"x": 1})],
        [("read_file", {"path": 5})],
        [("read_file", {})],
        [("read_file", {"path": "a.txt", "bogus": True})],
        [("set_next_action", {"next_action": "sideways"})],
        [("set_next_action", {"next_action": "test"})],
        [("run_command", {"argv": PRINT_50MB})],
        [("read_file", {"path": "huge.txt"})],
        [("run_command", {"argv": PRINT_BAD_BYTES})],
        [("read_file", {"path": "blob.bin"})],
        [("read_file", {"path": "latin1.txt"})],
        [("read_file", {"path": "a.txt"})],
        [("set_next_action", {"next_action": "stop"})],
    ]
    provider = CountingPlan(plan=plan)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    async with running_worker(temporal_client, store, provider=provider) as h:
        spec = RunSpec(objective="survive bad input", workspace=str(ws), approvers=["alice"],
                       allowed_commands=[PRINT_50MB, PRINT_BAD_BYTES])
        run_id = await h.start(spec)
        result = await h.result(run_id, timeout=180)
        assert result.status == "completed", result.reason

        # an approval for the finished run: a clear error, recorded, nothing else changes
        before = store.verify_chain(run_id)
        state_before = store.load_state(run_id)
        with pytest.raises(ApprovalError, match="already finished"):
            await decide.approve(h.client, run_id, "apr-0000", "alice", store=store)
    rss_growth_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024

    audit = store.audit(run_id)
    verdicts = [r.event for r in audit if r.kind == "gate_verdict"]
    denied = {v.tool: v.reason for v in verdicts if v.verdict == "deny"}
    assert "no_such_tool" in denied and "no_such_tool" in denied["no_such_tool"]
    path_errors = [v.reason for v in verdicts if v.tool == "read_file" and v.verdict == "deny"]
    assert len(path_errors) == 3 and all("path" in r or "bogus" in r for r in path_errors), path_errors
    assert any("bogus" in r for r in path_errors)
    assert any("sideways" in v.reason or "next_action" in v.reason for v in verdicts
               if v.tool == "set_next_action" and v.verdict == "deny")

    # the model got every refusal as an error result and the run went on to the end
    results = [b for e in store.transcript(run_id) for b in e.message.content if getattr(b, "type", "") == "tool_result"]
    errors = [b for b in results if b.is_error]
    assert len(errors) >= 5
    assert any("no_such_tool" in str(b.content) for b in errors)

    ran = {r.event.call_id: r.event for r in audit if r.kind == "tool_ran"}
    outputs = [e for e in ran.values() if e.tool in ("run_command", "read_file")]
    big = [e for e in outputs if e.output_bytes > 100_000]
    assert big and all(e.output_bytes <= 2 * MAX_OUTPUT_BYTES + 1_100_000 for e in big), "output is capped"
    text = " ".join(str(b.content) for b in results)
    assert f"[truncated: {FIFTY_MB} bytes" in text, "the 50 MB command output is cut, and says so"
    assert "[line truncated]" in text and "the file goes on: call read_file with offset=" in text
    assert "\ufffd" in text and ("invalid UTF-8" in text or "replaced" in text)
    assert "[binary file" in text
    assert rss_growth_mb < 400, f"the worker's memory grew by {rss_growth_mb:.0f} MB for 50 MB outputs"

    refused = [r.event for r in audit if r.kind == "approval_refused"]
    assert len(refused) == 1 and "already finished" in refused[0].reason and refused[0].approver == "alice"
    assert store.load_state(run_id) == state_before
    after = store.verify_chain(run_id)
    assert before.ok and after.ok
