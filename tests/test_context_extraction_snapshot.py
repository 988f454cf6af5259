"""Fact extraction and compaction give the same output as before they were made fast (issue 25's
cost goal): a snapshot of the fact rows and of the compacted requests, taken on the code before
the speed work, over the kit's sessions, the synthetic run's transcript and the real sessions.

What is compared, per case, as a SHA-256 of its canonical JSON (the texts themselves stay out of
the repository: the real sessions are not ours to copy):
- `extract/NAME`: the fact rows of 8 compactions over the growing transcript
  (`bench.extraction.extract`: `extract.units_after` + `FactStore.extend`, as a run calls them);
- `fold/NAME`: the kit's fold protocol (`bench.kit_adapter.fold_longrun`): the text of each
  round's request as sent and the store's rows, i.e. `compact()` with selection and rendering;
- `real/NAME`: `compact()` of a real session at a quarter of the client's pre-compaction tokens
  (as `bench/real_sessions.py` calls it), the request as sent and the rows.

A change that means to alter what is extracted or selected regenerates the snapshot, and says so:
    PYTHONPATH=$PWD python -m tests.test_context_extraction_snapshot --write
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from bench import extraction, kit_adapter
from longrun.cli.compact_cmd import OFFLINE_TARGET_RATIO
from longrun.context import Calibration, compact, fit_request, render_request
from longrun.models.context import FactRow
from longrun.models.spec import ContextPolicy

SNAPSHOT = Path(__file__).parent / "data" / "extraction_snapshot.json"


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def _rows(rows: list[FactRow]) -> list[Any]:
    return [r.model_dump(mode="json") for r in rows]


def extract_cases(corpora: list[extraction.Corpus]) -> dict[str, str]:
    return {f"extract/{c.name}": _digest(_rows(extraction.extract(c).rows)) for c in corpora}


def fold_cases() -> dict[str, str]:
    out = {}
    for ks in kit_adapter.sessions():
        trace = kit_adapter.FoldTrace()
        rounds = kit_adapter.fold_longrun(ks, kit_adapter.budget_of(ks)[1], trace=trace)
        rows = [_rows(p.new_facts) if p is not None else [] for p in trace.projections]
        out[f"fold/{ks.name}"] = _digest({"texts": trace.texts, "rows": rows, "tokens": [r.tokens for r in rounds],
                                          "crashes": trace.crashes})
    return out


def real_cases(corpora: list[extraction.Corpus]) -> dict[str, str]:
    out = {}
    for c in corpora:
        root = extraction.real_sessions_dir()
        assert root is not None
        d = next(p for p in root.iterdir() if p.name.startswith(c.name))
        budget = json.loads((d / "compaction.json").read_text())["pre_tokens"] // 4
        policy = ContextPolicy(budget=budget, trigger=budget, target_ratio=OFFLINE_TARGET_RATIO)
        window = budget + policy.reserve_output + policy.headroom
        cal = Calibration()
        p = compact(c.items, previous=None, state=c.state, policy=policy, window=window, trigger="offline", calibration=cal)
        req = render_request(model="offline", system="", projection=p, new_items=c.items, state=c.state, tools=[],
                             max_tokens=policy.reserve_output)
        req, _ = fit_request(req, limit=policy.limit(window), calibration=cal, keep_min_tail_turns=policy.min_tail_turns)
        out[f"real/{c.name}"] = _digest({"request": req.model_dump(mode="json"), "rows": _rows(p.new_facts)})
    return out


def snapshot() -> dict[str, str]:
    real = extraction.real_corpora()
    return {**extract_cases([extraction.synthetic_corpus(), *extraction.kit_corpora(), *real]),
            **fold_cases(), **real_cases(real)}


@pytest.mark.timeout(600)
def test_extraction_and_compaction_outputs_match_the_snapshot() -> None:
    want: dict[str, str] = json.loads(SNAPSHOT.read_text())
    real = extraction.real_corpora()
    got = {**extract_cases([extraction.synthetic_corpus(), *extraction.kit_corpora(), *real]), **fold_cases()}
    if real:
        got.update(real_cases(real))
    else:  # the real sessions live beside the repository, not in it: compare what is here
        want = {k: v for k, v in want.items() if not k.startswith(("extract/", "real/")) or k in got}
    assert len(got) >= 30, "too few cases: the snapshot would prove little"
    differ = sorted(k for k in want if got.get(k) != want[k])
    assert not differ, f"outputs changed for {differ}; if that is meant, regenerate (see the module docstring)"
    assert set(got) == set(want), f"cases differ: {sorted(set(got) ^ set(want))}"


if __name__ == "__main__" and "--write" in sys.argv:
    SNAPSHOT.parent.mkdir(exist_ok=True)
    SNAPSHOT.write_text(json.dumps(snapshot(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {SNAPSHOT}")
