import unittest

from stats import mean, moving_average


class MeanTest(unittest.TestCase):
    def test_mean(self):
        self.assertEqual(mean([1, 2, 3, 4]), 2.5)

    def test_empty(self):
        with self.assertRaises(ValueError):
            mean([])


class MovingAverageTest(unittest.TestCase):
    def test_pairs(self):
        self.assertEqual(moving_average([1, 2, 3, 4], 2), [1.5, 2.5, 3.5])

    def test_whole_window(self):
        self.assertEqual(moving_average([2, 4, 6], 3), [4.0])

    def test_window_must_be_positive(self):
        with self.assertRaises(ValueError):
            moving_average([1], 0)


if __name__ == "__main__":
    unittest.main()
