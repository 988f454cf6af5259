"""Where a compaction aims: the size of the next request it lands at or under, and the larger one
its fact selection may fill up to.

Why two aims: the aim leaves the next turns room before the trigger fires again (hysteresis: a
compaction that lands at the trigger fires again on the next turn and pays a cache rewrite for
nothing). But a run's default aim (half the way from the part no compaction can shrink to the
trigger) left the fact selection a quarter of the budget under pressure, and facts were left out
while the room between the aim and the trigger stood empty (issue 25, cause 7: the selection
should fill the room it is allowed). The facts are the densest part of a projection and the part
a run needs back, so they may fill up to `FACTS_RATIO` of the way; the verbatim tail, the body
and the quoted messages still size themselves by the aim. The next compaction still has at
least (1 - FACTS_RATIO) of the compactable part to grow into, and at least what one turn adds
(`turn_growth`): the request right after a compaction stays under the trigger (the demo's figure).
"""

from __future__ import annotations

from collections.abc import Sequence

FACTS_RATIO = 0.8
"""How far from the unshrinkable part to the trigger the fact selection may fill, at least."""


def aim(trigger_est: int, fixed: int, target_ratio: float, limit_est: int) -> int:
    """Where a compaction aims, in estimated tokens: `target_ratio` of the way from the part no
    compaction can shrink (system prompt, tools, task state) to the trigger. Applying the ratio
    to the whole trigger would aim below that part whenever it is large next to the trigger
    (a small budget, many tools), so no compaction could reach its target and one would fire
    every turn; aiming inside the compactable part leaves the next turns their room."""
    return min(limit_est, fixed + max(0, int((trigger_est - fixed) * target_ratio)))


def facts_aim(trigger_est: int, fixed: int, target_ratio: float, limit_est: int, growth: int = 0) -> int:
    """Up to where the fact selection may fill: `FACTS_RATIO` of the way to the trigger, but no
    closer to it than `growth` (what one turn adds, `turn_growth`), so the request right after a
    compaction does not cross the trigger again; never below the aim."""
    base = aim(trigger_est, fixed, target_ratio, limit_est)
    wide = aim(trigger_est, fixed, max(target_ratio, FACTS_RATIO), limit_est)
    return max(base, min(wide, trigger_est - growth))


TURN_MESSAGES = 6
"""How many of the newest messages `turn_growth` looks at (a turn is two or three of them)."""


def turn_growth(ests: Sequence[int]) -> int:
    """What one turn may add to the next request: the two largest of the newest TURN_MESSAGES
    messages' estimates (an assistant message and its tool results). A run of short exchanges
    leaves the facts their room; a run whose tools return pages keeps a page of room free."""
    return sum(sorted(ests[-TURN_MESSAGES:], reverse=True)[:2])
