"""Private helpers shared by the point possibility functions."""

from __future__ import annotations

import numpy as np

from possibly.validation import as_finite


def normalised(name: str, log_values) -> np.ndarray:
    """``log_values`` checked and shifted so that their max is 0 (``sup f = 1``)."""
    lv = as_finite(name, log_values, allow_inf=True)
    if (lv == np.inf).any():
        raise ValueError(f"{name} must not contain +inf")
    top = lv.max() if lv.size else -np.inf
    if top == -np.inf:
        raise ValueError(f"{name} must have at least one finite value (sup f = 1)")
    return lv - top
