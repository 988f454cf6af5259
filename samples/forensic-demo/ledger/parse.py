"""Reading order lines: `customer,sku,quantity,unit_price` per CSV row."""

import csv
import io
from dataclasses import dataclass

from ledger.money import Money


class ParseError(ValueError):
    """A row that cannot be read; the message names the row number."""


@dataclass(frozen=True)
class Line:
    customer: str
    sku: str
    quantity: int
    unit_price: Money

    def amount(self):
        """Quantity times unit price."""
        return self.unit_price.times(self.quantity)


def parse_lines(text, currency="EUR"):
    """Order lines from CSV text. Blank rows and rows starting with '#' are skipped."""
    lines = []
    reader = csv.reader(io.StringIO(text))
    for number, row in enumerate(reader, start=1):
        if not row or not row[0].strip() or row[0].startswith("#"):
            continue
        if len(row) != 4:
            raise ParseError(f"row {number}: expected 4 fields, got {len(row)}")
        customer, sku, quantity, price = (field.strip() for field in row)
        try:
            qty = int(quantity)
        except ValueError:
            raise ParseError(f"row {number}: quantity {quantity!r} is not an integer") from None
        if qty <= 0:
            raise ParseError(f"row {number}: quantity must be positive")
        lines.append(Line(customer, sku, qty, Money(price, currency)))
    return lines
