"""Puts `src/` on the import path (the tests run from the sample's folder without installing
it) and holds the orders the tests share."""

import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
sys.path.insert(0, str(SRC))

from tillbook.lines import Line  # noqa: E402

SMALL = [Line("MUG-0001", 2, 899), Line("TEA-0001", 1, 350)]
"""£21.48 of goods: no discount, VAT on the mugs, posted at the light rate."""
LARGE = [Line("POT-0001", 1, 2450), Line("CAD-0001", 1, 1299), Line("TEA-0001", 6, 350)]
"""£58.49 of goods: two teas free (3 for 2), then 10% off, free shipping."""
