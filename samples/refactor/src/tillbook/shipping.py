"""Shipping: free for goods from £40, else by parcel weight."""

from tillbook.catalog import product
from tillbook.lines import calc_total

FREE_FROM = 4000
RATES = ((1000, 295), (5000, 495))  # (up to grams, pence); heavier parcels cost HEAVY
HEAVY = 995


def calc_total_weight(lines):
    """The parcel's weight in grams."""
    return sum(product(line.sku).grams * line.quantity for line in lines)


def shipping_cost(lines):
    """Pence to post the order (0 for an empty order: nothing is posted)."""
    if not lines or calc_total(lines) >= FREE_FROM:
        return 0
    grams = calc_total_weight(lines)
    return next((price for limit, price in RATES if grams <= limit), HEAVY)
