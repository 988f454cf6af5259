"""Stage 2's summaries: the Summarizer protocol, the deterministic extractive summarizer (the
offline one and the fallback) and the validation every summary passes before it is used.

A summary is material, never authority: what it claims about approvals, effects or the next
action is checked against TaskState, and the state block (rendered from the database) is sent
beside it in every request anyway.
"""

from __future__ import annotations

import json
import re
from typing import Protocol, Sequence

from longrun.context.tokens import estimate_text
from longrun.context.transcript import TOOL_KEY, artifact_sha, extra, input_preview
from longrun.models.blocks import Message, TextBlock, ToolResultBlock, ToolUseBlock
from longrun.models.state import EffectStatus, NextAction, TaskState

OPEN_TAG = "<summary_of_earlier_work>"
CLOSE_TAG = "</summary_of_earlier_work>"
SECTIONS = ("Goal", "Progress", "Facts", "Decisions", "Next step")
USER_SECTION = "## User messages (verbatim)"
"""Appended by `compact` after the summarizer's text: the human's words are kept verbatim
whatever the summarizer (a model summary may paraphrase; this part is never delegated)."""


class Summarizer(Protocol):
    def summarize(self, messages: list[Message], previous_summary: str | None, state: TaskState, max_tokens: int) -> str: ...


# --- validation -------------------------------------------------------------------------------

_NEG = r"(?<!not )(?<!un)(?<!no )(?<!awaiting )(?<!pending )(?<!needs )(?<!requires )(?<!without )(?<!for )"
_APPROVAL_CLAIM = re.compile(
    _NEG + r"\b(approved|approval (?:was |has been |is )?(?:granted|given|obtained|received)|(?:granted|gave) (?:the )?approval)\b",
    re.I,
)
_NEXT_ACTION_CLAIM = re.compile(r"next[ _]action\W{0,6}(?:is|was|=|:|->|set to)?\W{0,4}(" + "|".join(a.value for a in NextAction) + r")\b", re.I)
_CONFIRMED = re.compile(_NEG + r"\b(confirmed|succeeded|completed)\b", re.I)
_EFFECT_WORD = re.compile(r"\beffects?\b", re.I)


def contradiction(text: str, state: TaskState) -> str | None:
    """Why `text` contradicts `state` (claims an approval, a confirmed effect or a next action the
    state does not have), or None."""
    if _APPROVAL_CLAIM.search(text) and not any(not a.used for a in state.approvals):
        return "claims an approval the task state does not have"
    for m in _NEXT_ACTION_CLAIM.finditer(text):
        if m.group(1).lower() != state.next_action.value:
            return f"claims next_action {m.group(1).lower()!r}, the task state says {state.next_action.value!r}"
    confirmed = {e.action_id for e in state.effects if e.status is EffectStatus.confirmed}
    for line in text.splitlines():
        if not _CONFIRMED.search(line):
            continue
        for e in state.effects:
            if e.action_id in line and e.action_id not in confirmed:
                return f"claims effect {e.action_id!r} is confirmed, the task state says {e.status.value!r}"
        if _EFFECT_WORD.search(line) and not confirmed:
            return "claims a confirmed effect, the task state has none"
    return None


def validate_summary(summary: str, replaced_tokens: int, state: TaskState) -> str | None:
    """Reason to reject `summary` as the stand-in for `replaced_tokens` of conversation, or None.

    Rejected: empty; not smaller than what it replaces; contradicting the state."""
    if not summary or not summary.strip():
        return "empty summary"
    tokens = estimate_text(summary)
    if tokens >= replaced_tokens:
        return f"summary ({tokens} tokens) is not smaller than what it replaces ({replaced_tokens} tokens)"
    return contradiction(summary, state)


# --- extractive summarizer --------------------------------------------------------------------

