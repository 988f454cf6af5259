"""ticketbot's model: a scripted stand-in, NOT an LLM. A local deterministic policy registered as a
model provider (prefix `ticketbot`): for each ticket the objective names it calls lookup_ticket,
then write_notes with what it read, then finishes. It decides from the conversation alone (the
results of its own calls, by their ids), so a turn retried after a crash gets the same answer."""

import re

from longrun import providers as lp


class TicketbotPolicy:
    def __init__(self, config: lp.ProviderConfig) -> None:
        self.name, self.info = config.name, config.info

    def complete(self, request: lp.ModelRequest) -> lp.ModelResponse:
        blocks = [b for m in request.messages for b in m.content]
        read = {b.tool_use_id: str(b.content) for b in blocks if isinstance(b, lp.ToolResultBlock)}
        for t in re.findall(r"\bT-\d+\b", next(b.text for b in blocks if isinstance(b, lp.TextBlock))):  # the objective
            if f"lookup_{t}" not in read:
                return self.reply(request, lp.ToolUseBlock(id=f"lookup_{t}", name="lookup_ticket", input={"ticket": t}))
            if f"write_{t}" not in read:
                notes = {"path": f"notes/{t}.md", "text": f"# {t}\n\n{read[f'lookup_{t}']}\n"}
                return self.reply(request, lp.ToolUseBlock(id=f"write_{t}", name="write_notes", input=notes))
        return self.reply(request, lp.TextBlock(text="Notes written. (ticketbot: a scripted stand-in, not an LLM.)"))

    def reply(self, request: lp.ModelRequest, block: lp.TextBlock | lp.ToolUseBlock) -> lp.ModelResponse:
        usage = lp.Usage(input_tokens=self.count_tokens(request), output_tokens=20)
        stop = "tool_use" if isinstance(block, lp.ToolUseBlock) else "end_turn"
        return lp.ModelResponse(content=[block], stop_reason=stop, usage=usage, model=self.name)

    def count_tokens(self, request: lp.ModelRequest) -> int:
        return len(request.model_dump_json()) // 4


TICKETBOT = lp.ModelProvider(factory=TicketbotPolicy, models={"policy-v1": (200_000, 4_096)})
