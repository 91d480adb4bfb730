"""Helpers shared by the filters' modules (not part of the public API)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from possibly.frames import component_columns, per_step_dataset, per_step_frame


def state_frame(mean: np.ndarray, variance: np.ndarray | None, log_c: np.ndarray,
                disc: np.ndarray, names: Sequence[str], index: Any,
                extra: Mapping[str, np.ndarray] | None = None) -> Any:
    """The per-step table of a filter or smoother result (see FilterResult.to_frame), with
    ``extra`` per-step columns ``(..., T)`` last."""
    cols = component_columns(mean, names)
    if variance is not None:
        with np.errstate(invalid="ignore"):
            cols.update(component_columns(np.sqrt(variance), names, "_sd"))
    cols["log_consistency"] = log_c
    cols["consistency"] = np.exp(log_c)
    cols["discount"] = disc
    cols.update(extra or {})
    return per_step_frame(cols, index)


def state_dataset(mean: np.ndarray, variance: np.ndarray | None, log_c: np.ndarray,
                  disc: np.ndarray, names: Sequence[str], index: Any,
                  extra: Mapping[str, np.ndarray] | None = None) -> Any:
    """The Dataset of a filter or smoother result (see FilterResult.to_xarray), with
    ``extra`` per-step variables ``(..., T)``."""
    data: dict[str, tuple[np.ndarray, tuple[str, ...]]] = {
        name: (value, ("state",)) for name, value in (("mean", mean), ("variance", variance))
        if value is not None}
    data.update(log_consistency=(log_c, ()), discount=(disc, ()))
    data.update({name: (value, ()) for name, value in (extra or {}).items()})
    return per_step_dataset(data, index, {"state": list(names)})
