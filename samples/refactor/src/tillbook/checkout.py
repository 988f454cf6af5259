"""The bill at checkout: goods, discount, VAT and shipping, and what the customer pays."""

from dataclasses import dataclass

from tillbook.discounts import total_discount
from tillbook.lines import calc_total
from tillbook.shipping import shipping_cost
from tillbook.tax import vat


@dataclass(frozen=True)
class Bill:
    goods: int
    discount: int
    vat: int
    shipping: int

    @property
    def due(self):
        return self.goods - self.discount + self.vat + self.shipping


def bill(lines):
    """The bill for an order's lines (all amounts in pence)."""
    discount = total_discount(lines)
    return Bill(calc_total(lines), discount, vat(lines, discount), shipping_cost(lines))


def amount_due(lines):
    return bill(lines).due
