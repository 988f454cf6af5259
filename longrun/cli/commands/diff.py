"""`longrun diff RUN [--stat]`: a run's change set, from git.

A run on a git workspace works on its branch `longrun/<run_id>` (longrun.workspace); its audit's
`change_set_opened` event names the repository, the branch and the commit it started from. This
prints `git diff BASE longrun/<run_id>`: a patch on stdout that `git apply` takes (`--binary`,
renames found), or with `--stat` the branch, its commits (one per confirmed edit, oldest first)
and git's summary of the files. Reads PostgreSQL and the repository; Temporal is not needed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from longrun.cli.commands.common import EXIT_FAIL, EXIT_OK, open_store_only, print_json, say
from longrun.client.reports import change_set_of
from longrun.workspace import GitError, commits, diff


def cmd_diff(args: argparse.Namespace) -> int:
    store = open_store_only()
    try:
        store.get_run(args.run)
        change = change_set_of(store, args.run)
    finally:
        store.engine.dispose()
    if change is None:
        print(f"run {args.run} has no change set: it worked in the workspace folder itself (not a git repository, "
              "or started with --in-place); `longrun audit RUN` lists its edits", file=sys.stderr)
        return EXIT_FAIL
    repo = Path(change.repo)
    try:
        listed = commits(repo, change)
        text = diff(repo, change, stat=args.stat)
    except GitError as exc:
        print(f"cannot show the change set: {exc}", file=sys.stderr)
        return EXIT_FAIL
    if args.json:
        print_json({"run_id": args.run, "repo": change.repo, "branch": change.branch, "base": change.base,
                    "worktree": change.worktree, "commits": [{"commit": c, "subject": s} for c, s in listed],
                    "stat" if args.stat else "patch": text})
    elif args.stat:
        say(f"branch {change.branch} in {change.repo}, from {change.base[:12]}; {len(listed)} commit(s):")
        for sha, subject in listed:
            say(f"  {sha[:12]} {subject}")
        say(text.rstrip("\n"))
    else:
        sys.stdout.write(text if text.strip() else "")
        sys.stdout.flush()
    return EXIT_OK


__all__ = ["change_set_of", "cmd_diff"]
