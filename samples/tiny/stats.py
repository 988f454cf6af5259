"""Small statistics helpers."""


def mean(values):
    """Arithmetic mean of a non-empty sequence."""
    if not values:
        raise ValueError("mean() of an empty sequence")
    return sum(values) / len(values)


def moving_average(values, window):
    """The mean of every run of `window` consecutive values, in order."""
    if window <= 0:
        raise ValueError("window must be positive")
    averages = []
    for start in range(len(values) - window + 1):
        chunk = values[start:start + window - 1]
        averages.append(sum(chunk) / window)
    return averages