_FIRST_SENTENCE = re.compile(r"^(.{20,240}?[.!?])(?:\s|$)", re.S)
_BULLET_SECTION = re.compile(r"^## (.+?)\n(.*?)(?=^## |\Z)", re.S | re.M)
_PATH_KEYS = ("file_path", "path", "notebook_path", "filename", "file")
_CMD_KEYS = ("command", "cmd", "argv", "pattern", "query")


def _sentence(text: str) -> str:
    text = " ".join(text.split())
    m = _FIRST_SENTENCE.match(text)
    s = m.group(1) if m else text[:240]
    return s


def previous_sections(previous: str | None) -> dict[str, list[str]]:
    """The bullet lines of each `## Section` of an earlier summary (how a summary is folded)."""
    out: dict[str, list[str]] = {}
    if not previous:
        return out
    found = False
    for m in _BULLET_SECTION.finditer(previous):
        found = True
        lines = [ln.rstrip() for ln in m.group(2).splitlines() if ln.strip()]
        out.setdefault(m.group(1).strip(), []).extend(lines)
    if not found:
        out["Progress"] = [f"- earlier: {_sentence(previous)}"]
    return out


class ExtractiveSummarizer:
    """Deterministic, model-free summary in the five sections. Goal, decisions and next step come
    from the TaskState; progress from the assistant's own first sentences; facts list every file
    path and command of the tool calls and every cleared result's artifact, so nothing a later
    step needs is lost without a way back. Lines that would contradict the state are skipped."""

    def summarize(self, messages: list[Message], previous_summary: str | None, state: TaskState, max_tokens: int) -> str:
        prev = previous_sections(previous_summary)
        progress: list[str] = list(prev.get("Progress", []))
        files: list[str] = []
        commands: list[str] = []
        artifacts: list[str] = []
        uses: dict[str, ToolUseBlock] = {}
        for m in messages:
            for b in m.content:
                if isinstance(b, ToolUseBlock):
                    uses[b.id] = b
                    for k in _PATH_KEYS:
                        v = b.input.get(k)
                        if isinstance(v, str) and v:
                            files.append(v)
                    for k in _CMD_KEYS:
                        v = b.input.get(k)
                        if isinstance(v, list):
                            v = " ".join(str(x) for x in v)
                        if isinstance(v, str) and v:
                            commands.append(f"{b.name}: {v[:300]}")
                elif isinstance(b, TextBlock) and m.role == "assistant" and b.text.strip():
                    progress.append(f"- {_sentence(b.text)}")
                elif isinstance(b, ToolResultBlock):
                    use = uses.get(b.tool_use_id)
                    sha = artifact_sha(b)
                    tool = extra(b, TOOL_KEY) or (use.name if use else "tool")
                    args = _key_arg(use.input) if use else ""
                    artifacts.append(f"- sha256:{sha} = {tool} {args}".rstrip())
        prev_facts = prev.get("Facts", [])
        files = _prev_list(prev_facts, "files") + files
        commands = _prev_list(prev_facts, "commands") + commands
        artifacts = [ln for ln in prev_facts if ln.startswith("- sha256:")] + artifacts
        other = [ln for ln in prev_facts if not ln.startswith(("- files: ", "- commands: ", "- sha256:", _MARKER))]
        facts = _dedup_bullets("files", files) + _dedup_bullets("commands", commands) + other + _dedup(artifacts)
        decisions = [f"- {d.summary}" + (f" (because {d.reason})" if d.reason else "") for d in state.decisions]
        goal = [state.objective]
        next_step = [f"- current step {state.current_step.value}; next action per the task state: {state.next_action.value}"]
        if state.unknown_effects():
            next_step.append(f"- effects with unknown outcome must be reconciled first: "
                             f"{', '.join(e.action_id for e in state.unknown_effects())}")
        sections = {
            "Goal": goal,
            "Progress": [ln for ln in _dedup(progress) if not contradiction(ln, state)],
            "Facts": [ln for ln in _dedup(facts) if not contradiction(ln, state)],
            "Decisions": decisions or ["- none recorded"],
            "Next step": next_step,
        }
        return _fit(sections, max_tokens)


