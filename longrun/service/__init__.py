"""The process-level pieces: a worker (`worker`: `longrun.Worker`, `build_worker`, `run_worker`),
the settings every process reads (`settings`), and the embedded dev stack (`devstack`).

The front ends are elsewhere: the command line in `longrun.cli`, the web console in
`longrun.console`, the demo in `longrun.demo`, all on the client (`longrun.client`). Nothing here
imports them (tests/test_import_graph.py).
"""
