"""`fastre.Folded` answers exactly what its pattern answers (it only decides misses faster), on
the lines where lowering and IGNORECASE part ways: İ (lowers to two characters), ı and ſ (match
i and s under IGNORECASE, not after lowering), K (Kelvin sign), and mixed case."""

from __future__ import annotations

import re

import pytest

from longrun.context import facts, fastre, kinds

FOLDED = {"RELATION": facts.RELATION, "STATUS": facts.STATUS, "CORRECTION": facts.CORRECTION,
          "DISMISSED": facts.DISMISSED, "VALUE": facts._VALUE, "RULE": kinds.RULE, "DECISION": kinds.DECISION,
          "REJECTED": kinds.REJECTED, "PREFERENCE": kinds.PREFERENCE, "STATUS_CUE": kinds.STATUS_CUE}

LINES = [
    "The service IS NOW routed through the EU gateway.", "NEVER push to main", "We DECIDED to ship v2.3.1 on 2026-01-14T10:00Z",
    "Status: [X] done", "ıt was ſettled: the tokens are mine", "mu\u017ft never exceed", "ſhould be 5 KB",
    "İs the rollout blocked?", "The \u212aeep-alive is 30\u212a", "I SAID port 8443, I MEANT 9443", "an unrelated note",
    "calls the billing-svc upstream", "Budget cap is $956 total.", "the deadline is Thursday", "plain words only",
    "値は 42 です", "Ünïcödé status: DONE", "'quoted value' and \"another\" and `code`", "port 8080 -> 9090",
]


@pytest.mark.parametrize("name", sorted(FOLDED))
def test_folded_patterns_answer_as_the_pattern_does(name: str) -> None:
    folded = FOLDED[name]
    assert isinstance(folded, fastre.Folded)
    assert folded._fast is not None, f"{name} lost its fast copy (an uppercase letter outside an escape?)"
    for line in LINES:
        m, want = folded.search(line), folded.compiled.search(line)
        assert (m.span() if m else None) == (want.span() if want else None), (name, line)
        assert list(folded.spans(line)) == [w.span() for w in folded.compiled.finditer(line)], (name, line)
        # what extraction asks of most of them: whether it matches, and the line with matches masked
        assert folded.found(line) is (want is not None), (name, line)
        assert fastre.found(folded, line) is (want is not None), (name, line)
        assert folded.sub("#", line) == folded.compiled.sub("#", line), (name, line)
        assert folded.sub("#", line.lower()) == folded.compiled.sub("#", line.lower()), (name, line)


def test_the_characters_lowering_treats_otherwise_are_searched_as_they_are() -> None:
    """Without the guard, "muſt" (ſ matches s under IGNORECASE, not after lowering) would read as no rule."""
    rx = re.compile(r"\bmust\b", re.I)
    assert rx.search("mu\u017ft never") is not None
    assert fastre.Folded(rx).search("mu\u017ft never") is not None
    assert fastre.Folded(re.compile(r"\bi\b", re.I)).search("\u0131") is not None


def test_a_pattern_lowering_would_change_gets_no_fast_copy() -> None:
    assert fastre.Folded(re.compile(r"[A-Z]x", re.I))._fast is None  # a capital outside an escape
    assert fastre.Folded(re.compile(r"(?-i:ab)c", re.I))._fast is None  # a case-sensitive part
    assert fastre.Folded(re.compile(r"ab"))._fast is None  # not IGNORECASE: nothing to gain
    assert fastre.Folded(re.compile(r"\Sab\W", re.I))._fast is not None  # escapes are not capitals
