"""A plain-text invoice: one row per line, then the bill."""

from tillbook.catalog import product
from tillbook.checkout import bill
from tillbook.lines import line_amount
from tillbook.money import fmt

WIDTH = 44


def _row(label, amount):
    text = fmt(amount)
    return f"{label:<{WIDTH - len(text)}}{text}"


def render(number, lines):
    """The invoice text for order `number`."""
    b = bill(lines)
    rows = [f"Invoice {number}", "-" * WIDTH]
    rows += [_row(f"{line.quantity} x {product(line.sku).name}", line_amount(line)) for line in lines]
    rows.append("-" * WIDTH)
    rows.append(_row("Goods", b.goods))
    if b.discount:
        rows.append(_row("Discount", -b.discount))
    rows += [_row("VAT", b.vat), _row("Shipping", b.shipping), _row("To pay", b.due)]
    return "\n".join(rows)
