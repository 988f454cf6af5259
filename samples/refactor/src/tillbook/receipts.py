"""The one-line receipt a card terminal prints: the number of items and the goods."""

from tillbook.lines import calc_total
from tillbook.money import fmt


def receipt_line(lines):
    """'3 item(s), goods £12.34'."""
    items = sum(line.quantity for line in lines)
    return f"{items} item(s), goods {fmt(calc_total(lines))}"
