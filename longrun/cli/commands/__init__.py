"""The `longrun` subcommands' handlers, one module per group; their arguments are declared in
`longrun.cli.parsers` (the module of the same name), which names each handler by module and
function so that a module here is imported only when one of its commands runs.

A handler is `(args) -> int`, sync or async; `common` holds what they share.
"""
