"""Plots, one module per application; matplotlib is imported only when a plot is asked for."""

from __future__ import annotations

__all__ = ["pyplot"]


def pyplot():
    """Return ``matplotlib.pyplot``, or explain how to get it.

    The backend is the user's: it is never switched here (with no display, matplotlib itself
    falls back to a non-interactive one). Figures written to a file are closed after writing.
    """
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("plotting needs matplotlib: pip install 'possibly[plot]'") from None
    return plt
