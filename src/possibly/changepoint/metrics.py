"""Change-point and streaming-anomaly evaluation metrics.

Change points, following "An evaluation of change point detection algorithms" (G. J. J. van
den Burg and C. K. I. Williams, 2020, §4.1), as implemented in their benchmark:

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

Streaming anomalies, scored the way a monitoring team sets one alarm threshold for a whole
fleet of streams: :func:`streaming_score` rewards an alarm early in a labelled window and
penalises alarms outside the windows (a window-based score in the spirit of the Numenta
Anomaly Benchmark, defined in full in its docstring), with window precision and recall;
:func:`best_threshold` finds the one threshold that maximises it over all streams together;
:func:`alarm_indices` says where a per-record score raises an alarm.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import NamedTuple

import numpy as np

from possibly.validation import check_int

__all__ = [
    "StreamingScore",
    "alarm_indices",
    "best_threshold",
    "covering",
    "f1_score",
    "precision_recall",
    "streaming_score",
]


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


# ----------------------------------------------------------------------------------------------
# window-based streaming score

#: the early-detection rewards r(x) of an alarm at relative position x in [0, 1) of a window
REWARDS = ("sigmoid", "linear")


class StreamingScore(NamedTuple):
    """The window-based streaming score of alarms at one threshold (:func:`streaming_score`).

    Attributes
    ----------
    score : float or None
        ``(S - S_null) / (S_perfect - S_null)``: 1 when every window is detected on its first
        record with no false alarm, 0 for no alarm at all, negative when the false alarms cost
        more than the detections earn; None when no stream has a window (undefined).
    raw : float
        ``S``: the rewards of the detections minus the penalties of the false alarms and of
        the missed windows.
    precision, recall : float
        Window precision ``detected / (detected + false_alarms)`` (1 with no alarm at all) and
        window recall ``detected / windows`` (1 with no window).
    detected, missed, false_alarms : int
        Windows holding at least one alarm, windows holding none, alarms outside every window.
    threshold : float
        The threshold used.
    """

    score: float | None
    raw: float
    precision: float
    recall: float
    detected: int
    missed: int
    false_alarms: int
    threshold: float


def _reward(kind: str, x: np.ndarray) -> np.ndarray:
    """The early-detection reward of an alarm at relative position ``x`` in a window."""
    if kind == "linear":
        return 1.0 - x
    return 2.0 / (1.0 + np.exp(5.0 * (x - 1.0))) - 1.0


def _check_scores(name: str, values) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a 1-d sequence of numbers (NaN: no score), "
                         f"got {values!r}") from None
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-d sequence of numbers (NaN: no score), got an "
                         f"array of shape {arr.shape}")
    if np.isinf(arr).any():
        at = int(np.flatnonzero(np.isinf(arr))[0])
        raise ValueError(f"{name} must be finite numbers or NaN (no score), got {arr[at]} at "
                         f"index {at}")
    return arr


def _check_windows(name: str, values, n_obs: int) -> np.ndarray:
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be pairs of integer indices [start, end) "
                         f"(shape (k, 2)), got {values!r}") from None
    if arr.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] != 2 or not (
            np.issubdtype(arr.dtype, np.integer)
            or (np.issubdtype(arr.dtype, np.floating) and np.all(np.isfinite(arr))
                and np.all(arr == np.round(arr)))):
        raise ValueError(f"{name} must be pairs of integer indices [start, end) "
                         f"(shape (k, 2)), got {values!r}")
    w = arr.astype(np.int64)
    bad = (w[:, 0] < 0) | (w[:, 1] > n_obs) | (w[:, 0] >= w[:, 1])
    if bad.any():
        a, b = w[np.flatnonzero(bad)[0]]
        raise ValueError(f"{name} must satisfy 0 <= start < end <= n = {n_obs} (the stream's "
                         f"length), got [{a}, {b})")
    if np.any(w[1:, 0] < w[:-1, 1]):
        raise ValueError(f"{name} must be sorted and not overlap (each start >= the previous "
                         f"end), got {w.tolist()}")
    return w


def _is_one_stream(scores) -> bool:
    if isinstance(scores, np.ndarray):
        return scores.ndim <= 1
    if isinstance(scores, (list, tuple)):
        return not scores or np.ndim(scores[0]) == 0
    return False


def _streams(scores, windows) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(scores, windows)`` per stream, checked: one stream, or a list of streams."""
    if _is_one_stream(scores):
        arr = _check_scores("scores", scores)
        return [(arr, _check_windows("windows", windows, arr.size))]
    if isinstance(scores, np.ndarray):
        scores = list(scores)  # a 2-d array: one stream per row
    if not isinstance(scores, (list, tuple)):
        raise ValueError(f"scores must be one stream's scores (a 1-d sequence) or a list of "
                         f"them, got {type(scores).__name__}")
    if not isinstance(windows, (list, tuple)) or len(windows) != len(scores):
        raise ValueError(f"windows must be a list of one window array per stream "
                         f"({len(scores)} streams), got {windows!r}")
    out = []
    for i, (s, w) in enumerate(zip(scores, windows, strict=True)):
        arr = _check_scores(f"scores[{i}]", s)
        out.append((arr, _check_windows(f"windows[{i}]", w, arr.size)))
    return out


