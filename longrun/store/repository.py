"""`Store`: the one gateway to Postgres for runs, task state, transcript, artifacts, projections,
the audit log and queued instructions.

`Store` only assembles its parts; each module has one concern and states the rules it keeps:

| module | concern |
|---|---|
| `core` | engine and sessions, transactions and retries, error translation, input checks, the chain-head caches |
| `runs` | creating, reading and listing runs; status, spec, calibration |
| `state` | the head state and compare-and-set |
| `appends` | appending to the transcript and audit chains in one statement on the cached head |
| `transcript` | the hash-chained transcript |
| `audit` | the hash-chained audit log |
| `artifacts` | content-addressed artifacts and compaction projections |
| `facts` | a run's fact store, saved with the projection that added its rows |
| `instructions` | the inbox of a human's `say` instructions |
| `principals` | principals, their public keys, and approvers' argument edits |
| `console` | the console's sealed keys and its sessions |
| `closed` | what the task state closed and moved out (`closing`: which items, and how they move) |
| `run_tools` | the tools each run was offered at its start |
| `lineage` | forks: making one, and who forked from whom (`run_lineage`) |
| `verify` | `verify_chain` |
| `retention` | pinning runs, pruning finished runs' bodies to tombstones (`tombstone`) |
| `overview` | counts over every run, for the console's `/metrics` |

The names below `Store` are re-exported here because callers import them from this module.
"""

from __future__ import annotations

from longrun.store.artifacts import ArtifactsMixin
from longrun.store.closed import ClosedMixin
from longrun.store.console import ConsoleMixin
from longrun.store.core import (
    MAX_ARTIFACT_BYTES,
    MAX_ATTEMPTS,
    MAX_CACHED_HEADS,
    MAX_CALIBRATION_BYTES,
    MAX_EVENT_BYTES,
    MAX_INSTRUCTION_CHARS,
    MAX_MESSAGE_BYTES,
    MAX_STATE_BYTES,
    RETRYABLE_SQLSTATES,
    InvalidInputError,
    StaleProjectionError,
    translate_db_error,
)
from longrun.store.instructions import InstructionsMixin
from longrun.store.lineage import LineageMixin
from longrun.store.overview import OverviewMixin
from longrun.store.principals import PrincipalsMixin
from longrun.store.retention import RetentionMixin
from longrun.store.run_requests import RunRequestsMixin
from longrun.store.run_tools import RunToolsMixin
from longrun.store.runs import RunsMixin
from longrun.store.spend import SpendMixin
from longrun.store.turn_reads import TurnReadsMixin
from longrun.store.verify import VerifyMixin


class Store(LineageMixin, RunsMixin, TurnReadsMixin, ClosedMixin, ArtifactsMixin, InstructionsMixin, PrincipalsMixin,
            ConsoleMixin, VerifyMixin, RunToolsMixin, RunRequestsMixin, RetentionMixin, OverviewMixin, SpendMixin):
    """Repository over one PostgreSQL database (see each part's module for its rules).

    Thread-safe: share one `Store` per process; each call checks a connection out of the pool.
    """


__all__ = [
    "MAX_ARTIFACT_BYTES",
    "MAX_ATTEMPTS",
    "MAX_CACHED_HEADS",
    "MAX_CALIBRATION_BYTES",
    "MAX_EVENT_BYTES",
    "MAX_INSTRUCTION_CHARS",
    "MAX_MESSAGE_BYTES",
    "MAX_STATE_BYTES",
    "RETRYABLE_SQLSTATES",
    "InvalidInputError",
    "StaleProjectionError",
    "Store",
    "translate_db_error",
]
