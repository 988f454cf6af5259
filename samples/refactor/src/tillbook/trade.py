"""Trade customers: 5% off the goods of an order once their average basket reaches £100."""

from tillbook.lines import calc_total
from tillbook.money import share
from tillbook.reports import average_basket

TRADE_FROM = 10000


def trade_discount(history, lines):
    """Pence off this order for a customer with these past orders (0 below the threshold)."""
    if average_basket(history) < TRADE_FROM:
        return 0
    return share(calc_total(lines), 5, 100)
