"""Value of the stock on hand, at unit cost."""


def stock_value(ledger, catalogue):
    """Total value of every item on hand, rounded to cents."""
    total = 0.0
    for sku in ledger.items():
        total += ledger.on_hand(sku) * catalogue[sku].unit_cost
    return round(total, 2)
