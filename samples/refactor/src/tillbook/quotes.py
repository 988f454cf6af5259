"""A written quote for a basket the customer has not paid yet: the goods and the amount due."""

from tillbook.checkout import amount_due
from tillbook.lines import calc_total
from tillbook.money import fmt


def quote(lines):
    """'Goods £x, to pay £y': goods before discounts, VAT and shipping, then what the till would ask."""
    return f"Goods {fmt(calc_total(lines))}, to pay {fmt(amount_due(lines))}"
