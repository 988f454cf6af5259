"""Statements: invoices grouped by customer, rendered as plain text."""

from ledger.invoice import Invoice


def group_by_customer(lines):
    """{customer: [lines]} in the order the customers first appear."""
    groups = {}
    for line in lines:
        groups.setdefault(line.customer, []).append(line)
    return groups


def invoices(lines, currency="EUR"):
    """One invoice per customer, customers in alphabetical order."""
    groups = group_by_customer(lines)
    return [Invoice(customer, groups[customer], currency) for customer in sorted(groups)]


def statement(lines, currency="EUR"):
    """A plain-text statement: one row per customer, then the grand total."""
    rows = []
    grand = None
    for invoice in invoices(lines, currency):
        total = invoice.total()
        grand = total if grand is None else grand + total
        rows.append(f"{invoice.customer:<20} {len(invoice.lines):>3} lines {str(total):>14}")
    rows.append("-" * 42)
    rows.append(f"{'TOTAL':<20} {'':>9} {str(grand) if grand else '0.00 ' + currency:>14}")
    return "\n".join(rows)
