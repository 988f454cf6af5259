"""A deterministic stand-in for a model writing a compaction summary. NOT an LLM.

Why: the model-summary mode must exercise the real path (`ModelSummarizer` -> the real Anthropic
adapter -> the SDK -> HTTP) without a key or network, and must be repeatable. So the fake server
(`tests/fake_anthropic.FakeAnthropic`, a real local HTTP server) answers summary requests with
this policy, which writes what a budget-matched model summary plausibly looks like:

- it reads the turns in the request (the `Turns to summarize:` part, and a folded previous
  summary) and splits them into sentences;
- it keeps the sentences that look informative (digits, identifiers such as `a-b`, `a_b`,
  `a.b`, paths, `key: value` shapes) and are not log lines, code, test or install output, and
  not acknowledgements; duplicates once;
- newest first, until about 90% of the `max_tokens` the request asks for (the validator rejects
  a body over 1.2x that); then prints them in conversation order under Facts, with Goal (the
  objective), Progress (one line), Decisions (none) and Next step (the task state's);
- it leaves out sentences a real model is told not to write (approvals, effects; the validator
  would reject the whole summary).

It is lossy the way a real summary is (it drops facts when the budget is short, and it does not
know which facts will be asked about), but it is not a model: it never rewrites, merges or
resolves a correction. Figures measured with it say how the pipeline behaves with *a* model
summary of that size, not how Claude would do.
"""

from __future__ import annotations

import re
from typing import Any

from longrun.context import estimate_text

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'`(\[*-])")
_PREFIX = re.compile(r"^\[(user|assistant|tool result [^\]]*|tool call [^\]]*)\]\s*")
_INFORMATIVE = re.compile(r"\d|[A-Za-z0-9]+[-_./@][A-Za-z0-9]|[A-Za-z]+:\s|=")
_NOISE = re.compile(
    r"^\d{4}-\d\d-\d\dT|^\[\d{4}\]|^(def |class |from |import |\s{2,}|return |\"\"\")|passed|skipped|Collecting |"
    r"Downloading |Requirement already|test session|^platform |^collected |^tests/test_|^NAME\s|^Filesystem\s",
)
_FORBIDDEN = re.compile(r"approv|\beffects?\b|next[ _]action\W{0,6}(?:is|=|:)?\W{0,4}(inspect|edit|test|ask_human|stop)\b", re.I)
_OBJECTIVE = re.compile(r"^Objective of the run: (.*)$", re.M)
_NEXT = re.compile(r"next action: (\w+)")


def _request_text(body: dict[str, Any]) -> str:
    parts: list[str] = []
    for m in body.get("messages", []):
        content = m.get("content")
        if isinstance(content, str):
            parts.append(content)
        else:
            parts.extend(str(b.get("text", "")) for b in content or [] if isinstance(b, dict) and b.get("type") == "text")
    return "\n".join(parts)


def candidates(material: str) -> list[str]:
    """The informative sentences of the material, in order, duplicates dropped."""
    seen: set[str] = set()
    out: list[str] = []
    for raw in material.splitlines():
        if raw.startswith("[tool call "):
            continue  # the results index keeps what was called
        line = _PREFIX.sub("", raw).strip()
        if not line or _NOISE.search(line):
            continue
        for s in _SENTENCE.split(line):
            s = s.strip()
            key = " ".join(s.lower().split())
            if len(s) < 8 or len(s) > 400 or key in seen or not _INFORMATIVE.search(s) or _FORBIDDEN.search(s):
                continue
            seen.add(key)
            out.append(s)
    return out


def write_summary(text: str, max_tokens: int) -> str:
    """The summary the stand-in writes for a `ModelSummarizer` request's text."""
    objective = (m.group(1) if (m := _OBJECTIVE.search(text)) else "").strip()
    nxt = (m.group(1) if (m := _NEXT.search(text)) else "inspect").strip()
    material = text.split("Turns to summarize:", 1)[-1].split("\n\nWrite the summary now", 1)[0]
    if "Summary of the work before" in text:
        material = text.split("Summary of the work before", 1)[1].split("Turns to summarize:", 1)[0] + "\n" + material
    head = f"## Goal\n{objective}\n## Progress\n- worked through the earlier turns; details below\n## Facts\n"
    tail = f"## Decisions\n- (none recorded)\n## Next step\n- as in the task state: the next action is {nxt}\n"
    room = int(max_tokens * 0.9) - estimate_text(head + tail)
    chosen: list[int] = []
    facts = candidates(material)
    used = 0
    for i in range(len(facts) - 1, -1, -1):
        cost = estimate_text(facts[i]) + 2
        if used + cost > room:
            continue
        chosen.append(i)
        used += cost
    chosen.sort()
    while True:  # per-sentence costs only approximate the whole text's estimate
        body = "".join(f"- {facts[i]}\n" for i in chosen)
        out = f"<summary_of_earlier_work>\n{head}{body}{tail}</summary_of_earlier_work>"
        if not chosen or estimate_text(out) <= max_tokens:
            return out
        chosen.pop(0)


def policy(body: dict[str, Any]) -> dict[str, Any]:
    """`FakeAnthropic.set_policy` callable: a summary for summary requests, "ok" otherwise."""
    text = _request_text(body)
    if "Turns to summarize:" not in text:
        return {"content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn"}
    summary = write_summary(text, int(body.get("max_tokens", 1024)))
    return {"content": [{"type": "text", "text": summary}], "stop_reason": "end_turn"}
