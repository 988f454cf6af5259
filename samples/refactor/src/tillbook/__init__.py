"""tillbook: a small tea shop's till: baskets, discounts, VAT, shipping, invoices and reports.

Amounts are whole pence (int) everywhere; `tillbook.money` parses and formats them.
"""
