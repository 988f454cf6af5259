"""Discounts: 3 for 2 on marked SKUs, then a percentage off orders over a threshold."""

from tillbook.lines import calc_total
from tillbook.money import share

MULTIBUY_SKUS = frozenset({"TEA-0001"})
THRESHOLD = 5000  # £50.00 of goods, after multibuy
THRESHOLD_PERCENT = 10


def multibuy_discount(lines):
    """3 for 2: every third unit of a marked SKU is free."""
    return sum((line.quantity // 3) * line.unit_price for line in lines if line.sku in MULTIBUY_SKUS)


def threshold_discount(lines):
    """THRESHOLD_PERCENT off the goods (after multibuy) once they reach THRESHOLD."""
    goods = calc_total(lines) - multibuy_discount(lines)
    return share(goods, THRESHOLD_PERCENT, 100) if goods >= THRESHOLD else 0


def total_discount(lines):
    return multibuy_discount(lines) + threshold_discount(lines)
