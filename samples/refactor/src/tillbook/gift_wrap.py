"""Gift wrapping: free from £30 of goods, else a flat charge per order."""

from tillbook.lines import calc_total

WRAP_CHARGE = 250
FREE_WRAP_FROM = 3000


def wrap_charge(lines):
    """Pence charged for wrapping the order (0 when the goods reach £30)."""
    return 0 if calc_total(lines) >= FREE_WRAP_FROM else WRAP_CHARGE
