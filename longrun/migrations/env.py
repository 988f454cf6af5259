"""Alembic environment for longrun.

Run through `longrun.store.migrate` / `downgrade` (module `longrun.store.migrator`), which build
the `Config` in code. When the caller hands over a connection in `config.attributes["connection"]`
(tests, `longrun dev up`), the migration runs on it; otherwise an engine is built from
`sqlalchemy.url`.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy.engine import Connection

from longrun.store.engine import make_engine
from longrun.store.tables import Base

config = context.config
target_metadata = Base.metadata


def _run(connection: Connection) -> None:
    context.configure(connection=connection, target_metadata=target_metadata, compare_type=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_offline() -> None:
    context.configure(
        url=config.get_main_option("sqlalchemy.url"),
        target_metadata=target_metadata,
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = make_engine(config.get_main_option("sqlalchemy.url") or "", pool_size=1, max_overflow=0)
    try:
        with engine.connect() as conn:
            _run(conn)
            conn.commit()
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