_MARKER = "- (older entries dropped for size)"


def _key_arg(tool_input: dict[str, object]) -> str:
    for k in (*_PATH_KEYS, *_CMD_KEYS):
        v = tool_input.get(k)
        if isinstance(v, str) and v:
            return v[:160]
    return input_preview(tool_input, 80)  # type: ignore[arg-type]


def _prev_list(lines: Sequence[str], label: str) -> list[str]:
    for ln in lines:
        if ln.startswith(f"- {label}: "):
            try:
                value = json.loads(ln[len(label) + 4:])
            except ValueError:
                return []
            return [str(v) for v in value] if isinstance(value, list) else []
    return []


def _dedup(lines: Sequence[str]) -> list[str]:
    seen: set[str] = set()
    return [ln for ln in lines if not (ln in seen or seen.add(ln))]  # type: ignore[func-returns-value]


def _dedup_bullets(label: str, values: Sequence[str]) -> list[str]:
    vals = _dedup(values)
    return [f"- {label}: " + json.dumps(vals, ensure_ascii=False)] if vals else []


def _render(sections: dict[str, list[str]]) -> str:
    return "\n".join(f"## {name}\n" + "\n".join(lines) for name, lines in sections.items())


def _fit(sections: dict[str, list[str]], max_tokens: int) -> str:
    """Drop the oldest artifact references (their results are in the transcript and the store),
    then the oldest progress lines, until the summary fits; files and commands stay."""
    text = _render(sections)
    while estimate_text(text) > max_tokens:
        facts = sections["Facts"]
        refs = [i for i, ln in enumerate(facts) if ln.startswith("- sha256:")]
        progress = [ln for ln in sections["Progress"] if ln != _MARKER]
        if len(refs) > 1:
            drop = set(refs[: max(1, len(refs) // 4)])
            sections["Facts"] = [ln for i, ln in enumerate(facts) if i not in drop]
        elif len(progress) > 1:
            sections["Progress"] = [_MARKER] + progress[max(1, len(progress) // 4):]
        else:
            return text[: max_tokens * 2]
        if _MARKER not in sections["Facts"] and len(refs) > 1:
            sections["Facts"].append(_MARKER)
        text = _render(sections)
    return text


# --- verbatim user messages -------------------------------------------------------------------

def user_texts(messages: Sequence[Message]) -> list[str]:
    """Every text the human wrote in `messages` (user-role text blocks), in order."""
    return [b.text for m in messages if m.role == "user" for b in m.content if isinstance(b, TextBlock) and b.text.strip()]


_USER_MSG = re.compile(r"<user_message>\n(.*?)\n</user_message>", re.S)


def split_user_section(summary: str | None) -> tuple[str | None, list[str]]:
    """(summary body, verbatim user messages) of a summary written by `compact`."""
    if not summary:
        return summary, []
    body, sep, rest = summary.partition("\n\n" + USER_SECTION + "\n")
    if not sep:
        return summary, []
    return body, _USER_MSG.findall(rest)


def join_user_section(body: str, texts: Sequence[str]) -> str:
    """`body` plus the human's messages, each verbatim inside `<user_message>` tags."""
    if not texts:
        return body
    return body + "\n\n" + USER_SECTION + "\n" + "\n".join(f"<user_message>\n{t}\n</user_message>" for t in texts)


_SUMMARY_REF = re.compile(r"^- sha256:([0-9a-f]{64}) = (\S+)", re.M)


def summary_references(summary: str | None) -> list[dict[str, str]]:
    """The artifacts an extractive summary names (results summarized away): sha256 and tool."""
    return [{"sha256": m.group(1), "tool": m.group(2), "stage": "summarized"} for m in _SUMMARY_REF.finditer(summary or "")]
