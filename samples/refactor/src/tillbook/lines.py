"""Order lines, and the sum of their amounts.

Every other module works on a list of `Line`s: a basket's lines, an order's, the lines a
customer brings back.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Line:
    sku: str
    quantity: int
    unit_price: int  # pence, before VAT


def line_amount(line):
    """Quantity times unit price, in pence."""
    return line.quantity * line.unit_price


def calc_total(lines):
    """The sum of the line amounts, in pence: before discounts, VAT and shipping."""
    return sum(line_amount(line) for line in lines)
