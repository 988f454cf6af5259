"""ticketbot's model: a scripted stand-in, NOT an LLM. A local, deterministic policy registered as
a model provider under the prefix `ticketbot`, so the sample runs offline and a test can predict
every call. For each ticket the objective names it calls lookup_ticket, then write_notes with what
it read, then finishes. It decides from the conversation alone (the ids of its own earlier calls),
so a turn retried after a crash gets the same answer."""

import re

from longrun.providers import (
    ModelProvider, ModelRequest, ModelResponse, ProviderConfig, TextBlock, ToolResultBlock, ToolUseBlock, Usage)

MODEL = "ticketbot:policy-v1"


class TicketbotPolicy:
    def __init__(self, config: ProviderConfig) -> None:
        self.name, self.info = config.name, config.info

    def complete(self, request: ModelRequest) -> ModelResponse:
        blocks = [b for m in request.messages for b in m.content]
        objective = next((b.text for b in blocks if isinstance(b, TextBlock)), "")
        tickets = list(dict.fromkeys(re.findall(r"\bT-\d+\b", objective)))
        called = {b.id for b in blocks if isinstance(b, ToolUseBlock)}
        results = {b.tool_use_id: str(b.content) for b in blocks if isinstance(b, ToolResultBlock)}
        usage = Usage(input_tokens=self.count_tokens(request), output_tokens=20)
        for t in tickets:
            if f"lookup_{t}" not in called:
                call = ToolUseBlock(id=f"lookup_{t}", name="lookup_ticket", input={"ticket": t})
            elif f"write_{t}" not in called:
                text = f"# {t}\n\n{results.get(f'lookup_{t}', '')}\n"
                call = ToolUseBlock(id=f"write_{t}", name="write_notes", input={"path": f"notes/{t}.md", "text": text})
            else:
                continue
            return ModelResponse(content=[call], stop_reason="tool_use", usage=usage, model=self.name)
        done = f"ticketbot (a scripted stand-in, not an LLM): notes written for {', '.join(tickets) or 'no ticket'}."
        return ModelResponse(content=[TextBlock(text=done)], stop_reason="end_turn", usage=usage, model=self.name)

    def count_tokens(self, request: ModelRequest) -> int:
        return len(request.model_dump_json()) // 4


TICKETBOT = ModelProvider(factory=TicketbotPolicy, models={"policy-v1": (200_000, 4_096)},
                          description="ticketbot: a scripted stand-in, not an LLM")
