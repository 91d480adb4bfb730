"""Robust start of the robust Kalman filters: a maxitive mixture of start hypotheses.

From the uninformative prior the first observations cannot be judged (their consistency is 1
until every direction of the state is informed), so an outlier among them captures the track.
Hypothesis ``h`` says which of the first ``k`` observations are outliers (at most
``max_outliers``; :func:`start_hypotheses`) and runs the robust filter with those missing;
hypotheses are scored by their consistencies, each floored at ``log ε = -½ χ²_m(0.999)``, the
filter reports its leading hypothesis (:func:`leader`), and after ``k + window`` steps the
mixture collapses to it. The location/scale estimators' start
(:mod:`possibly.estimators.exchangeable_start`) is the same mixture for exchangeable data,
whose hypotheses are "which observation comes first"; a time series cannot be reordered, so
here a hypothesis drops early observations instead. Why, how it is scored, its cost and the
proper-prior case: docs/math.md §9. ``robust_start=False`` is the plain recursion, bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations
from typing import Any

import numpy as np

from possibly._tree import tree_expand, tree_map, tree_take
from possibly.inference import inlier_log_consistency

__all__ = ["KalmanStartState", "start_hypotheses", "ties"]

#: defaults: the first K observations may hold MAX_OUTLIERS outliers; collapse after K + WINDOW
K, MAX_OUTLIERS, WINDOW = 4, 2, 10


@lru_cache(maxsize=16)  # once per m: it is read at every step of the start
def _outlier_floor(m: int) -> float:
    """``log ε = -½ χ²_m(0.999)``: the consistency that 99.9% of inliers exceed."""
    return inlier_log_consistency(m, 0.999)


@lru_cache(maxsize=16)
def _hypotheses(k: int, max_outliers: int) -> np.ndarray:
    out = start_hypotheses(k, max_outliers)
    out.setflags(write=False)
    return out


def ties(score: np.ndarray) -> np.ndarray:
    """Which hypotheses (last axis) share the largest score up to rounding (relative 1e-9):
    a tie has no evidence to break it; every hypothesis ties where all scores are -inf.

    Examples
    --------
    >>> import numpy as np
    >>> ties(np.array([-5.4, -5.4 - 1e-15, -20.0])).tolist()
    [True, True, False]
    """
    top = score.max(-1, keepdims=True)
    with np.errstate(invalid="ignore"):  # -inf everywhere: every hypothesis ties
        return (score >= top - 1e-9 * (1.0 + np.abs(top))) | np.isneginf(top)


def leader(score: np.ndarray, k: int = K, max_outliers: int = MAX_OUTLIERS) -> np.ndarray:
    """The leading hypothesis (``score`` ``B + (H,)``): the largest score up to rounding, ties
    going to the hypothesis that keeps the earliest observations.

    Hypotheses tie while they leave a direction uninformed, so that every ``c = 1`` (e.g.
    each drops one of the first three observations of a constant-velocity track). A tie has
    no evidence to break it; keeping the earliest observations keeps what was reported
    before (the new observation is the one in doubt). ``c = 1`` comes out of the information
    form as ``1 - 1e-16`` or so: ties broken by rounding would make the reported step depend
    on the data's units.

    Examples
    --------
    >>> import numpy as np
    >>> from possibly.filters.robust_start import leader, start_hypotheses
    >>> score = np.array([-20.0, -5.4, -5.4 - 1e-15, -20.0, -5.4])  # drop y0, y1 or y3 tie
    >>> start_hypotheses(4, 1)[leader(score, 4, 1)].astype(int)       # keep y0: drop y3
    array([0, 0, 0, 1])
    """
    tied = ties(score)
    rank = _tie_rank(k, max_outliers)
    return np.argmin(np.where(tied, rank, rank.size), axis=-1)


@lru_cache(maxsize=16)
def _tie_rank(k: int, max_outliers: int) -> np.ndarray:
    """Each hypothesis' rank among ties: by its dropped observations read as a binary number,
    the first observation the most significant digit (none dropped first)."""
    drop = _hypotheses(k, max_outliers)
    code = drop @ (2 ** np.arange(k - 1, -1, -1))
    rank = np.empty(len(code), dtype=np.int64)
    rank[np.argsort(code, kind="stable")] = np.arange(len(code))
    rank.setflags(write=False)
    return rank


def start_hypotheses(k: int = K, max_outliers: int = MAX_OUTLIERS) -> np.ndarray:
    """Boolean (H, k): row ``h`` marks the observations hypothesis ``h`` declares outliers
    (the plain recursion, no outlier, first; then one outlier, two, ...).

    Examples
    --------
    >>> start_hypotheses(3, 1).astype(int)
    array([[0, 0, 0],
           [1, 0, 0],
           [0, 1, 0],
           [0, 0, 1]])
    """
    rows = []
    for r in range(max_outliers + 1):
        for drop in combinations(range(k), r):
            row = np.zeros(k, dtype=bool)
            row[list(drop)] = True
            rows.append(row)
    return np.array(rows)


@dataclass(frozen=True)
class KalmanStartState:
    """The mixture of start hypotheses of a batch (batch shape ``B``), before the collapse.

    Attributes
    ----------
    hypotheses : KalmanState (or NoiseScaleState)
        Batch shape ``B + (H,)``.
    score : ndarray, shape ``B + (H,)``
        Log possibility of each hypothesis (not normalised; the leader has the largest).
    t : int
        Number of observations processed.
    """

    hypotheses: Any
    score: np.ndarray
    t: int = 0

    @property
    def leader(self) -> np.ndarray:
        return leader(self.score)

    @property
    def current(self) -> Any:
        """The leading hypothesis' state (batch shape ``B``): the mixture's E*."""
        return tree_take(self.hypotheses, self.leader)

    @property
    def mean(self) -> np.ndarray:
        """E* of the state (the leader's mean)."""
        return self.current.mean

    @property
    def covariance(self) -> np.ndarray | None:
        """The leader's covariance (None while it is in information form)."""
        return self.current.covariance


def start_init(state: Any, batch_shape: tuple[int, ...], k: int = K,
               max_outliers: int = MAX_OUTLIERS) -> KalmanStartState:
    """The mixture around ``state`` (a filter state of batch shape ``batch_shape``)."""
    h = _hypotheses(k, max_outliers).shape[0]
    axis = len(batch_shape)
    hyp = tree_expand(state, h, axis)
    return KalmanStartState(hyp, np.zeros(tuple(batch_shape) + (h,)), 0)


#: the plain robust step of a filter: ``step(state, y) -> (predicted, info, filtered)``
PlainStep = Callable[[Any, np.ndarray], tuple[Any, Any, Any]]


def start_step(state: KalmanStartState, y: np.ndarray, step: PlainStep, m: int, *,
               k: int = K, max_outliers: int = MAX_OUTLIERS,
               window: float = WINDOW) -> tuple[Any, Any, Any, Any]:
    """One observation for the mixture; ``step(state, y) -> (predicted, info, filtered)`` is
    the plain robust step (predict then update). Returns ``(new_state, info, predicted,
    filtered)``: ``new_state`` is the plain state (e.g. a KalmanState) once the mixture has
    collapsed (after ``k + window`` steps; ``window=np.inf``: never), a KalmanStartState
    before; ``info``/``predicted``/``filtered`` are the leader's."""
    t = state.t
    yh = start_observations(y, t, k, max_outliers)
    reps, inverse = _distinct(t, k, max_outliers)
    if len(reps) < len(inverse):
        # hypotheses that drop the same observations so far have the same state: step one
        # of each (fewer rows for the costly information-form steps) and copy it to the rest
        axis = np.ndim(state.score) - 1
        hyp = tree_map(state.hypotheses, lambda a: np.take(a, reps, axis=axis))
        parts = step(hyp, np.take(yh, reps, axis=axis))
        predicted, info, new = (tree_map(part, lambda a: np.take(a, inverse, axis=axis))
                                for part in parts)
    else:
        predicted, info, new = step(state.hypotheses, yh)
    observed = ~np.isnan(y).all(-1)
    score, lead, lead_log_c = mixture_scores(state.score, np.asarray(info.log_consistency),
                                             observed, t, m, k, max_outliers)
    lead_info = type(info)(log_consistency=lead_log_c,
                           discount=leader_discount(info.discount, lead, observed),
                           gamma=leader_discount(info.gamma, lead, observed))
    filtered = tree_take(new, lead)
    out = filtered if t + 1 >= k + window else KalmanStartState(new, score, t + 1)
    return out, lead_info, tree_take(predicted, lead), filtered


@lru_cache(maxsize=64)
def _distinct(t: int, k: int, max_outliers: int) -> tuple[np.ndarray, np.ndarray]:
    """``(reps, inverse)``: one hypothesis (the first) of each group that drops the same
    observations among the first ``t + 1``, and each hypothesis' group."""
    drop = _hypotheses(k, max_outliers)
    _, reps, inverse = np.unique(drop[:, :t + 1], axis=0, return_index=True,
                                 return_inverse=True)
    order = np.argsort(reps)  # groups in the order of their first hypothesis
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    reps, inverse = reps[order], rank[inverse.reshape(-1)]
    reps.setflags(write=False)
    inverse.setflags(write=False)
    return reps, inverse


@lru_cache(maxsize=16)
def mixture_tables(m: int, k: int = K, max_outliers: int = MAX_OUTLIERS
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """The mixture as the compiled start reads it (``kalman_numba.run_start``): ``(drop,
    rank, rep, floor)``, the hypotheses' dropped observations (H, k), their rank among ties
    (:func:`leader`), for each step ``t < k`` the first hypothesis that drops the same
    observations up to ``t`` (k, H), and ``log ε`` for ``m`` observed components. ``k = 0``:
    one hypothesis that drops nothing, the plain recursion.

    Examples
    --------
    >>> drop, rank, rep, floor = mixture_tables(1, 3, 1)
    >>> rep.tolist()                      # step 0: hypotheses 2, 3 keep y0, as hypothesis 0
    [[0, 1, 0, 0], [0, 1, 2, 0], [0, 1, 2, 3]]
    >>> round(floor, 2)
    -5.41
    """
    drop = np.array(_hypotheses(k, max_outliers))
    rank = np.array(_tie_rank(k, max_outliers))
    rep = np.empty((k, drop.shape[0]), dtype=np.int64)
    for t in range(k):
        reps, inverse = _distinct(t, k, max_outliers)
        rep[t] = reps[inverse]
    return drop, rank, rep, _outlier_floor(m)


def start_observations(y: np.ndarray, t: int, k: int = K,
                       max_outliers: int = MAX_OUTLIERS) -> np.ndarray:
    """``y`` (``B + (m,)``, step ``t``) as each hypothesis sees it, ``B + (H, m)``: NaN
    (missing) where the hypothesis drops it."""
    drop = _hypotheses(k, max_outliers)
    yh = np.repeat(np.expand_dims(y, -2), drop.shape[0], axis=-2)
    if t < k:
        yh = np.where(drop[:, t, None], np.nan, yh)
    return yh


def mixture_scores(score: np.ndarray, log_c: np.ndarray, observed: np.ndarray, t: int, m: int,
                   k: int = K, max_outliers: int = MAX_OUTLIERS
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(score, leader, log c)`` after step ``t``: the hypotheses' new log possibilities
    (from those before, ``score``, and their consistencies ``log_c`` with ``y_t``, NaN where
    missing; both ``B + (H,)``), the leading hypothesis and the log consistency the step
    reports (``B``; see the module docstring). ``observed`` (``B``): ``y_t`` not all NaN."""
    new = score + _gain(log_c, observed, t, m, k, max_outliers)
    lead = leader(new, k, max_outliers)
    # the leader's consistency; where the leader drops y: the consistency of y with the
    # mixture, max_h w_h c_h (weights before this step)
    with np.errstate(invalid="ignore"):
        mixed = np.where(np.isnan(log_c), -np.inf,
                         score - score.max(-1, keepdims=True) + log_c).max(-1)
    lead_c = _pick(log_c, lead)
    return new, lead, np.where(observed, np.where(np.isnan(lead_c), mixed, lead_c), np.nan)


def settled_leader(log_c: np.ndarray, observed: np.ndarray, m: int, k: int = K,
                   max_outliers: int = MAX_OUTLIERS) -> np.ndarray:
    """The hypothesis leading after every step of ``log_c`` (``B + (H, T)``, the hypotheses'
    consistencies, NaN where missing; ``observed`` ``B + (T,)``): :func:`mixture_scores`
    step after step, keeping only the scores (the same sums, so the same leader) and taking
    the leader once, at the end.

    Examples
    --------
    >>> import numpy as np
    >>> from possibly.filters.robust_start import settled_leader, start_hypotheses
    >>> log_c = np.zeros((11, 6))
    >>> log_c[[0, 1, 3, 4, 6, 7, 10], 1] = -40.0   # y1 an outlier to those keeping it
    >>> start_hypotheses(4, 2)[settled_leader(log_c, np.ones(6, bool), 1)].astype(int)
    array([0, 1, 0, 0])
    """
    score = np.zeros(log_c.shape[:-1])
    for t in range(log_c.shape[-1]):
        score = score + _gain(log_c[..., t], observed[..., t], t, m, k, max_outliers)
    return leader(score, k, max_outliers)


def _gain(log_c: np.ndarray, observed: np.ndarray, t: int, m: int, k: int,
          max_outliers: int) -> np.ndarray:
    """What step ``t`` adds to the hypotheses' log possibilities (see :func:`mixture_scores`)."""
    drop = _hypotheses(k, max_outliers)
    floor = _outlier_floor(m)
    # sup over the labellings: an outlier has possibility ε, an inlier its consistency;
    # the first k observations are labelled by the hypothesis, the later ones freely
    gain = np.where(np.isnan(log_c), 0.0, np.maximum(log_c, floor) if t >= k else log_c)
    if t < k:
        gain = gain + np.where(observed[..., None] & drop[:, t], floor, 0.0)
    return gain


def leader_discount(discount: Any, lead: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """The leader's discount (``B``) from the hypotheses' (``B + (H,)``): 0 where the leader
    drops an observed ``y``, NaN where ``y`` is missing."""
    return np.where(observed, np.nan_to_num(_pick(discount, lead), nan=0.0), np.nan)


def _pick(a: Any, lead: np.ndarray) -> np.ndarray:
    return np.take_along_axis(np.asarray(a), lead[..., None], -1)[..., 0]


def start_masked(ys: np.ndarray, initial: Any, step: PlainStep, m: int, *, k: int = K,
                 max_outliers: int = MAX_OUTLIERS, window: int = WINDOW) -> np.ndarray:
    """``ys`` (B, T, m) with the observations that the mixture settles on as outliers set to
    NaN (the retrospective choice, for the smoother); ``initial`` is the KalmanState of the
    prior, batch (B,)."""
    drop = start_hypotheses(k, max_outliers)
    state = start_init(initial, (ys.shape[0],), k, max_outliers)
    for t in range(min(ys.shape[1], k + window)):
        # the same steps as the filter's, kept as a mixture to read the final leader
        mixture, _, _, _ = start_step(state, ys[:, t], step, m, k=k,
                                      max_outliers=max_outliers, window=np.inf)
        assert isinstance(mixture, KalmanStartState)  # window=inf: it never collapses
        state = mixture
    out = ys.copy()
    cols = min(k, ys.shape[1])
    head = out[:, :cols]
    head[drop[state.leader][:, :cols]] = np.nan
    return out
