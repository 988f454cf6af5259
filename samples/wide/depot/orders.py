"""Customer orders: lines of an item and a quantity."""

from dataclasses import dataclass, field


@dataclass(frozen=True)
class OrderLine:
    sku: str
    quantity: int


@dataclass
class Order:
    number: str
    lines: list = field(default_factory=list)

    def add(self, sku, quantity):
        if quantity <= 0:
            raise ValueError("an order line needs a positive quantity")
        self.lines.append(OrderLine(sku, quantity))

    def quantity_of(self, sku):
        return sum(line.quantity for line in self.lines if line.sku == sku)

    def skus(self):
        return sorted({line.sku for line in self.lines})
