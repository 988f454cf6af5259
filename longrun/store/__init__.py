"""The Postgres store: SQLAlchemy tables, migrations runner and the `Store` repository.

Compare-and-set on task state, append-only hash-chained history (state versions, transcript,
audit), content-addressed artifacts and projections. `repository` assembles `Store` from one
module per concern, each stating the rules its writes follow (`core` for those every method
keeps); `tables` says where chain heads live.
"""

from longrun.store.engine import libpq_url, make_engine, sqlalchemy_url, with_database
from longrun.store.migrate import alembic_config, current_revision, downgrade, head_revision, migrate
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
