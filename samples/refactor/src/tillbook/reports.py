"""End-of-day figures: gross sales (goods before discounts), takings, the average basket."""

from tillbook.checkout import amount_due
from tillbook.lines import calc_total


def gross_sales(orders):
    """Goods sold, before discounts, VAT and shipping; `orders` is a list of line lists."""
    return sum(calc_total(lines) for lines in orders)


def takings(orders):
    """What the customers paid."""
    return sum(amount_due(lines) for lines in orders)


def average_basket(orders):
    """Gross sales per order, in whole pence (0 on a day without orders)."""
    return gross_sales(orders) // len(orders) if orders else 0
