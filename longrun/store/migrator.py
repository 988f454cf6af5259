"""Run the alembic migrations shipped inside the package, on a URL or an engine.

The alembic `Config` is built in code (no alembic.ini) with `script_location` pointing at
`longrun/migrations`, so an installed `longrun` can migrate any database it is pointed at.

Callers use `longrun.store.migrate` (and the other four names), which imports this module, and
with it alembic and mako, only when first called: commands that do not migrate do not load them.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine

from longrun.store.engine import libpq_url, make_engine

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"


def alembic_config(url: str | None = None) -> Config:
    """An alembic `Config` for longrun's migrations (optionally with `sqlalchemy.url` set)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    if url is not None:
        # ConfigParser interpolates '%': escape it so URL-encoded passwords survive.
        config.set_main_option("sqlalchemy.url", libpq_url(url).replace("%", "%%"))
    return config


def _run(url_or_engine: str | Engine, action: str, revision: str) -> None:
    owned = isinstance(url_or_engine, str)
    engine = make_engine(url_or_engine, pool_size=1, max_overflow=0) if isinstance(url_or_engine, str) else url_or_engine
    try:
        with engine.begin() as conn:
            config = alembic_config()
            config.attributes["connection"] = conn
            getattr(command, action)(config, revision)
    finally:
        if owned:
            engine.dispose()


def migrate(url_or_engine: str | Engine, revision: str = "head") -> None:
    """Upgrade the database to `revision` (default: the newest), in one transaction.

    Args:
        url_or_engine: a `postgresql://` URL or an engine from `make_engine`.
        revision: alembic revision id or `head`.
    """
    _run(url_or_engine, "upgrade", revision)


def downgrade(url_or_engine: str | Engine, revision: str = "base") -> None:
    """Downgrade the database to `revision` (default: `base`, i.e. drop every longrun table)."""
    _run(url_or_engine, "downgrade", revision)


def current_revision(url_or_engine: str | Engine) -> str | None:
    """The revision the database is at, or None when it was never migrated."""
    owned = isinstance(url_or_engine, str)
    engine = make_engine(url_or_engine, pool_size=1, max_overflow=0) if isinstance(url_or_engine, str) else url_or_engine
    try:
        with engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    finally:
        if owned:
            engine.dispose()


def head_revision() -> str | None:
    """The newest revision shipped with this package."""
    return ScriptDirectory.from_config(alembic_config()).get_current_head()
