"""The human's messages in a summary: which are quoted verbatim, in what order, and which lines
only restate the task state.

The summary keeps the human's own words byte for byte (a model summary may paraphrase; this part
is never delegated), within a cap: instructions first, then other messages, newest first; short
acknowledgements without a fact ("Thanks, noted.") only in the room the rest leave. A message that
does not fit still has its fact lines quoted in the ledger.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from longrun.context import facts, kinds
from longrun.context.tokens import estimate_text
from longrun.models.state import TaskState


def is_opening(text: str, state: TaskState) -> bool:
    """The run's first message as `opening.opening_message` writes it: the objective and the
    constraints, which the task state block carries verbatim in every request anyway (its
    other lines, the allowed commands and the workspace, go to the ledger)."""
    return text.startswith(f"Objective: {state.objective}")


def in_state(line: str, state: TaskState) -> bool:
    """A line that only restates the task state's objective or one of its constraints."""
    bare = line.removeprefix("- ").removeprefix("Objective: ").removeprefix("New constraint from the user: ").strip()
    return bool(bare) and (bare == _collapsed(state.objective) or bare in state.constraints)


@lru_cache(maxsize=64)
def _collapsed(text: str) -> str:
    """`text` with its whitespace runs made one space, cached: an objective (up to 2,000 characters)
    is compared with every line a compaction extracts (issue 25's cost goal)."""
    return " ".join(text.split())


def cost(texts: Sequence[str]) -> int:
    """Tokens the quoted messages take, their tags included."""
    return sum(estimate_text(t) + 8 for t in texts)


ACK = re.compile(
    r"^\W*(?:ok(?:ay)?|k|thanks?(?: you)?|thx|ty|cheers|noted|got it|sounds good|great|perfect|cool|nice|sure|yes|yep|yeah"
    r"|will do|continue|go on|go ahead|carry on|keep going|lgtm|understood|ack(?:nowledged)?|roger|fine|good|alright"
    r"|right|makes sense|agreed|np|no problem)\b",
    re.I,
)


def instructs(text: str) -> bool:
    """A human message with an instruction in it: a line that starts with an imperative, or
    states a rule wherever it stands and whatever label leads it ("SAFETY RULE: Never ...",
    "Critical: never ...", "The access code must never be shared")."""
    for line in text.splitlines():
        body = kinds.strip_label(line)[1]
        if facts.INSTRUCTION.search(body) or kinds.RULE.search(body):
            return True
    return False


def worth_quoting(text: str) -> bool:
    """A human text worth keeping verbatim: anything but a short acknowledgement without a fact
    ("Thanks, noted.", "ok, continue"), which would only spend the budget."""
    if len(text) > 160 or not ACK.match(text):
        return True
    return any(u.is_fact for u in (facts.analyse(t, "user") for t in facts.split_units(text)))


def carried(text: str) -> bool:
    """A message the ledger carries whole: one line whose every sentence is a fact it keeps
    verbatim. Quoting it too would spend its tokens twice (and eight more for its tags), so it
    is left to the ledger, where it is selected by its priority class like every other fact."""
    if "\n" in text.strip():
        return False
    units = [facts.analyse(t, "user") for t in facts.split_units(text)]
    return bool(units) and all(u.is_fact for u in units)


def states_facts(text: str) -> bool:
    """The message has a line the ledger would keep (a fact unit)."""
    return any(facts.analyse(t, "user").is_fact for t in facts.split_units(text))


def quotable(text: str) -> bool:
    """A human message worth quoting at all: not one the ledger carries whole, and not one that
    says of itself that it is unrelated, obsolete or to be ignored (counted, never quoted)."""
    return not facts.dismissed(text) and not carried(text)


def cap(texts: list[str], tokens: int) -> list[str]:
    """The human's messages, verbatim, newest first up to `tokens`, in their order: instructions
    first, then the others, short acknowledgements without a fact only in the room the rest
    leave. Those left out stay in the transcript, and their facts go to the ledger."""
    kept: set[int] = set()
    used = 0
    tiers = [2 if instructs(t) else 1 if worth_quoting(t) else 0 for t in texts]
    for tier in (2, 1, 0):
        for i in range(len(texts) - 1, -1, -1):
            if i in kept or tiers[i] != tier:
                continue
            need = estimate_text(texts[i])
            if used + need > tokens:
                continue
            kept.add(i)
            used += need
    return [t for i, t in enumerate(texts) if i in kept]
