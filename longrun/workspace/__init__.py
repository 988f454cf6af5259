"""Where a run works: the workspace folder itself, or (a git repository) a branch of its own in a
worktree, one commit per confirmed file effect (`changeset`), through the `git` binary (`git`)."""

from longrun.workspace.changeset import (
    ACTION_TRAILER,
    BRANCH_PREFIX,
    ChangeSet,
    Trailers,
    WorkspaceDirty,
    branch_for,
    clear_stale_locks,
    commit_effect,
    commits,
    diff,
    find_commit,
    is_git_workspace,
    open_change_set,
    paths_clean,
)
from longrun.workspace.git import GitError

__all__ = [
    "ACTION_TRAILER", "BRANCH_PREFIX", "ChangeSet", "GitError", "Trailers", "WorkspaceDirty", "branch_for",
    "clear_stale_locks", "commit_effect", "commits", "diff", "find_commit", "is_git_workspace", "open_change_set",
    "paths_clean",
]
