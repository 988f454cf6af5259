"""`ScriptedProvider`: the provider protocol around the scripted policies.

Each `complete()` picks the policy from the request alone: a run whose objective starts with
`Subagent brief:` is a child (`child.ChildPolicy`); a parent whose objective asks for a rename
("Rename `old` to `new` ...", `rename.Rename.parse`) gets the refactor (`refactor.RefactorPolicy`);
any other parent the forensic review (`policy.Policy`, told whether a `task` tool is offered).
Tool-use ids are `toolu_s{turn:04d}_{i}_{digest}`, where `digest` hashes the request, so they are unique across a compacted run and identical when the
very same request is retried. Usage comes from longrun's own token estimator; cache fields are 0.
"""

from __future__ import annotations

from longrun.context.tokens import estimate_messages, estimate_request
from longrun.models.blocks import Block, Message, TextBlock, ToolUseBlock
from longrun.models.canonical import canonical_json, sha256_hex
from longrun.models.provider import ModelInfo, ModelRequest, ModelResponse, Usage
from longrun.providers.models_table import SCRIPTED, SCRIPTED_INFO
from longrun.providers.scripted.child import ChildPolicy
from longrun.providers.scripted.policy import Policy
from longrun.providers.scripted.refactor import RefactorPolicy
from longrun.providers.scripted.rename import Rename
from longrun.providers.scripted.turns import AGENT_LABEL, Turn, last_results, last_state
from longrun.subagents import is_child_objective


class ScriptedProvider:
    """The offline default provider: a deterministic agent policy, not a model (see the package
    docstring). Usage comes from longrun's own token estimator; cache fields are 0."""

    def __init__(self) -> None:
        self.name: str = SCRIPTED
        self.info: ModelInfo = SCRIPTED_INFO

    def count_tokens(self, request: ModelRequest) -> int:
        return estimate_request(request)

    def complete(self, request: ModelRequest) -> ModelResponse:
        state = last_state(request)
        if state is None:
            turn = Turn(
                f"The {AGENT_LABEL} found no <task_state> block in the last user message, so it has no "
                "objective to work on and stops.",
                final=True,
            )
            number = 1
        else:
            number = 1 + sum(1 for m in request.messages if m.role == "assistant")
            if is_child_objective(str(state.get("objective", ""))):
                turn = ChildPolicy(state, request.messages, number).decide()
            elif (rename := Rename.parse(str(state.get("objective", "")))) is not None:
                turn = RefactorPolicy(state, last_results(request), number, rename).decide()
            else:
                tools = frozenset(t.name for t in request.tools)
                turn = Policy(state, last_results(request), number, tools).decide()
        digest = sha256_hex(canonical_json(request.model_dump(mode="json")))[:8]
        content: list[Block] = [TextBlock(text=turn.text)]
        content += [
            ToolUseBlock(id=f"toolu_s{number:04d}_{i}_{digest}", name=c.name, input=c.input)
            for i, c in enumerate(turn.calls)
        ]
        output = estimate_messages([Message(role="assistant", content=content)])
        return ModelResponse(
            content=content,
            stop_reason="tool_use" if turn.calls else "end_turn",
            usage=Usage(input_tokens=estimate_request(request), output_tokens=output),
            model=SCRIPTED,
        )
