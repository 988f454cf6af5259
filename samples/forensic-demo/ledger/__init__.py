"""ledger: invoices and statements from CSV order lines."""

from ledger.invoice import Invoice
from ledger.money import Money
from ledger.parse import Line, parse_lines
from ledger.report import statement

__all__ = ["Invoice", "Line", "Money", "parse_lines", "statement"]
