"""Averages of demand windows."""


def mean_demand(window):
    """The mean of a window of weekly quantities; 0.0 for an empty window."""
    if not window:
        return 0.0
    return sum(window) // len(window)


def peak_demand(window):
    return max(window, default=0)
