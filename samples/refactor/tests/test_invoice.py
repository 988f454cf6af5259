import unittest

from context import LARGE, SMALL
from tillbook.invoice import WIDTH, render


class InvoiceTest(unittest.TestCase):
    def test_rows(self):
        rows = render("2025-0042", SMALL).splitlines()
        self.assertEqual(rows[0], "Invoice 2025-0042")
        self.assertTrue(rows[2].startswith("2 x Enamel mug") and rows[2].endswith("£17.98"))
        self.assertTrue(rows[-1].startswith("To pay") and rows[-1].endswith("£28.03"))
        self.assertNotIn("Discount", "\n".join(rows))
        self.assertTrue(all(len(row) == WIDTH for row in rows[1:]))

    def test_discount_row(self):
        text = render("2025-0043", LARGE)
        self.assertIn("-£12.15", text)
        self.assertTrue(text.endswith("£52.28"))


if __name__ == "__main__":
    unittest.main()
