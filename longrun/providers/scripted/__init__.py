"""The `scripted` provider: a deterministic, offline stand-in for a model.

It is **not a language model**. It is an agent *policy* written in Python that drives a real
forensic review of a workspace (or, when the objective asks for one, a rename across a package)
through longrun's tools, so the demo and the tests run with no API key and no network, and every
run is reproducible byte for byte.

Each `complete()` reads only the request:
- the task-state block (the last `<task_state>` in the last user message): objective,
  constraints, current_step, next_action, notes, decisions;
- the results of its own previous turn (the tool_result blocks of the last user message).

Older tool output may have been compacted away, so everything it learns goes into the state at
once and every decision is recomputed from the state block plus the last results.

Where each part lives (imports go down this list only, never up: no cycle):
- `provider`: `ScriptedProvider`, which picks the policy for a request and builds the response;
- `child`: the child policy (a subagent's run) and the FINDINGS / UNCERTAIN answer it writes;
- `refactor`: the refactor policy ("Rename `old` to `new` ..." and "move the module `a.b` to
  `a.c`"), survey (grep, glob) -> fix (move_path, then one apply_patch per file) -> verify -> report; `rename`: its knowledge (notes), the objective's parse, each file's patch;
- `policy`: the parent policy's decision and its stages, survey -> investigate -> fix -> verify
  -> report;
- `absorb`: how the parent takes in the last tool results (notes, decisions);
- `delegation`: when the parent hands reading to subagents, their briefs, reading answers back;
- `knowledge`: what the parent knows, parsed back from its notes (`Knowledge`, `PolicyBase`);
- `objective`: the objective's terms, the test command, what the constraints forbid;
- `search`: the survey's grep pattern and candidate ranking;
- `rules`: the rule library (suspicious patterns, each with its one-line fix);
- `turns`: `Call`, `Turn` and reading the request's last turns, shared by both policies.
The subagent protocol both policies and the workflow share (brief prefix, answer shape, word
limit, `parse_answer`) is `longrun.subagents`, outside this package.
"""

from longrun.providers.scripted.child import ChildPolicy, format_answer
from longrun.providers.scripted.objective import Constraints, find_test_command, objective_terms
from longrun.providers.scripted.policy import Policy
from longrun.providers.scripted.provider import ScriptedProvider
from longrun.providers.scripted.refactor import RefactorPolicy
from longrun.providers.scripted.rename import Rename
from longrun.providers.scripted.rules import RULE_IDS, RULES, Finding, Patch, propose_patch, scan
from longrun.subagents import parse_answer

__all__ = [
    "RULES",
    "RULE_IDS",
    "ChildPolicy",
    "Constraints",
    "Finding",
    "Patch",
    "Policy",
    "RefactorPolicy",
    "Rename",
    "ScriptedProvider",
    "find_test_command",
    "format_answer",
    "objective_terms",
    "parse_answer",
    "propose_patch",
    "scan",
]
