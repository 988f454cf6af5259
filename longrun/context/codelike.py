"""Lines of code and log records: what the ledger quotes least (`facts.information`) and the tool
results it does not quote at all (`ledger._quotable`), since the results index keeps them whole.

Split from `facts.py` by job (its size, issue 25).
"""

from __future__ import annotations

import re

_CODE_LIKE = re.compile(r"^\s*(?:def |class |return\b|import |from \S+ import|if .*:$|for .*:$|[})\]];?$|#include|//|/\*|\*/)"
                        r"|[{;]\s*$")
_LINE_NUMBER = re.compile(r"^\s*\d+[\s:|]\s?")


def code_like(text: str) -> bool:
    """A line of source code (a numbered listing's number aside)."""
    return bool(_CODE_LIKE.search(_LINE_NUMBER.sub("", text, count=1)))


def code_share(lines: list[str]) -> float:
    """The share of `lines` that look like source code: listings, indentation, brackets,
    assignments, calls. A result mostly made of code is a file read, not a record of facts."""
    if not lines:
        return 0.0
    hits = sum(1 for ln in lines if code_like(ln) or _CODE_TOKENS.search(_LINE_NUMBER.sub("", ln, count=1)))
    return hits / len(lines)


_CODE_TOKENS = re.compile(r"\bself\.|\w\((?:[\w\s,=.*\[\]\"']*)\):?\s*$|^\s*(?:@\w|elif |else:|try:|except\b|with |raise |async |await "
                          r"|const |let |var |function |public |private |fn |pub |#\[)")


_LOG_LINE = re.compile(r"^\s*\[?(?:\d{4}-\d{2}-\d{2}[T ]\d|\d{2}:\d{2}:\d{2}|[A-Z][a-z]{2} +\d+ \d{2}:)")


def log_like(text: str) -> bool:
    """A timestamped log record: one of a series, which the results index keeps whole."""
    return bool(_LOG_LINE.match(text))
