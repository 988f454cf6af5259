"""Refunds: lines brought back get their share of what was paid for the goods (not shipping)."""

from collections import Counter

from tillbook.checkout import bill
from tillbook.lines import calc_total
from tillbook.money import share


def refund(sold, returned):
    """Pence to give back for `returned`, a subset of the lines `sold` in one order: the goods,
    discount and VAT paid, pro rata to the returned lines' amounts. Raises ValueError when more
    units come back than were sold."""
    bought = Counter()
    for line in sold:
        bought[line.sku] += line.quantity
    for line in returned:
        bought[line.sku] -= line.quantity
        if bought[line.sku] < 0:
            raise ValueError(f"more {line.sku} returned than sold")
    b = bill(sold)
    paid_for_goods = b.due - b.shipping
    return share(paid_for_goods, calc_total(returned), calc_total(sold))
