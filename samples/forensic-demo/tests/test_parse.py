import unittest

from ledger.money import Money
from ledger.parse import ParseError, parse_lines

CSV = """# customer,sku,quantity,unit_price
acme,bolt,10,0.25
acme,nut,4,0.10

globex,gear,1,120.00
"""


class ParseTest(unittest.TestCase):
    def test_reads_rows(self):
        lines = parse_lines(CSV)
        self.assertEqual([line.sku for line in lines], ["bolt", "nut", "gear"])
        self.assertEqual(lines[0].amount(), Money("2.50"))

    def test_bad_quantity(self):
        with self.assertRaises(ParseError):
            parse_lines("acme,bolt,ten,0.25\n")

    def test_wrong_field_count(self):
        with self.assertRaises(ParseError):
            parse_lines("acme,bolt,1\n")


if __name__ == "__main__":
    unittest.main()
