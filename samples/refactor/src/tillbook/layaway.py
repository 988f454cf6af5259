"""Lay-away: the shop keeps the goods for a deposit of a fifth of their price."""

from tillbook.lines import calc_total
from tillbook.money import share


def deposit(lines):
    """A fifth of the goods, rounded half up, in pence."""
    return share(calc_total(lines), 1, 5)
