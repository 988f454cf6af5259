"""Issue 28: `Redactor.redact` picks the patterns to try from one pass over literals (their hints,
case-sensitive hints, `needs`) and the regexes' shortest match, instead of testing each pattern's
hints one by one. It is a security control, so it must redact exactly what the old per-pattern path
(`redact_per_pattern`) redacts, and what running every pattern with no gate at all redacts. Both
are checked on every text the redaction tests and the detect-secrets corpus use, on the
adversarial inputs of `bench/redaction.py`, on their cuts and case variants, and on typical span
attributes; and each gate is checked to hold on every match each pattern finds alone."""

from __future__ import annotations

import functools
import inspect
import random
import re

import pytest

from longrun.redact import DEFAULT_PATTERNS, Redactor, SecretPattern, _min_length, _replace

R = Redactor()

TYPICAL = [
    "read_file", "bash", "src/longrun/workflows/agent.py", "claude-sonnet-4-5", "tool_call", "chat",
    "Reading the config file to find where the retry policy is set.",
    "FileNotFoundError: [Errno 2] No such file or directory: 'src/app/settings.py'",
    "The tests pass now; the token budget check reads the ledger before each model call, see budget.py.",
    "git diff --stat HEAD~1 && pytest tests/test_budget.py -q",
    "TASK: ask the stack for each ACK; SKIP the back-off", "see https://example.com/docs?q=1 for the API",
]


def _parametrized_texts() -> list[str]:
    """Every string argument of the redaction tests' parametrize marks, and their string constants."""
    import tests.test_redact as t

    out: list[str] = [v for v in vars(t).values() if isinstance(v, str)]
    for _, fn in inspect.getmembers(t, inspect.isfunction):
        for mark in getattr(fn, "pytestmark", []):
            if mark.name != "parametrize":
                continue
            for row in mark.args[1]:
                out += [v for v in (row if isinstance(row, tuple) else (row,)) if isinstance(v, str)]
    return out


def _corpus() -> list[str]:
    from bench.redaction import INPUTS
    from bench.redaction_eval import corpus

    base = _parametrized_texts() + [c.text for c in corpus()] + TYPICAL
    base += [make(n) for make in INPUTS.values() for n in (1, 7, 60, 200, 3000)]
    rng = random.Random(28)
    variants: list[str] = []
    for text in base:
        variants += [text.upper(), text.lower(), text.swapcase(), text.replace("\n", " ")]
        # cuts around the shortest-match lengths (7 to 101 characters), from both ends and inside
        for n in (6, 12, 30, 58, 59, 60, 100, 120):
            variants += [text[:n], text[-n:]]
            if len(text) > n:
                start = rng.randrange(len(text) - n)
                variants.append(text[start : start + n])
    glued = " ".join(base[:60])  # several secrets in one text: a replacement changes what follows
    return [t for t in dict.fromkeys(base + variants + [glued, glued.upper()]) if t]


CORPUS = _corpus()


def _every_pattern(redactor: Redactor, text: str) -> str:
    """Every pattern in order, none skipped: what the gates may only make faster."""
    for pat in redactor.patterns:
        text = pat.substitute(text) if pat.substitute else pat.regex.sub(functools.partial(_replace, pat.kind), text)
    return text


def test_the_corpus_is_large_and_holds_every_kind() -> None:
    """The equivalence below is only worth its corpus: every default kind is redacted in it."""
    assert len(CORPUS) > 3000
    kinds = {m for text in CORPUS for m in re.findall(r"\[REDACTED:([a-z_]+)\]", R.redact(text))}
    assert kinds == {pat.kind for pat in DEFAULT_PATTERNS}


def test_redact_equals_the_per_pattern_path_and_every_pattern_on_the_corpus() -> None:
    changed = 0
    for text in CORPUS:
        new, old = R.redact(text), R.redact_per_pattern(text)
        assert new == old, text
        assert new == _every_pattern(R, text), text
        changed += new != text
    assert changed > 500  # the corpus is not all bait


def test_custom_patterns_run_on_every_text_as_before() -> None:
    """An extra pattern has no hints: the gates never skip it (only its shortest match does)."""
    custom = Redactor([r"internal-[0-9]{6}", r"(?P<secret>[a-z]{3})@corp", r"x"])
    texts = [*CORPUS[:800], "id internal-123456", "bob@corp", "xyz", "ab@corp"]
    for text in texts:
        assert custom.redact(text) == custom.redact_per_pattern(text) == _every_pattern(custom, text), text
    assert custom.redact("id internal-123456, bob@corp") == "id [REDACTED:custom], [REDACTED:custom]@corp"


@pytest.mark.parametrize("pat", DEFAULT_PATTERNS, ids=lambda p: p.kind)
def test_each_gate_holds_on_every_match_of_its_pattern(pat: SecretPattern) -> None:
    """Where the pattern alone changes a text, the text is long enough and holds one of its
    case hints (one of its hints, lowered, without them) and one of its `needs`."""
    if pat.case_hints:
        assert not pat.regex.flags & re.IGNORECASE, "case hints on a case-insensitive regex"
    minimum = _min_length(pat.regex)
    assert minimum > 0
    hits = 0
    for text in CORPUS:
        alone = pat.substitute(text) if pat.substitute else pat.regex.sub(functools.partial(_replace, pat.kind), text)
        if alone == text:
            continue
        hits += 1
        assert len(text) >= minimum, text
        if pat.case_hints:
            assert any(h in text for h in pat.case_hints), text
        elif pat.hints:
            assert any(h in text.lower() for h in pat.hints), text
        if pat.needs:
            assert any(h in text for h in pat.needs), text
    assert hits > 0


def test_each_match_is_no_shorter_than_the_minimum_used_to_skip() -> None:
    for pat in DEFAULT_PATTERNS:
        minimum = _min_length(pat.regex)
        for text in CORPUS:
            for m in pat.regex.finditer(text):
                assert len(m.group(0)) >= minimum, (pat.kind, m.group(0))


def test_short_strings_with_no_candidate_skip_every_regex() -> None:
    """The fast path: a tool name or a path tries no pattern at all."""
    for text in ("read_file", "src/longrun/workflows/agent.py", "claude-sonnet-4-5", "git status"):
        assert R._candidates(text) == 0
    assert R._candidates("password=hunter2") != 0


@pytest.mark.parametrize("pat", DEFAULT_PATTERNS, ids=lambda p: p.kind)
def test_redact_never_tries_a_pattern_the_old_path_skipped(pat: SecretPattern) -> None:
    """Each case hint, lowered, holds one of the pattern's old hints: where the old path skipped a
    pattern (no hint in the lowered text), the new one skips it too, so large texts run no more
    regexes than before (`needs` and the shortest match only take more away)."""
    for h in pat.case_hints:
        assert not pat.hints or any(old in h.lower() for old in pat.hints), (pat.kind, h)
