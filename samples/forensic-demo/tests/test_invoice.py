import unittest

from ledger.invoice import Invoice
from ledger.money import Money
from ledger.parse import parse_lines
from ledger.report import statement


class InvoiceTest(unittest.TestCase):
    def test_single_line(self):
        inv = Invoice("acme", parse_lines("acme,bolt,10,0.25\n"))
        self.assertEqual(inv.subtotal(), Money("2.50"))

    def test_subtotal_sums_every_line(self):
        inv = Invoice("acme", parse_lines("acme,bolt,10,0.25\nacme,nut,4,0.10\nacme,gear,2,3.00\n"))
        self.assertEqual(inv.subtotal(), Money("8.90"))

    def test_discount_and_tax(self):
        inv = Invoice("globex", parse_lines("globex,gear,4,100.00\nglobex,belt,2,50.00\n"))
        self.assertEqual(inv.subtotal(), Money("500.00"))
        self.assertEqual(inv.discount(), Money("25.00"))
        self.assertEqual(inv.tax(), Money("95.00"))
        self.assertEqual(inv.total(), Money("570.00"))

    def test_lines_must_match_customer(self):
        with self.assertRaises(ValueError):
            Invoice("acme", parse_lines("globex,gear,1,1.00\n"))

    def test_statement_lists_customers(self):
        text = statement(parse_lines("zeta,a,1,1.00\nacme,b,1,2.00\n"))
        self.assertLess(text.index("acme"), text.index("zeta"))
        self.assertIn("TOTAL", text)


if __name__ == "__main__":
    unittest.main()
