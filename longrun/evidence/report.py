"""What `verify-bundle` found: counts per kind of thing checked, and every bad member or row."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

WHAT_TO_DO = ("do not rely on this bundle: it is not what was exported. Ask whoever exported it for a fresh "
              "`longrun export` (signed with --sign-as), and compare its chain heads with theirs")


@dataclass(frozen=True)
class Finding:
    """One failure: the member, the row (line, from 1) when there is one, and why."""

    member: str
    row: int | None
    reason: str

    def __str__(self) -> str:
        return f"{self.member}{f' row {self.row}' if self.row is not None else ''}: {self.reason}"


@dataclass
class BundleReport:
    path: str
    checked: Counter[str] = field(default_factory=Counter)
    problems: list[Finding] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)
    exported_at: str | None = None
    signed_by: str | None = None
    """`principal (key KEY_ID)` when the manifest's signature verified."""
    signers: dict[str, str] = field(default_factory=dict)
    """key id -> principal of every key in the bundle, to compare with what you know out of band."""

    @property
    def ok(self) -> bool:
        return not self.problems

    def bad(self, member: str, row: int | None, reason: str) -> None:
        self.problems.append(Finding(member, row, reason))

    def lines(self) -> list[str]:
        out = [f"bundle {self.path}: runs {', '.join(self.runs) or '(none)'}, exported {self.exported_at or '?'}"]
        out += [f"  checked {n} {kind}" for kind, n in sorted(self.checked.items())]
        out.append(f"  bundle signature: {self.signed_by or 'none (the manifest is not signed)'}")
        out += [f"  key {k}: {p}" for k, p in sorted(self.signers.items())]
        if self.ok:
            out.append("OK: every member, hash chain and signature verifies")
        else:
            out.append(f"FAILED: {len(self.problems)} problem(s):")
            out += [f"  {p}" for p in self.problems]
            out.append(f"What to do: {WHAT_TO_DO}")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "ok": self.ok, "runs": self.runs, "exported_at": self.exported_at,
                "checked": dict(self.checked), "signed_by": self.signed_by, "keys": self.signers,
                "problems": [{"member": p.member, "row": p.row, "reason": p.reason} for p in self.problems]}


__all__ = ["WHAT_TO_DO", "BundleReport", "Finding"]
