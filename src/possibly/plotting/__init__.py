"""Plots, one module per application; matplotlib is imported only when a plot is asked for."""

from __future__ import annotations

__all__ = ["pyplot"]


def pyplot():
    """Return ``matplotlib.pyplot`` with a non-interactive backend, or explain how to get it."""
    try:
        import matplotlib
    except ImportError:
        raise ImportError("plotting needs matplotlib: pip install 'possibly[plot]'") from None
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt
