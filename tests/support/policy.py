"""A scripted *test* provider: replays a fixed plan of tool calls, one step per turn.

Used where a test needs an exact sequence of calls (an injection attempt, a path escape, a
custom effect). The step is the number of assistant messages already in the request, so a turn
retried after a crash gets the same answer. Usage comes from the project's estimator.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from longrun.context.tokens import estimate_request, estimate_text
from longrun.models.blocks import TextBlock, ToolUseBlock
from longrun.models.provider import ModelInfo, ModelRequest, ModelResponse, Usage


@dataclass
class PlanProvider:
    """`plan[i]` is the list of (tool, arguments) for turn i+1; past the plan it stops."""

    plan: list[list[tuple[str, dict[str, Any]]]]
    final_text: str = "Done: the plan is complete."
    name: str = "test-plan"
    info: ModelInfo = field(default_factory=lambda: ModelInfo(name="test-plan", window=200_000, max_output=8_192))
    requests: list[ModelRequest] = field(default_factory=list)

    def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        step = self.step(request)
        usage = Usage(input_tokens=estimate_request(request), output_tokens=20)
        if step >= len(self.plan):
            return ModelResponse(
                content=[TextBlock(text=self.final_text)], stop_reason="end_turn", usage=usage, model=self.name
            )
        calls = [
            ToolUseBlock(id=f"toolu_p{step + 1:03d}_{i}", name=tool, input=args)
            for i, (tool, args) in enumerate(self.plan[step])
        ]
        usage.output_tokens = sum(estimate_text(str(c.input)) for c in calls) + 10
        return ModelResponse(content=calls, stop_reason="tool_use", usage=usage, model=self.name)

    def step(self, request: ModelRequest) -> int:
        """Which turn of the plan this request asks for: the assistant messages it holds."""
        return sum(1 for m in request.messages if m.role == "assistant")

    def count_tokens(self, request: ModelRequest) -> int:
        return estimate_request(request)


GREETING_EDIT_PLAN: list[list[tuple[str, dict[str, Any]]]] = [
    [("set_next_action", {"next_action": "edit"})],
    [("apply_patch", {"path": "hello.txt", "old": "helo", "new": "hello"})],
    [("set_next_action", {"next_action": "stop"})],
]
"""The smallest run that needs an approval: one patch of `greeting_workspace`'s hello.txt."""


def greeting_workspace(tmp_path: Any) -> Any:
    """A workspace with one file, hello.txt, whose greeting has a typo."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "hello.txt").write_text("helo world\n")
    return ws
