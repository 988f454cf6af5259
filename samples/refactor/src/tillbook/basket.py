"""A basket being filled at the till: quantities per SKU at catalogue prices."""

from tillbook.catalog import product
from tillbook.lines import Line, calc_total


class Basket:
    def __init__(self):
        self._quantities = {}

    def add(self, sku, quantity=1):
        """Add units of a SKU (its price is looked up now, so an unknown SKU fails here)."""
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        product(sku)
        self._quantities[sku] = self._quantities.get(sku, 0) + quantity

    def remove(self, sku, quantity=1):
        """Take units out; the SKU's line goes when none is left."""
        left = self._quantities.get(sku, 0) - quantity
        if left < 0:
            raise ValueError(f"the basket holds fewer than {quantity} of {sku}")
        if left:
            self._quantities[sku] = left
        else:
            self._quantities.pop(sku, None)

    def lines(self):
        """The basket as order lines, in SKU order."""
        return [Line(sku, q, product(sku).price) for sku, q in sorted(self._quantities.items())]

    @property
    def subtotal(self):
        """What the goods cost before discounts, VAT and shipping (shown on the till's screen)."""
        return calc_total(self.lines())
