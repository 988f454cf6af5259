"""Shared fixtures live in tests/fixtures/, one module per part, loaded as plugins."""

pytest_plugins = [
    "tests.fixtures.db",
    "tests.fixtures.temporal",
    "tests.fixtures.anthropic",
    "tests.support.cli_stack",
]
