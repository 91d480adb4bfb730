"""Per-step tables of results: pandas DataFrames and xarray Datasets indexed by time.

Every filter and estimator result holds arrays with one entry per time step, of shape
``(..., T)`` or ``(..., T, k)`` with leading batch dimensions. These functions lay them out
once for all results, with the time labels of a pandas input, so that each result's
``to_frame`` and ``to_xarray`` only name their arrays. pandas and xarray are optional
dependencies, imported only when a table is asked for.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["component_columns", "per_step_dataset", "per_step_frame", "time_labels"]


def _need(module: str, extra: str, what: str) -> Any:
    """Import an optional dependency, or say which extra provides it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ImportError(f"{what} needs {module}: pip install \"possibly[{extra}]\" (or "
                          f"pip install \".[{extra}]\" from a checkout)") from None


def time_labels(data: Any, axis: int) -> Any:
    """The labels of the time axis of a pandas input, or None for any other input.

    Parameters
    ----------
    data : any
        The input of a filter or an estimator.
    axis : {0, -1}
        The time axis: 0 for the filters (a DataFrame's rows are the time steps), -1 for the
        estimators (a Series' index; a DataFrame's columns).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> y = pd.Series([1.0, 2.0], index=pd.date_range("2024-01-01", periods=2, freq="D"))
    >>> time_labels(y, 0).strftime("%m-%d").tolist(), time_labels(np.ones(2), 0)
    (['01-01', '01-02'], None)
    """
    if not hasattr(data, "to_numpy") or not hasattr(data, "index"):
        return None
    if getattr(data, "ndim", 1) == 1 or axis == 0:
        return data.index
    return data.columns


def component_columns(values: np.ndarray, names: Sequence[str],
                      suffix: str = "") -> dict[str, np.ndarray]:
    """Split per-step vectors ``(..., T, k)`` into ``k`` columns ``(..., T)`` named
    ``names[j] + suffix``.

    Examples
    --------
    >>> sorted(component_columns(np.zeros((3, 2)), ["a", "b"], "_sd"))
    ['a_sd', 'b_sd']
    """
    return {f"{name}{suffix}": values[..., j] for j, name in enumerate(names)}


def _steps(arrays: Sequence[np.ndarray], event: Sequence[int]) -> tuple[tuple[int, ...], int]:
    """The batch shape and the number of steps shared by ``arrays`` (``event[i]`` trailing
    dimensions after the time axis)."""
    shapes = {a.shape[:a.ndim - e] for a, e in zip(arrays, event, strict=True)}
    if len(shapes) != 1:
        raise ValueError(f"per-step arrays must share their batch and time axes, got "
                         f"{sorted(shapes)}")
    (shape,) = shapes
    return shape[:-1], shape[-1]


def per_step_frame(columns: Mapping[str, np.ndarray], index: Any = None) -> Any:
    """A DataFrame with one row per step (and per series), from per-step arrays.

    Parameters
    ----------
    columns : mapping of str to ndarray, each of shape (..., T)
        The columns, in order.
    index : pandas.Index of length T, optional
        The time labels (the index of a pandas input); default a RangeIndex named ``step``.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``index``; with batch dimensions, by a leading ``series`` level (the
        flattened batch position) and ``index``.

    Examples
    --------
    >>> import numpy as np
    >>> per_step_frame({"a": np.array([[1.0, 2.0], [3.0, 4.0]])})
                  a
    series step
    0      0     1.0
           1     2.0
    1      0     3.0
           1     4.0
    """
    pd = _need("pandas", "pandas", "to_frame")
    arrays = [np.asarray(v) for v in columns.values()]
    batch, T = _steps(arrays, [0] * len(arrays))
    cols = {name: a.reshape(-1) for name, a in zip(columns, arrays, strict=True)}
    index = index if index is not None else pd.RangeIndex(T, name="step")
    if batch:
        size = int(np.prod(batch))
        index = pd.MultiIndex.from_product([pd.RangeIndex(size, name="series"), index])
    return pd.DataFrame(cols, index=index)


def per_step_dataset(variables: Mapping[str, tuple[np.ndarray, Sequence[str]]],
                     index: Any = None, coords: Mapping[str, Any] | None = None) -> Any:
    """An xarray Dataset with a ``time`` dimension, from per-step arrays.

    Parameters
    ----------
    variables : mapping of str to (ndarray, event dimension names)
        Each array has shape ``(..., T, *event)``; its batch dimensions are named
        ``series_0, series_1, ...``.
    index : pandas.Index of length T, optional
        The ``time`` coordinate (the index of a pandas input); default ``0, ..., T - 1``.
    coords : mapping, optional
        Coordinates of the event dimensions (e.g. ``{"state": names}``).

    Returns
    -------
    xarray.Dataset

    Examples
    --------
    >>> import numpy as np
    >>> ds = per_step_dataset({"a": (np.zeros((2, 3)), ()), "b": (np.zeros((2, 3, 4)), ("k",))})
    >>> dict(ds.sizes)
    {'series_0': 2, 'time': 3, 'k': 4}
    """
    xr = _need("xarray", "xarray", "to_xarray")
    arrays = [np.asarray(v) for v, _ in variables.values()]
    events = [tuple(e) for _, e in variables.values()]
    batch, T = _steps(arrays, [len(e) for e in events])
    batch_dims = [f"series_{i}" for i in range(len(batch))]
    data = {name: ([*batch_dims, "time", *e], a)
            for name, a, e in zip(variables, arrays, events, strict=True)}
    time = index if index is not None else np.arange(T)
    return xr.Dataset(data, coords={"time": time, **(coords or {})})
