"""A probe (one exact-answer question) and the one rule for "this line answers it".

Why a string rule and not a model: the held-out benchmark calls a probe answerable when "the answer
is in the projection, next to the item it belongs to". Here that is: one line holds the subject
(case-insensitive) and the answer (exact, case-insensitive for words), each as a whole token, i.e.
not inside a longer run of letters, digits or underscores (`T-14` is not found in `T-140`, `3.4.1`
not in `13.4.1`). The generator uses the same rule to check its own statements.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

CATEGORIES = ("value", "relation", "tool", "correction", "status")
LABELS = {"value": "user values", "relation": "relations", "tool": "short tool outputs",
          "correction": "corrections", "status": "statuses"}


@dataclass(frozen=True)
class Probe:
    """One question: its category, the subject and the exact answer, and the values a correction
    superseded. `template`, `speaker` (user/assistant/tool), `position` (0..1 in the conversation)
    and `statement` (the original line holding subject and answer) describe where it came from."""

    category: str
    question: str
    subject: str
    answer: str
    superseded: tuple[str, ...] = ()
    template: str = ""
    speaker: str = ""
    position: float = 0.0
    statement: str = ""

    def as_dict(self) -> dict[str, object]:
        return {"category": self.category, "question": self.question, "subject": self.subject, "answer": self.answer,
                "superseded": list(self.superseded), "template": self.template, "speaker": self.speaker,
                "position": round(self.position, 3), "statement": self.statement}


@lru_cache(maxsize=65_536)
def token_re(text: str) -> re.Pattern[str]:
    """`text` as a whole token, case-insensitive."""
    return re.compile(r"(?<![A-Za-z0-9_])" + re.escape(text) + r"(?![A-Za-z0-9_])", re.I)


def mentions(line: str, text: str) -> bool:
    return text.lower() in line.lower() and token_re(text).search(line) is not None


def answers(line: str, subject: str, answer: str) -> bool:
    """True when `line` holds both the subject and the answer."""
    return mentions(line, subject) and mentions(line, answer)
