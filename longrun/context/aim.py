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
least (1 - FACTS_RATIO) of the compactable part to grow into, and one never fires on the turn
right after another.
"""

from __future__ import annotations

FACTS_RATIO = 0.8
"""How far from the unshrinkable part to the trigger the fact selection may fill, at least."""


def aim(trigger_est: int, fixed: int, target_ratio: float, limit_est: int) -> int:
    """Where a compaction aims, in estimated tokens: `target_ratio` of the way from the part no
    compaction can shrink (system prompt, tools, task state) to the trigger. Applying the ratio
    to the whole trigger would aim below that part whenever it is large next to the trigger
    (a small budget, many tools), so no compaction could reach its target and one would fire
    every turn; aiming inside the compactable part leaves the next turns their room."""
    return min(limit_est, fixed + max(0, int((trigger_est - fixed) * target_ratio)))


def facts_aim(trigger_est: int, fixed: int, target_ratio: float, limit_est: int) -> int:
    """Up to where the fact selection may fill: `FACTS_RATIO` of the way to the trigger, or the
    aim when that is further."""
    return aim(trigger_est, fixed, max(target_ratio, FACTS_RATIO), limit_est)
