"""The `longrun` command line (filled in by the CLI work)."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    print("longrun: under construction", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
