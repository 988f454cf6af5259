"""The results index beside the summary, the assistant's facts in the extractive summary, and
commands kept whole."""

from __future__ import annotations

import json
from typing import Any

from longrun.context import (
    Calibration,
    ExtractiveSummarizer,
    compact,
    estimate_request,
    fit_request,
    index,
    render_request,
)
from longrun.context.summary import fact_sentences, split_summary, summary_references
from longrun.context.transcript import result_text
from longrun.models import ContextPolicy, Message, Projection, TaskState, TranscriptItem
from longrun.models.canonical import sha256_hex
from longrun.models.context import CompactionReport
from tests.fake_anthropic import validate_tool_pairing

STATE = TaskState(run_id="r1", state_version=2, objective="Find why the ledger drifted",
                  constraints=["Never run git push --force"])
BIG = "def settle(x):\n    return x * 100  # cents\n" * 250  # about 3k tokens
TIGHT = ContextPolicy(trigger=6_000, keep=1, clear_at_least=0, tail_tokens=1_500, max_summary_tokens=600)


def wire_turns(n: int, start: int = 0, *, text: Any = None, command: Any = None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(start, start + n):
        said = text(i) if text else f"Reading module {i} next."
        tool_input = {"command": command(i)} if command else {"path": f"src/ledger/m{i}.py"}
        out.append({"role": "assistant", "content": [
            {"type": "text", "text": said},
            {"type": "tool_use", "id": f"tu{i}", "name": "Bash" if command else "read_file", "input": tool_input}]})
        out.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"tu{i}", "content": f"#{i}\n{BIG}"}]})
    return out


def items_of(wire: list[dict[str, Any]]) -> list[TranscriptItem]:
    wire = [{"role": "user", "content": "Review the ledger service."}, *wire,
            {"role": "assistant", "content": [{"type": "text", "text": "Continuing."}]}]
    return [TranscriptItem(seq=i + 1, message=Message.from_wire(m)) for i, m in enumerate(wire)]


def run(items: list[TranscriptItem], policy: ContextPolicy = TIGHT, previous: Projection | None = None) -> Projection:
    return compact(items, previous=previous, state=STATE, policy=policy, window=200_000, trigger="threshold",
                   calibration=Calibration())


def shas(items: list[TranscriptItem]) -> dict[str, str]:
    return {b.tool_use_id: sha256_hex(result_text(b)) for it in items for b in it.message.tool_results()}


def test_every_summarized_result_has_an_index_line_naming_tool_input_and_artifact() -> None:
    items = items_of(wire_turns(12))
    p = run(items)
    assert p.summary and "summarize" in p.report.stages_run
    _, cut, lines, _ = split_summary(p.summary)
    kept = {b.tool_use_id for m in p.messages for b in m.tool_results()}
    by_id = shas(items)
    gone = [tid for tid in by_id if tid not in kept]
    assert gone and cut == 0
    for tid in gone:
        i = int(tid[2:])
        assert f"- sha256:{by_id[tid][:12]} read_file src/ledger/m{i}.py" in lines  # the shortest prefix read_artifact takes
    assert {r["sha256"] for r in summary_references(p.summary)} == {by_id[t][:12] for t in gone}
    # the index sits outside the body the summarizer caps
    body, *_ = split_summary(p.summary)
    assert body and "sha256:" not in body


def test_index_folds_forward_byte_for_byte() -> None:
    first = items_of(wire_turns(12))
    p1 = run(first)
    _, _, lines1, _ = split_summary(p1.summary)
    more = items_of(wire_turns(12) + wire_turns(10, start=12))
    # same seqs for the shared prefix: rebuild with the first transcript's items then the new ones
    later = first[:-1] + [TranscriptItem(seq=first[-2].seq + 1 + k, message=it.message)
                          for k, it in enumerate(more[len(first) - 1:])]
    p2 = run(later, previous=p1)
    _, cut2, lines2, _ = split_summary(p2.summary)
    assert cut2 == 0 and len(lines2) > len(lines1)
    assert lines2[: len(lines1)] == lines1  # earlier lines keep their place and bytes
    rendered1 = index.render(0, lines1)
    assert rendered1 in (p2.summary or "")
    assert len(set(lines2)) == len(lines2)


