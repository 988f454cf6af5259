"""The text caches a worker keeps are bounded by what they hold, not by how many entries (issue
26): a long run's distinct tool results and summaries do not grow the worker's memory."""

from __future__ import annotations

import threading

from longrun.context import facts, tokens
from longrun.context.memo import TextMemo


def test_estimate_text_holds_at_most_its_characters_however_many_texts_it_sees() -> None:
    memo = tokens.estimate_text
    texts = [f"turn {i}: " + "def handler(self, retry: int) -> Session:\n" * 60 for i in range(3_000)]
    expected = [max(1, round(len(t) / tokens.CHARS_PER_TOKEN[tokens.classify(t)])) for t in texts]
    assert [memo(t) for t in texts] == expected
    assert memo.chars <= memo.max_chars and len(memo) < 3_000, "the oldest texts were let go"
    assert memo(texts[-1]) == expected[-1] and memo("") == 0


def test_split_units_is_bounded_too_and_answers_the_same() -> None:
    memo = facts._split_units
    text = "Budget cap is $956 total. The limit for m3 is 1003 rows.\nowner: alice, region: eu-west-1"
    first = facts.split_units(text)
    for i in range(2_000):
        facts.split_units(f"line {i}: " + "x " * 2_000)
    assert memo.chars <= memo.max_chars
    assert facts.split_units(text) == first


def test_a_text_too_long_to_keep_is_computed_not_kept_and_threads_agree() -> None:
    calls: list[str] = []
    memo: TextMemo[int] = TextMemo(lambda t: calls.append(t) or len(t), max_chars=1_600)
    assert memo("x" * 200) == 200 and len(memo) == 0, "over a sixteenth of the bound: not kept"
    assert memo("short") == 5 and memo("short") == 5 and calls.count("short") == 1
    results: list[int] = []
    threads = [threading.Thread(target=lambda k=k: results.extend(memo(f"t{j}-{k % 3}") for j in range(200)))
               for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 1_200 and memo.chars <= memo.max_chars
