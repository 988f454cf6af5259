"""The `longrun` command line: a thin front end on the client (`longrun.client`), one module per
group of subcommands.

| module | job |
|---|---|
| `entry` | the parser and `main`: one subcommand per job, errors mapped onto exit codes |
| `commands/` | the subcommands, one module per group (`register(subparsers)` each) |
| `compact_cmd` | `longrun compact TRANSCRIPT`: offline compaction of a transcript |

The console (`longrun.console`) is the other front end; neither imports the other's modules.
`longrun serve` only launches the console through its package's public names
(tests/test_import_graph.py holds both rules).
"""

from longrun.cli.entry import build_parser, main

__all__ = ["build_parser", "main"]