def test_index_is_cut_oldest_first_with_a_count_only_as_the_last_resort() -> None:
    lines = [index.entry(sha256_hex(str(i)), "read_file", f"src/pkg/module_{i}.py") for i in range(400)]
    summary = "## Goal\nx\n\n" + index.render(0, lines)
    prev = Projection(version=1, base_state_version=1, covers_through_seq=1, summary=summary, messages=[],
                      report=CompactionReport(trigger="threshold"))
    items = items_of(wire_turns(2))
    req = render_request(model="m", system="", projection=prev, new_items=items, state=STATE, tools=[], max_tokens=10)
    est = estimate_request(req)
    limit = est - 9_000  # dropping every turn frees about 6.5k: the index has to give the rest
    fitted, _ = fit_request(req, limit=limit, calibration=Calibration(), keep_min_tail_turns=1)
    assert estimate_request(fitted) <= limit
    assert validate_tool_pairing([m.to_wire() for m in fitted.messages]) is None
    head = fitted.messages[0].content[0].text  # type: ignore[union-attr]
    _, cut, kept, _ = split_summary(head[len("<summary_of_earlier_work>\n"):-len("\n</summary_of_earlier_work>")])
    assert cut > 0 and cut + len(kept) == 400 and kept == lines[cut:]  # oldest went, counted
    assert index.cut_note(cut) in head
    # a roomy limit leaves the index whole
    same, _ = fit_request(req, limit=est + 100, calibration=Calibration(), keep_min_tail_turns=1)
    assert same is req


def test_stage_three_indexes_what_it_drops() -> None:
    items = items_of(wire_turns(16))
    policy = ContextPolicy(budget=9_000, trigger=9_000, keep=1, clear_at_least=10**9, tail_tokens=50_000,
                           max_summary_tokens=200, min_tail_turns=1)
    p = run(items, policy=policy)
    by_id = shas(items)
    kept = {b.tool_use_id for m in p.messages for b in m.tool_results()}
    named = {r["sha256"] for r in summary_references(p.summary)}
    assert all(by_id[t][:12] in named for t in by_id if t not in kept)  # nothing left without a way back


def test_commands_are_kept_whole() -> None:
    long_cmd = "python - <<'EOF'\n" + "\n".join(f"print('step {k}: reconcile batch {k * 7}')" for k in range(60)) + "\nEOF"
    assert len(long_cmd) > 1_500
    items = items_of(wire_turns(12, command=lambda i: long_cmd if i == 0 else f"grep -rn 'settle_{i}' src/ledger " + "x" * 400))
    p = run(items)
    text = p.summary or ""
    assert json.dumps(long_cmd, ensure_ascii=False) in text  # multi-line: one JSON-quoted line
    for i in range(1, 5):
        assert f"grep -rn 'settle_{i}' src/ledger " + "x" * 400 in text


def test_assistant_facts_survive_many_compactions() -> None:
    def said(i: int) -> str:
        base = f"Next I read src/ledger/m{i}.py to see whether the posting path explains the drift. It may not."
        return f"{base} FACT-{i:02d}: the replica lag peaked at {10 + i} s." if i % 5 == 0 else base

    projection = None
    items = [TranscriptItem(seq=1, message=Message.user_text("Review the ledger service."))]
    for round_ in range(4):
        for m in wire_turns(10, start=10 * round_, text=said):
            items.append(TranscriptItem(seq=len(items) + 1, message=Message.from_wire(m)))
        projection = run(items, previous=projection)
        assert projection.report.outcome == "applied"
    text = projection.summary or ""  # type: ignore[union-attr]
    for i in range(0, 30, 5):  # summarized in earlier rounds, folded forward since
        assert f"FACT-{i:02d}: the replica lag peaked at {10 + i} s." in text
    assert "earlier progress dropped for size" in text  # plain progress goes first, counted


def test_fact_sentences_skip_what_the_tool_input_already_says() -> None:
    text = ("Next I look at journalctl -u ledger --since 2026-01-14T06:00:00Z to see whether the rounding path explains "
            "it. The balance was off by 4200 cents at batch-7781. The earlier output looked fine. "
            "This happens because the fee is rounded twice.")
    known = "journalctl\n-u\nledger\n--since\n2026-01-14T06:00:00Z"
    assert fact_sentences(text, known) == ["The balance was off by 4200 cents at batch-7781.",
                                           "This happens because the fee is rounded twice."]


