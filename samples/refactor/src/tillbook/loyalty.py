"""Loyalty points: one per whole pound spent on goods after discounts; members earn double."""

from tillbook.discounts import total_discount
from tillbook.lines import calc_total


def points(lines, member=False):
    spent = calc_total(lines) - total_discount(lines)
    earned = max(spent, 0) // 100
    return 2 * earned if member else earned
