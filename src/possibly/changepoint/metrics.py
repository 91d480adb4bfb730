"""Change-point evaluation metrics of van den Burg & Williams (2020).

Both metrics follow "An evaluation of change point detection algorithms" (G. J. J. van den
Burg and C. K. I. Williams, 2020, §4.1), as implemented in their benchmark:

* :func:`f1_score`: the first observation (index 0) is a change point in every set; a
  predicted change point is a true positive if it lies within ``margin`` steps of a true one,
  matched one-to-one (each true point is matched to the closest still unmatched prediction).
  Precision is over the predictions against the union of the annotations, recall is averaged
  over the annotators, and ``F1 = 2 P R / (P + R)``.
* :func:`covering`: the segmentation covering of the true partition by the predicted one,
  ``C(G', G) = (1/T) Σ_{A ∈ G} |A| max_{A' ∈ G'} |A ∩ A'| / |A ∪ A'|`` (Arbeláez et al. 2011),
  averaged over the annotators.

Change points are 0-based indices of the first observation of a new segment (the convention of
:attr:`possibly.changepoint.ChangepointResult.changepoints` and :mod:`possibly.datasets`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from possibly.validation import check_int

__all__ = ["covering", "f1_score", "precision_recall"]


def _as_locations(name: str, values, n_obs: int | None = None) -> list[int]:
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a sequence of integer indices, got {values!r}") from None
    if arr.ndim != 1 or not (arr.size == 0 or np.issubdtype(arr.dtype, np.integer)
                             or (np.issubdtype(arr.dtype, np.floating)
                                 and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)))):
        raise ValueError(f"{name} must be a 1-d sequence of integer indices, got {values!r}")
    locs = sorted({int(v) for v in arr.tolist()})
    if locs and locs[0] < 0:
        raise ValueError(f"{name} must be indices >= 0, got {locs[0]}")
    if n_obs is not None and locs and locs[-1] >= n_obs:
        raise ValueError(f"{name} must be indices < n_obs = {n_obs}, got {locs[-1]}")
    return locs


def _annotators(annotations) -> list[list[int]]:
    """One list of locations per annotator: a flat sequence is a single annotator."""
    if isinstance(annotations, np.ndarray) and annotations.ndim == 1:
        return [annotations.tolist()]
    if isinstance(annotations, Sequence) and annotations and all(
            isinstance(a, (Sequence, np.ndarray)) and not isinstance(a, str)
            for a in annotations):
        return [list(a) for a in annotations]
    if isinstance(annotations, Iterable) and not isinstance(annotations, str):
        return [list(annotations)]
    raise ValueError(f"annotations must be a sequence of indices or a list of such sequences "
                     f"(one per annotator), got {annotations!r}")


def _true_positives(truth: list[int], predicted: list[int], margin: int) -> int:
    """One-to-one matching: each true point, in increasing order, takes the closest unmatched
    prediction within the margin (the smaller index on a tie)."""
    free = set(predicted)
    hits = 0
    for tau in truth:
        close = sorted((abs(tau - x), x) for x in free if abs(tau - x) <= margin)
        if close:
            free.remove(close[0][1])
            hits += 1
    return hits


def precision_recall(annotations, predictions, *, margin: int = 5,
                     n_obs: int | None = None) -> tuple[float, float]:
    """Precision and recall of predicted change points, with index 0 counted in every set.

    Parameters
    ----------
    annotations : sequence of int, or list of such sequences
        True change points (one sequence per annotator for several annotators).
    predictions : sequence of int
        Predicted change points.
    margin : int
        A prediction within ``margin`` steps of a true change point may match it; default 5.
    n_obs : int, optional
        Series length; if given, every location must be ``< n_obs``.

    Returns
    -------
    precision, recall : float

    Examples
    --------
    >>> precision_recall([50, 120], [48, 90, 125])  # 0-0, 50-48, 120-125 match; 90 does not
    (0.75, 1.0)
    """
    margin = check_int("margin", margin, 0)
    if n_obs is not None:
        n_obs = check_int("n_obs", n_obs, 1)
    truths = [sorted(set(_as_locations("annotations", a, n_obs)) | {0})
              for a in _annotators(annotations)]
    pred = sorted(set(_as_locations("predictions", predictions, n_obs)) | {0})
    union = sorted(set().union(*truths))
    precision = _true_positives(union, pred, margin) / len(pred)
    recall = float(np.mean([_true_positives(t, pred, margin) / len(t) for t in truths]))
    return precision, recall


def f1_score(annotations, predictions, *, margin: int = 5, n_obs: int | None = None) -> float:
    """F1 score of predicted change points with a margin (van den Burg & Williams, 2020).

    Parameters
    ----------
    annotations : sequence of int, or list of such sequences
        True change points (one sequence per annotator for several annotators).
    predictions : sequence of int
        Predicted change points.
    margin : int
        Matching margin in steps, ``>= 0``; default 5 as in the paper.
    n_obs : int, optional
        Series length; if given, every location must be ``< n_obs``.

    Returns
    -------
    float
        ``2 P R / (P + R)`` in [0, 1] (index 0 always matches, so ``P, R > 0``).

    Examples
    --------
    >>> f1_score([50, 120], [48, 90, 125])  # P = 3/4, R = 3/3
    0.8571428571428571
    >>> f1_score([], [])  # no change, none predicted
    1.0
    """
    p, r = precision_recall(annotations, predictions, margin=margin, n_obs=n_obs)
    return 2.0 * p * r / (p + r)


def _partition(locations: list[int], n_obs: int) -> list[tuple[int, int]]:
    bounds = [0] + [c for c in locations if 0 < c < n_obs] + [n_obs]
    return list(zip(bounds[:-1], bounds[1:], strict=True))


def _cover_single(predicted: list[tuple[int, int]], truth: list[tuple[int, int]],
                  n_obs: int) -> float:
    total = 0.0
    for a, b in truth:
        best = 0.0
        for c, d in predicted:
            inter = min(b, d) - max(a, c)
            if inter > 0:
                best = max(best, inter / (max(b, d) - min(a, c)))
        total += (b - a) * best
    return total / n_obs


def covering(annotations, predictions, n_obs: int) -> float:
    """Segmentation covering of the true partition by the predicted one.

    Parameters
    ----------
    annotations : sequence of int, or list of such sequences
        True change points (one sequence per annotator for several annotators).
    predictions : sequence of int
        Predicted change points.
    n_obs : int
        Series length; every location must be ``< n_obs``.

    Returns
    -------
    float
        In [0, 1]; 1 when the predicted partition equals the true one.

    Examples
    --------
    >>> covering([50], [40], n_obs=100)  # (50 · 40/50 + 50 · 50/60) / 100
    0.81666666666666...
    """
    n_obs = check_int("n_obs", n_obs, 1)
    pred = _partition(_as_locations("predictions", predictions, n_obs), n_obs)
    scores = [_cover_single(pred, _partition(_as_locations("annotations", a, n_obs), n_obs),
                            n_obs) for a in _annotators(annotations)]
    return float(np.mean(scores))
