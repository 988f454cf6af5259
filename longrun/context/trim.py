"""Stage 0, always run: heavy artifacts (images, base64 blobs, results larger than
`artifact_trim_tokens`) become references naming their artifact.

Only material the model has already seen is trimmed: the open tool cycle (the last assistant
message and the results after it) is left alone, so a fresh 30k-token file read reaches the model
once, whole, before it is ever replaced.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from longrun.context.tokens import estimate_block, estimate_text
from longrun.context.transcript import (
    artifact_sha,
    is_cleared,
    open_cycle_start,
    reference_text,
    replace_result,
    result_text,
    tool_uses_by_id,
)
from longrun.models.blocks import ImageBlock, Message, TextBlock, ToolResultBlock
from longrun.models.canonical import canonical_json, sha256_hex

BASE64_RUN = re.compile(r"(?:data:[\w/+.-]+;base64,)?[A-Za-z0-9+/]{512,}={0,2}")
HEAD_CHARS = 1_200
TAIL_CHARS = 400


@dataclass
class StageResult:
    messages: list[Message]
    freed: int = 0
    cleared: list[dict[str, Any]] = field(default_factory=list)
    changed: set[int] = field(default_factory=set)


def _strip_base64(text: str, sha: str | None) -> str:
    if len(text) < 512:
        return text

    def repl(m: re.Match[str]) -> str:
        where = f"artifact sha256:{sha}" if sha else f"sha256:{sha256_hex(m.group(0))}"
        return f"[base64 data, {len(m.group(0))} chars, omitted; full content: {where}]"

    return BASE64_RUN.sub(repl, text)


def trim_heavy(messages: list[Message], *, max_result_tokens: int) -> StageResult:
    """Stage 0 over `messages` (a new list; unchanged messages are the same objects)."""
    uses = tool_uses_by_id(messages)
    stop = open_cycle_start(messages)
    out = list(messages)
    res = StageResult(out)
    for i in range(stop):
        msg = messages[i]
        new_blocks: list[Any] = []
        changed = False
        for b in msg.content:
            nb = b
            if isinstance(b, ImageBlock):
                sha = sha256_hex(canonical_json(b.source))
                nb = TextBlock(text=f"[image omitted; sha256:{sha}]")
            elif isinstance(b, TextBlock) and len(b.text) >= 512:
                t = _strip_base64(b.text, None)
                if t != b.text:
                    nb = TextBlock(text=t)
            elif isinstance(b, ToolResultBlock) and not is_cleared(b):
                nb = _trim_result(b, uses, max_result_tokens, res)
            if nb is not b:
                changed = True
                res.freed += max(0, estimate_block(b) - estimate_block(nb))
            new_blocks.append(nb)
        if changed:
            out[i] = Message.model_construct(role=msg.role, content=new_blocks)
            res.changed.add(i)
    return res


def _trim_result(b: ToolResultBlock, uses: dict[str, Any], max_tokens: int, res: StageResult) -> ToolResultBlock:
    use = uses.get(b.tool_use_id)
    tool = use.name if use else "unknown_tool"
    tool_input = use.input if use else {}
    has_heavy = isinstance(b.content, list) and any(c.get("type") == "image" for c in b.content)
    text = result_text(b)
    tokens = estimate_text(text)
    if tokens <= max_tokens and not has_heavy:
        if len(text) >= 512 and BASE64_RUN.search(text):
            sha = artifact_sha(b)
            res.cleared.append({"sha256": sha, "tool": tool, "tool_use_id": b.tool_use_id, "tokens": tokens, "stage": "trim"})
            return replace_result(b, _strip_base64(text, sha), tool=tool, sha=sha, tokens=tokens, stage="trim")
        return b
    sha = artifact_sha(b)
    head = text[:HEAD_CHARS]
    tail = text[-TAIL_CHARS:] if len(text) > HEAD_CHARS + TAIL_CHARS else ""
    preview = _strip_base64(head, sha) + ("\n[…]\n" + _strip_base64(tail, sha) if tail else "")
    ref = reference_text(tool, tool_input, sha, tokens, "large result trimmed")
    res.cleared.append({"sha256": sha, "tool": tool, "tool_use_id": b.tool_use_id, "tokens": tokens, "stage": "trim"})
    return replace_result(b, f"{ref}\nBeginning of the output:\n{preview}", tool=tool, sha=sha, tokens=tokens, stage="trim")
