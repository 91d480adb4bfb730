"""Map, select and stack over the array leaves of a state (a family member, a frozen
dataclass, a tuple or an array), so that a robust start can run many hypotheses of any state
side by side on an extra batch axis."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from possibly.families.base import Possibility

__all__ = ["tree_expand", "tree_map", "tree_select", "tree_take"]


def tree_map(tree: Any, fn: Callable[[np.ndarray], np.ndarray]) -> Any:
    """Apply ``fn`` to every array leaf of a state: the fields of a
    :class:`~possibly.Possibility`, the fields of another frozen dataclass (e.g. the learned
    noise-scale filter's state), the items of a (named) tuple (e.g. a KalmanState), or an
    array. ``None`` and Python scalars (e.g. a step counter) are kept as they are.

    Examples
    --------
    >>> import numpy as np
    >>> tree_map((np.arange(3), None, 7), lambda a: a[::-1])
    (array([2, 1, 0]), None, 7)
    """
    if isinstance(tree, Possibility):  # before the dataclasses: no re-validation
        return type(tree).from_fields({name: fn(np.asarray(arr))
                                       for name, arr in tree.fields().items()})
    if dataclasses.is_dataclass(tree) and not isinstance(tree, type):
        return dataclasses.replace(tree, **{f.name: tree_map(getattr(tree, f.name), fn)
                                            for f in dataclasses.fields(tree) if f.init})
    if isinstance(tree, tuple):
        items = [tree_map(leaf, fn) for leaf in tree]
        return type(tree)(*items) if hasattr(tree, "_fields") else tuple(items)
    if tree is None or isinstance(tree, (int, float, bool, np.integer)):
        return tree
    return fn(np.asarray(tree))


def tree_take(tree: Any, index: np.ndarray) -> Any:
    """Select one hypothesis per batch entry.

    ``index`` has the batch shape ``B``; every array leaf of ``tree`` has shape
    ``B + (K,) + event`` (batch dimensions lead, the hypothesis axis right after them) and
    the result ``B + event``.
    """
    index = np.asarray(index)
    axis = index.ndim

    def take(arr: np.ndarray) -> np.ndarray:
        idx = index.reshape(index.shape + (1,) * (arr.ndim - axis))
        idx = np.broadcast_to(idx, arr.shape[:axis] + (1,) + arr.shape[axis + 1:])
        return np.take_along_axis(arr, idx, axis=axis).squeeze(axis)

    return tree_map(tree, take)


def tree_select(mask: np.ndarray, a: Any, b: Any) -> Any:
    """``a`` where ``mask`` holds, else ``b``: ``mask`` has the leading (batch) shape of
    every array leaf of the two states, which have the same structure. Non-array leaves
    (``None``, counters) are taken from ``a``."""
    mask = np.asarray(mask)
    if isinstance(a, Possibility):
        fb = b.fields()
        return type(a).from_fields({name: _where(mask, arr, fb[name])
                                    for name, arr in a.fields().items()})
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return dataclasses.replace(a, **{f.name: tree_select(mask, getattr(a, f.name),
                                                             getattr(b, f.name))
                                         for f in dataclasses.fields(a) if f.init})
    if isinstance(a, tuple):
        items = [tree_select(mask, x, y) for x, y in zip(a, b, strict=True)]
        return type(a)(*items) if hasattr(a, "_fields") else tuple(items)
    if a is None or isinstance(a, (int, float, bool, np.integer)):
        return a
    return _where(mask, a, b)


def _where(mask: np.ndarray, a: Any, b: Any) -> np.ndarray:
    arr = np.asarray(a)
    return np.where(mask.reshape(mask.shape + (1,) * (arr.ndim - mask.ndim)), arr, b)


def tree_expand(tree: Any, size: int, batch_ndim: int) -> Any:
    """Add a hypothesis axis of length ``size`` after the ``batch_ndim`` batch axes (the
    same state repeated)."""
    def rep(arr: np.ndarray) -> np.ndarray:
        return np.repeat(np.expand_dims(arr, batch_ndim), size, axis=batch_ndim)

    return tree_map(tree, rep)
