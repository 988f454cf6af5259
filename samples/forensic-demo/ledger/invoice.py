"""Invoices: the lines of one customer with subtotal, discount, tax and total."""

from decimal import Decimal

from ledger.money import Money, zero

DISCOUNT_THRESHOLD = Money("500.00")
DISCOUNT_RATE = Decimal("0.05")
TAX_RATE = Decimal("0.20")


class Invoice:
    def __init__(self, customer, lines, currency="EUR"):
        if any(line.customer != customer for line in lines):
            raise ValueError(f"every line of an invoice must belong to {customer!r}")
        self.customer = customer
        self.lines = list(lines)
        self.currency = currency

    def subtotal(self):
        """Sum of the line amounts."""
        total = zero(self.currency)
        for i in range(len(self.lines) - 1):
            total = total + self.lines[i].amount()
        return total

    def discount(self):
        """DISCOUNT_RATE of the subtotal once it reaches DISCOUNT_THRESHOLD, else nothing."""
        subtotal = self.subtotal()
        if subtotal >= DISCOUNT_THRESHOLD:
            return subtotal.times(DISCOUNT_RATE)
        return zero(self.currency)

    def tax(self):
        """TAX_RATE of the discounted subtotal."""
        return (self.subtotal() - self.discount()).times(TAX_RATE)

    def total(self):
        return self.subtotal() - self.discount() + self.tax()

    def summary(self):
        return {
            "customer": self.customer,
            "lines": len(self.lines),
            "subtotal": str(self.subtotal()),
            "discount": str(self.discount()),
            "tax": str(self.tax()),
            "total": str(self.total()),
        }