def test_old_summaries_move_their_artifact_lines_into_the_index() -> None:
    sha = "c" * 64
    old = (f"## Goal\ng\n## Progress\n- read a\n## Facts\n- files: [\"a.py\"]\n- sha256:{sha} = read_file a.py\n"
           "- (older entries dropped for size)\n## Decisions\n- none recorded\n## Next step\n- x")
    body, cut, lines, users = split_summary(old)
    assert lines == [f"- sha256:{sha[:12]} read_file a.py"] and cut == 0 and users == []
    assert body and sha not in body
    folded = ExtractiveSummarizer().summarize([], body, STATE, 500)
    assert "older entries dropped" not in folded and "- read a" in folded


# -- bounded (issue 26) ---------------------------------------------------------------------------

LONG_POLICY = ContextPolicy(budget=16_000)


def _turn(i: int) -> list[dict[str, Any]]:
    body = "\n".join(f"{k:4d}  def handler_{i}_{k}(self, retry: int = {k}) -> Session:" for k in range(60))
    said = f"Reading module {i}; the limit for m{i} is {1000 + i} rows." if i % 7 == 0 else f"Reading module {i}."
    return [{"role": "assistant", "content": [{"type": "text", "text": said},
             {"type": "tool_use", "id": f"tu{i}", "name": "read_file", "input": {"path": f"src/m{i % 40}.py"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"tu{i}", "content": f"#{i}\n{body}"}]}]


LAGGED: list[int] = []
"""Compactions of the last ranged `_drive` whose read started after the fact store's `through_seq`."""


def _drive(turns: int, *, ranged: bool) -> tuple[list[Projection], list[Any]]:
    """A long run compacted every 4 turns, as the compact activity does: the previous projection
    and the fact store carried forward; `ranged`: each compaction gets only the entries after
    `compaction_reads_after`, else the whole transcript."""
    from longrun.activities.model import compaction_reads_after
    from longrun.context.factstore import FactStore

    LAGGED.clear()

    wire: list[dict[str, Any]] = [{"role": "user", "content": "Review the ledger service."}]
    projections: list[Projection] = []
    facts: list[Any] = []
    previous: Projection | None = None
    for i in range(turns):
        wire += _turn(i)
        if i % 4 != 3:
            continue
        items = [TranscriptItem(seq=k + 1, message=Message.from_wire(m)) for k, m in enumerate(wire)]
        after = compaction_reads_after(previous, facts) if ranged else 0
        if after > FactStore(facts).through_seq:
            LAGGED.append(i)
        p = compact([it for it in items if it.seq > after], previous=previous, state=STATE, policy=LONG_POLICY,
                    window=200_000, trigger="threshold", calibration=Calibration(), facts=facts)
        if p.report.outcome != "noop":
            previous = p
            facts = [*facts, *p.new_facts]
            projections.append(p)
    return projections, facts


def _calls(lines: list[str]) -> int:
    """Tool calls an index's lines stand for (a folded line says how many)."""
    return sum(int(ln.split()[3][1:-1]) if ln.startswith("- (earlier) ") else 1 for ln in lines)


def test_the_index_folds_its_oldest_lines_per_tool_and_stays_under_its_cap() -> None:
    lines = [index.entry(f"{k:064x}", "read_file", f"src/m{k % 30}.py") for k in range(400)]
    lines += [f"- run_command pytest -q tests/t{k}.py => ok" for k in range(20)]
    cap = 1_500
    assert index.bound(0, lines[:5], cap) == (0, lines[:5]), "under its cap the index is left as it is"
    cut, bounded = index.bound(0, lines, cap)
    assert cut == 0 and _calls(bounded) == 420, "folding keeps what every line stood for: nothing is cut"
    assert index.cost(cut, bounded) <= cap
    folded = [ln for ln in bounded if ln.startswith("- (earlier) ")]
    assert [ln.split()[2] for ln in folded] == ["read_file"], "one folded line per tool (the run_command lines are newer)"
    assert "src/m9.py; src/m8.py" in folded[0], "the paths it touched, newest first, each once"
    assert folded[0].count("src/m9.py;") == 1
    assert bounded[-20:] == lines[-20:], "the newest lines stay as they were"
    again_cut, again = index.bound(*index.parse(index.render(cut, bounded + lines[:120])), cap)
    assert index.cost(again_cut, again) <= cap
    assert [ln.split()[2] for ln in again if ln.startswith("- (earlier) ")] == ["read_file"], \
        "a folded line parses back and folds further, still one per tool"
    assert [ln for ln in again if "=> ok" in ln] == lines[400:], "a quoted short output (a fact) folds last"
    assert again_cut + _calls(again) == 540, "every call is counted once"
    tiny_cut, tiny = index.bound(0, lines, 200)
    assert index.cost(tiny_cut, tiny) <= 200 * index.INLINE_FACTOR and tiny_cut + _calls(tiny) == 420, \
        "under a tiny cap the rest is cut, counted"


def test_quoted_short_outputs_fold_only_past_their_own_ceiling() -> None:
    """Issue 25's tool-history questions: `- run_command X => 3 failed` is the answer itself, so
    the index folds the lines that only name an artifact first, and a quoted one only when the
    quoted lines alone pass INLINE_FACTOR times the cap (issue 26: still bounded)."""
    named = [index.entry(f"{k:064x}", "read_file", f"src/m{k}.py") for k in range(60)]
    quoted = [f"- run_command pytest -q tests/t{k}.py => {k} failed" for k in range(30)]
    cap = 300
    cut, bounded = index.bound(0, named + quoted, cap)
    assert bounded[-30:] == quoted and index.cost(cut, bounded) > cap, "every answer kept, past the plain cap"
    many = [f"- run_command pytest -q tests/t{k}.py => {k} failed" for k in range(400)]
    cut, bounded = index.bound(0, many, cap)
    assert index.cost(cut, bounded) <= cap * index.INLINE_FACTOR, "past its own ceiling a quoted line folds too"
    assert bounded[-1] == many[-1] and cut + _calls(bounded) == 400, "the newest stay, every call counted"


def test_a_long_run_keeps_its_summary_index_bounded() -> None:
    projections, _ = _drive(160, ranged=False)
    summaries = [p.summary or "" for p in projections if p.summary]
    cap = index.cap(LONG_POLICY.limit(200_000))
    costs = [index.cost(*index.parse(s[s.find(index.INDEX_SECTION):])) for s in summaries]
    assert max(costs) <= cap + 50, f"the index stays near its cap ({cap}): {costs[-5:]}"
    assert any("(earlier) read_file x" in s for s in summaries[-3:]), "older lines were folded, not dropped"


def test_once_folded_the_index_costs_the_same_at_every_compaction() -> None:
    """Issue 26: the room a compaction leaves before the next trigger is the budget less what it
    keeps, the summary included, so an index whose size went up and down (folding to half its cap,
    then growing back) spaced compactions by where a stretch of turns fell in that cycle: the last
    100 turns of the long-run benchmark compacted 24 times against 23 in turns 101-200 in one run,
    25 against 23 in the next. Once it reaches its cap, it stays there."""
    projections, _ = _drive(240, ranged=False)
    cap = index.cap(LONG_POLICY.limit(200_000))
    costs = [index.cost(*index.parse(s[s.find(index.INDEX_SECTION):])) for s in (p.summary or "" for p in projections)]
    first = next(k for k, p in enumerate(projections) if "(earlier) read_file x" in (p.summary or ""))
    later = costs[first:]
    assert len(later) >= 20, len(later)
    assert max(later) <= cap and max(later) - min(later) <= cap // 10, f"cap {cap}: {later}"


def test_a_compaction_of_the_range_it_reads_equals_one_of_the_whole_transcript() -> None:
    whole, whole_facts = _drive(120, ranged=False)
    ranged, ranged_facts = _drive(120, ranged=True)
    assert whole_facts, "the fact store has rows, so the ranged reads are ranges"
    assert LAGGED, "some reads start after the store's through_seq (entries without facts leave no row)"
    assert [(p.covers_through_seq, p.summary, p.messages, p.new_facts) for p in ranged] == \
        [(p.covers_through_seq, p.summary, p.messages, p.new_facts) for p in whole]
    assert ranged_facts == whole_facts