def _check_threshold(threshold) -> float:
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.integer,
                                                                np.floating)) \
            or math.isnan(threshold):
        raise ValueError(f"threshold must be a number (inf: no alarm), got {threshold!r}")
    return float(threshold)


def _check_weights(reward: str, tp_weight, fp_weight, fn_weight) -> None:
    if reward not in REWARDS:
        raise ValueError(f"reward must be one of {', '.join(REWARDS)}, got {reward!r}")
    for name, w in (("tp_weight", tp_weight), ("fp_weight", fp_weight),
                    ("fn_weight", fn_weight)):
        if isinstance(w, bool) or not isinstance(w, (int, float, np.integer, np.floating)) \
                or not np.isfinite(w) or w < 0:
            raise ValueError(f"{name} must be a finite number >= 0, got {w!r}")
    if tp_weight == 0 and fn_weight == 0:
        raise ValueError("tp_weight and fn_weight must not both be 0 (the score would be "
                         "undefined)")


def _previous(s: np.ndarray) -> np.ndarray:
    """The score of the record before each one, ``-inf`` before the first and after a NaN
    (no score is below every threshold)."""
    prev = np.empty_like(s)
    prev[:1] = -np.inf
    prev[1:] = s[:-1]
    return np.where(np.isnan(prev), -np.inf, prev)


def alarm_indices(scores, threshold: float) -> np.ndarray:
    """Where a per-record score raises an alarm: its upward crossings of ``threshold``.

    Record ``t`` is an alarm when ``scores[t] >= threshold`` and the record before it was not
    (``t = 0``, or ``scores[t - 1] < threshold``, or ``scores[t - 1]`` is NaN). A NaN score is no
    score: it raises no alarm and counts as below every threshold.

    Parameters
    ----------
    scores : sequence of float
        One stream's per-record scores (finite, or NaN for no score).
    threshold : float
        Alarm threshold; ``inf`` raises no alarm.

    Returns
    -------
    ndarray of int64

    Examples
    --------
    >>> alarm_indices([0.1, 0.9, 0.95, 0.2, float("nan"), 0.8, 0.9], 0.8).tolist()
    [1, 5]
    """
    s = _check_scores("scores", scores)
    threshold = _check_threshold(threshold)
    with np.errstate(invalid="ignore"):
        above = s >= threshold
    prev_above = np.concatenate([[False], above[:-1]])
    return np.flatnonzero(above & ~prev_above).astype(np.int64)


def _tally(streams: list[tuple[np.ndarray, np.ndarray]], threshold: float, reward: str,
           tp_weight: float) -> tuple[float, int, int, int]:
    """Detection reward, detected windows, missed windows and false alarms at ``threshold``."""
    gain, detected, missed, false_alarms = 0.0, 0, 0, 0
    for s, w in streams:
        alarms = alarm_indices(s, threshold)
        inside = np.zeros(alarms.size, dtype=bool)
        for a, b in w:
            hits = alarms[(alarms >= a) & (alarms < b)]
            inside |= (alarms >= a) & (alarms < b)
            if hits.size:
                detected += 1
                gain += tp_weight * float(_reward(reward, np.array((hits[0] - a) / (b - a))))
            else:
                missed += 1
        false_alarms += int(np.count_nonzero(~inside))
    return gain, detected, missed, false_alarms


