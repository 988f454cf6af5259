"""A custom tool and a custom model provider for the library-worker tests (tests/test_library_worker.py),
importable by a worker in another process (`longrun worker --tools ... --providers ...`).

`count_words` is a read tool from a typed function; `COUNTING` is a scripted stand-in, not an
LLM: it calls count_words once on `WORDS`, then ends quoting what the tool returned."""

from __future__ import annotations

import longrun
from longrun import providers as lp

WORDS = "the quick brown fox jumps over the lazy dog"


@longrun.tool
def count_words(text: str) -> str:
    """Count the words of a text.

    Args:
        text: the text to count.
    """
    return f"{len(text.split())} words, {len(set(text.split()))} distinct"


class CountingPolicy:
    def __init__(self, config: lp.ProviderConfig) -> None:
        self.name, self.info = config.name, config.info

    def complete(self, request: lp.ModelRequest) -> lp.ModelResponse:
        blocks = [b for m in request.messages for b in m.content]
        results = [str(b.content) for b in blocks if isinstance(b, lp.ToolResultBlock)]
        usage = lp.Usage(input_tokens=self.count_tokens(request), output_tokens=10)
        if not results:
            call = lp.ToolUseBlock(id="toolu_count", name="count_words", input={"text": WORDS})
            return lp.ModelResponse(content=[call], stop_reason="tool_use", usage=usage, model=self.name)
        text = lp.TextBlock(text=f"The tool said: {results[0]}")
        return lp.ModelResponse(content=[text], stop_reason="end_turn", usage=usage, model=self.name)

    def count_tokens(self, request: lp.ModelRequest) -> int:
        return len(request.model_dump_json()) // 4


COUNTING = lp.ModelProvider(factory=CountingPolicy, models={"v1": (200_000, 4_096)})
PROVIDERS = {"counting": COUNTING}
TOOLS = [count_words]
NOT_A_PROVIDER = {"counting": "a string"}
