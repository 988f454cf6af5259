"""`python -m longrun.cli ...`: the same as the `longrun` script."""

import sys

from longrun.cli import main

sys.exit(main())
