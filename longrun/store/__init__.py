"""The Postgres store: SQLAlchemy tables, migrations runner and the `Store` repository.

Compare-and-set on task state, append-only hash-chained history (state versions, transcript,
audit), content-addressed artifacts and projections. `repository` assembles `Store` from one
module per concern, each stating the rules its writes follow (`core` for those every method
keeps); `tables` says where chain heads live.

The migrations runner (`alembic_config`, `current_revision`, `downgrade`, `head_revision`,
`migrate`) is imported on first use (`__getattr__`), not with the package: it loads alembic and
mako, and only `longrun dev up`, the worker's start and the tests migrate; every other command
reads and writes an already migrated database (tests/test_cli_imports.py).
"""

import importlib
from typing import TYPE_CHECKING, Any

from longrun.store.engine import libpq_url, make_engine, sqlalchemy_url, with_database
from longrun.store.records import (
    AuditRecord,
    ChainVerdict,
    InstructionRecord,
    RunRecord,
    StateVersionRecord,
    TranscriptRecord,
)
from longrun.store.repository import (
    InvalidInputError,
    StaleProjectionError,
    Store,
    translate_db_error,
)
from longrun.store.tables import APPEND_ONLY_TABLES, CHAINED_TABLES, Base

if TYPE_CHECKING:
    from longrun.store.migrator import alembic_config, current_revision, downgrade, head_revision, migrate

_MIGRATE = frozenset({"alembic_config", "current_revision", "downgrade", "head_revision", "migrate"})


def __getattr__(name: str) -> Any:
    """The migrations runner's functions (`longrun.store.migrator`), imported when first asked for."""
    if name not in _MIGRATE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    runner = importlib.import_module("longrun.store.migrator")
    globals().update({n: getattr(runner, n) for n in _MIGRATE})
    return globals()[name]


__all__ = [
    "APPEND_ONLY_TABLES",
    "CHAINED_TABLES",
    "AuditRecord",
    "Base",
    "ChainVerdict",
    "InstructionRecord",
    "InvalidInputError",
    "RunRecord",
    "StaleProjectionError",
    "StateVersionRecord",
    "Store",
    "TranscriptRecord",
    "alembic_config",
    "current_revision",
    "downgrade",
    "head_revision",
    "libpq_url",
    "make_engine",
    "migrate",
    "sqlalchemy_url",
    "translate_db_error",
    "with_database",
]
