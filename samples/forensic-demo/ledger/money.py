"""Money: a Decimal amount in one currency, always rounded half-up to cents."""

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")


class Money:
    __slots__ = ("amount", "currency")

    def __init__(self, amount, currency="EUR"):
        self.amount = Decimal(str(amount)).quantize(CENT, rounding=ROUND_HALF_UP)
        self.currency = currency

    def _check(self, other):
        if not isinstance(other, Money):
            raise TypeError(f"cannot combine Money with {type(other).__name__}")
        if other.currency != self.currency:
            raise ValueError(f"currency mismatch: {self.currency} and {other.currency}")

    def __add__(self, other):
        self._check(other)
        return Money(self.amount + other.amount, self.currency)

    def __sub__(self, other):
        self._check(other)
        return Money(self.amount - other.amount, self.currency)

    def times(self, factor):
        """This amount multiplied by a number (a quantity or a rate), rounded to cents."""
        return Money(self.amount * Decimal(str(factor)), self.currency)

    def __eq__(self, other):
        return isinstance(other, Money) and (self.amount, self.currency) == (other.amount, other.currency)

    def __hash__(self):
        return hash((self.amount, self.currency))

    def __ge__(self, other):
        self._check(other)
        return self.amount >= other.amount

    def __repr__(self):
        return f"Money('{self.amount}', '{self.currency}')"

    def __str__(self):
        return f"{self.amount} {self.currency}"


def zero(currency="EUR"):
    return Money(0, currency)