def streaming_score(scores, windows, threshold: float, *, reward: str = "sigmoid",
                    tp_weight: float = 1.0, fp_weight: float = 0.11,
                    fn_weight: float = 1.0) -> StreamingScore:
    """Window-based streaming-anomaly score of per-record scores at one threshold.

    Definition, for streams ``i`` with per-record scores ``s_i`` and labelled windows
    ``[a, b)`` (half-open index ranges, sorted, not overlapping):

    * an alarm is an upward crossing of the threshold (:func:`alarm_indices`);
    * in each window, the first alarm, at ``t``, earns ``tp_weight · r(x)`` with
      ``x = (t − a) / (b − a)`` in [0, 1): ``r(x) = 2 / (1 + exp(5 (x − 1))) − 1``
      (``reward="sigmoid"``, the scaled sigmoid of the Numenta Anomaly Benchmark: 0.987 at
      the window's first record, falling to 0 at its end) or ``r(x) = 1 − x``
      (``reward="linear"``); further alarms in the same window neither earn nor cost;
    * a window without alarm costs ``fn_weight``; an alarm outside every window costs
      ``fp_weight`` (an alarm at a window's end ``b`` is outside it);
    * ``S`` is the sum over all streams, ``S_null = −fn_weight · W`` (no alarm) and
      ``S_perfect = tp_weight · r(0) · W`` for ``W`` windows in all, and the score is
      ``(S − S_null) / (S_perfect − S_null)``.

    The default weights are the Numenta benchmark's standard profile (1, 0.11, 1).

    Parameters
    ----------
    scores : sequence of float, or list of such sequences
        Per-record scores of one stream, or a list with one array per stream (lengths may
        differ; a 2-d array is one stream per row). Finite numbers, or NaN for no score (a
        warm-up, a missing record).
    windows : array-like of shape (k, 2), or list of such
        The anomaly windows ``[start, end)`` of the stream, or a list of one per stream
        (``[]``: none).
    threshold : float
        The one alarm threshold for all streams; ``inf``: no alarm.
    reward : {"sigmoid", "linear"}
        The early-detection reward ``r``.
    tp_weight, fp_weight, fn_weight : float
        Weights ``>= 0`` of a detection, a false alarm and a missed window.

    Returns
    -------
    StreamingScore

    Examples
    --------
    One window [4, 8); alarms at 2 (false) and 5 (x = 1/4 in the window):

    >>> s = [0, 0, 1, 0, 0, 1, 1, 0, 0, 0]
    >>> r = streaming_score(s, [(4, 8)], 0.5, reward="linear")
    >>> r.raw, round(r.score, 4), r.precision, r.recall  # S = 3/4 - 0.11
    (0.64, 0.82, 0.5, 1.0)
    """
    _check_weights(reward, tp_weight, fp_weight, fn_weight)
    streams = _streams(scores, windows)
    threshold = _check_threshold(threshold)
    gain, detected, missed, false_alarms = _tally(streams, threshold, reward, tp_weight)
    return _summary(gain, detected, missed, false_alarms, threshold, reward, tp_weight,
                    fp_weight, fn_weight)


def _summary(gain: float, detected: int, missed: int, false_alarms: int, threshold: float,
             reward: str, tp_weight: float, fp_weight: float, fn_weight: float
             ) -> StreamingScore:
    n_windows = detected + missed
    raw = gain - fp_weight * false_alarms - fn_weight * missed
    null = -fn_weight * n_windows
    perfect = tp_weight * float(_reward(reward, np.array(0.0))) * n_windows
    score = (raw - null) / (perfect - null) if n_windows else None
    claimed = detected + false_alarms
    return StreamingScore(score, raw, detected / claimed if claimed else 1.0,
                          detected / n_windows if n_windows else 1.0, detected, missed,
                          false_alarms, threshold)


def _candidates(streams: list[tuple[np.ndarray, np.ndarray]], max_candidates: int
                ) -> np.ndarray:
    """The distinct finite scores (every threshold between two of them raises the same alarms
    as the upper one), thinned to ``max_candidates`` geometrically spaced ranks from the top
    when there are more; ``inf`` (no alarm) is always a candidate."""
    pooled = np.concatenate([s[np.isfinite(s)] for s, _ in streams] or [np.zeros(0)])
    values = np.unique(pooled)
    if values.size > max_candidates:
        ranks = np.unique(np.round(np.geomspace(1, values.size, max_candidates)).astype(int))
        values = values[values.size - ranks]
    return np.concatenate([np.sort(values), [np.inf]])


def best_threshold(scores, windows, *, reward: str = "sigmoid", tp_weight: float = 1.0,
                   fp_weight: float = 0.11, fn_weight: float = 1.0,
                   max_candidates: int = 2000) -> StreamingScore:
    """The one threshold, for all streams together, that maximises :func:`streaming_score`.

    The alarms change only when the threshold passes a score value, so the distinct finite
    scores (plus ``inf``, no alarm) are every threshold worth trying: with at most
    ``max_candidates`` of them the search is exact; with more, it tries ``max_candidates``
    of them at geometrically spaced ranks from the top (dense where alarms are few). Among
    equal best scores the highest threshold (the fewest alarms) wins.

    Parameters
    ----------
    scores, windows, reward, tp_weight, fp_weight, fn_weight
        As for :func:`streaming_score`.
    max_candidates : int
        Most thresholds tried, ``>= 1``.

    Returns
    -------
    StreamingScore
        At the best threshold (a score value, or ``inf`` when no alarm is best).

    Examples
    --------
    Two streams: the anomaly of the first scores 0.9, the second stream peaks at 0.7
    without anomaly; any threshold in (0.7, 0.9] separates them:

    >>> s = [[0.1, 0.2, 0.9, 0.3], [0.2, 0.7, 0.1, 0.1]]
    >>> r = best_threshold(s, [[(2, 4)], []])
    >>> r.threshold, r.detected, r.false_alarms
    (0.9, 1, 0)
    """
    _check_weights(reward, tp_weight, fp_weight, fn_weight)
    max_candidates = check_int("max_candidates", max_candidates, 1)
    streams = _streams(scores, windows)
    cand = _candidates(streams, max_candidates)
    gain = np.zeros(cand.size)
    detected = np.zeros(cand.size, dtype=np.int64)
    missed = np.zeros(cand.size, dtype=np.int64)
    false_alarms = np.zeros(cand.size, dtype=np.int64)
    for s, w in streams:
        prev = _previous(s)
        # record t is an alarm for the thresholds in (prev_t, s_t]: candidate indices [lo, hi)
        ok = np.isfinite(s) & (prev < s)
        lo = np.searchsorted(cand, prev, side="right")
        hi = np.searchsorted(cand, s, side="right")
        outside = ok.copy()
        for a, b in w:
            outside[a:b] = False
            first = np.full(cand.size, -1, dtype=np.int64)
            for t in np.flatnonzero(ok[a:b]) + a:
                span = first[lo[t]:hi[t]]
                span[span < 0] = t
            hit = first >= 0
            gain[hit] += tp_weight * _reward(reward, (first[hit] - a) / (b - a))
            detected += hit
            missed += ~hit
        # false alarms at candidate k: records outside the windows with lo <= k < hi
        counts = np.zeros(cand.size + 1, dtype=np.int64)
        np.add.at(counts, lo[outside], 1)
        np.add.at(counts, hi[outside], -1)
        false_alarms += np.cumsum(counts)[:-1]
    raw = gain - fp_weight * false_alarms - fn_weight * missed
    best = int(np.flatnonzero(raw == raw.max())[-1])
    return _summary(float(gain[best]), int(detected[best]), int(missed[best]),
                    int(false_alarms[best]), float(cand[best]), reward, tp_weight, fp_weight,
                    fn_weight)
