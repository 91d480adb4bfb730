"""A robust start for sequential robust updates: a maxitive mixture of start hypotheses.

Why
---
From an uninformative prior the first observation cannot be judged: its consistency is fixed
(``sqrt(1 - ω)`` with the ω split, 1 for a bounded likelihood), so it is taken (nearly)
whole. The paper (§4.1) assumes that it is an inlier. When it is an outlier, every later good
observation looks inconsistent with the posterior it made and is discounted: the estimate is
captured, sometimes for good.

What
----
The robust update depends on the order of the observations, and the only order-dependence
that matters at the start is *which observation comes first*. Hypothesis ``j``
(``j = 1..K``) is the robust recursion run on the order ``(y_j, y_1, ..., y_{j-1}, y_{j+1},
...)``: it trusts ``y_j`` as the start and judges all the others, including the earlier ones,
against it. Hypothesis 1 is the plain recursion. Every hypothesis has then processed the same
observations, so their scores are comparable. Each observation is, for each hypothesis,
either an inlier, with the possibility ``c_s^{(j)}`` (its consistency), or an outlier, with a
fixed possibility ``α`` (by default ``τ^d``: the consistency below which the threshold rule
discounts, 0.1^d without a threshold); the score of hypothesis ``j`` is the sup over the
labellings, ``Σ_s max(log c_s^{(j)}, log α)``. (Without outliers this is the log of the
product of the consistencies, which for standard updates is ``sup_θ Π L(θ | y_s)`` whatever
the order; an outlier start makes every inlier inconsistent and its score collapses. The
floor ``α`` keeps one gross outlier later on from favouring the hypothesis that happens to
sit nearer to it.) The posterior is the maxitive mixture ``f(θ) = max_j w_j f_j(θ)`` with
``w_j`` the max-normalised scores, so

* its ``E*`` is the ``E*`` of the leading hypothesis (``w = 1``);
* the consistency of a new observation with it is ``max_j w_j c_j`` (the sup of a max is the
  max of the sups).

Once all ``K`` candidates exist and every other hypothesis has weight below ``ratio`` (a set
factor, default ``1e-3``), or at the latest after ``horizon`` steps (default 20; two inlier
starts can agree for ever), the mixture collapses to the leader and the recursion goes on
alone. With ``K = 1`` this is exactly the plain recursion.

A possibilistic consistency does not penalise vagueness: a hypothesis whose posterior is
vague is consistent with everything. With a bounded likelihood and a known scale (a normal
mean, a Kalman filter with known noise) the outlier start is not vague and the default score
above tells the hypotheses apart. When the start can make the posterior vague (an unknown
precision: an outlier start inflates the scale), pass a ``score(hypotheses, history)``
instead: :mod:`possibly.estimators.location_scale` uses the capped log-likelihood of the
observations so far at each hypothesis' ``E*`` (which pays ``½ log λ`` per observation
for a vague precision), with the same floor ``α`` per observation.

Cost
----
Hypothesis ``j`` replays the ``j - 1`` earlier observations when it is created (``O(K²)``
steps in all) and the ``K`` hypotheses are updated side by side until the collapse (at most
``horizon`` steps; a ``score`` also costs ``O(K · horizon)`` per step then): about ``K``
times the cost of the plain recursion over the first steps, then the cost of the plain
recursion (once every stream of a batch has collapsed, the hypothesis axis is dropped). For
the location/scale estimator with ``K = 3``: about 2x the plain recursion over 1000 series
of 100 observations, 1.6x for one series. A missing observation (NaN) is not a candidate:
the candidates are the first ``K`` observed values.

For dynamic models (filters) the order of the observations is their time and cannot be
changed: the Kalman filters have their own start, :mod:`possibly.filters.robust_start`.

The functions here are generic: ``step`` is any pure robust step over a batch whose state
is a :class:`~possibly.Possibility`, a (named) tuple of arrays (``None`` and counters
allowed, e.g. a Kalman state) or an array, every array carrying the full batch shape ``B``
first; the hypotheses are an extra batch axis right after ``B``.
:mod:`possibly.estimators.location_scale` uses it; the same code serves any sequential
robust update with an uninformative start.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from possibly.families.base import Possibility

__all__ = ["StartState", "StartStep", "start_init", "start_step", "tree_expand", "tree_map",
           "tree_select", "tree_take"]

#: ``step(state, y) -> (state, log_c, extras)``: a pure robust step over a batch; ``y`` has
#: the state's batch shape with NaN for missing entries, where the step must only predict
#: and return a NaN ``log_c``. ``extras`` is a dict of per-step arrays of the batch shape.
StartStep = Callable[[Any, np.ndarray], tuple[Any, np.ndarray, dict[str, np.ndarray]]]

#: Log weights within this of the best are a tie, won by the earliest hypothesis. Exact ties
#: occur (two observations, each judged against the other) and must not be broken by
#: rounding, which changes with the data's units.
TIE = 1e-9


def _leader(log_weight: np.ndarray) -> np.ndarray:
    """The leading hypothesis: the first whose log weight is within :data:`TIE` of the best."""
    top = np.max(log_weight, axis=-1, keepdims=True)
    return np.argmax(log_weight >= top - TIE, axis=-1)


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


@dataclass(frozen=True)
class StartState:
    """The mixture of start hypotheses for a batch of streams (batch shape ``B``).

    Attributes
    ----------
    hypotheses : Any
        The hypotheses' states, batch shape ``B + (K,)`` (``K = 1`` once every stream has
        collapsed).
    log_weight : ndarray, shape ``B + (K,)``
        Max-normalised log scores; ``-inf`` for a hypothesis not yet created.
    buffer : ndarray, shape ``B + (size,)``
        The first ``size`` observed values (NaN for those still to come).
    seen : ndarray of int, shape ``B``
        How many candidates exist (capped at ``size``).
    collapsed : ndarray of bool, shape ``B``
    prior : Any
        The state before any observation (batch shape ``B``), from which candidates start.
    history : ndarray, shape ``B + (horizon,)``
        The observations so far (NaN if missing), for a ``score`` (empty without one).
    steps : int
        Number of steps taken.
    """

    hypotheses: Any
    log_weight: np.ndarray
    buffer: np.ndarray
    seen: np.ndarray
    collapsed: np.ndarray
    prior: Any
    history: np.ndarray
    steps: int = 0

    @property
    def leader(self) -> np.ndarray:
        """Index of the leading hypothesis (weight 1; the earliest on a tie) per stream."""
        return _leader(self.log_weight)

    @property
    def current(self) -> Any:
        """The leading hypothesis' state (batch shape ``B``): the mixture's ``E*``."""
        return tree_take(self.hypotheses, self.leader)


def start_init(prior: Any, batch_shape: tuple[int, ...], size: int,
               horizon: int = 20) -> StartState:
    """The mixture before any observation: ``size`` empty slots around ``prior``.

    Hypothesis ``j`` starts from the ``j``-th observed value and judges the earlier ones
    after it (module docstring); valid for static parameters, whose robust update may take
    the observations in any order.

    The mixture collapses to its leader at the latest after ``horizon`` steps (``0``: only
    when the others are negligible; hypotheses that agree, e.g. two inlier starts, may then
    never separate); the observations of those steps are kept for a ``score`` (see
    :func:`start_step`).

    Examples
    --------
    >>> import numpy as np, possibly as ps
    >>> s = start_init(ps.Normal.uninformative((2,)), (2,), size=3)
    >>> s.hypotheses.batch_shape, s.log_weight.shape, s.seen
    ((2, 3), (2, 3), array([0, 0]))
    """
    if int(size) != size or size < 1:
        raise ValueError(f"size must be an integer >= 1, got {size!r}")
    size = int(size)
    shape = tuple(batch_shape)
    # hypothesis j is made at the j-th observed value
    log_weight = np.full(shape + (size,), -np.inf)
    return StartState(hypotheses=tree_expand(prior, size, len(shape)), log_weight=log_weight,
                      buffer=np.full(shape + (size,), np.nan),
                      seen=np.zeros(shape, dtype=np.int64),
                      collapsed=np.zeros(shape, dtype=bool), prior=prior,
                      history=np.full(shape + (int(horizon),), np.nan), steps=0)


def start_step(state: StartState, y: np.ndarray, step: StartStep, *, ratio: float = 1e-3,
               log_floor: float = np.log(0.01),
               score: Callable[[Any, np.ndarray], np.ndarray] | None = None
               ) -> tuple[StartState, np.ndarray, dict[str, np.ndarray]]:
    """One observation per stream for the mixture (module docstring); pure.

    Returns ``(state, log_c, extras)``: ``log_c`` is the consistency of ``y`` with the
    mixture (``max_j w_j c_j``; for a stream's first observation, that of its only
    hypothesis), ``extras`` those of the leading hypothesis after the step (its ``extras``
    from ``step``). ``log_c`` is NaN where ``y`` is missing. ``log_floor`` is the log
    possibility ``log α`` of an observation being an outlier: each observation adds
    ``max(log c, log α)`` to a hypothesis' score (module docstring). ``score(hypotheses,
    history)``, if given, replaces that score: the log weight of each hypothesis (shape
    ``B + (K,)``) from the observations kept in ``history`` (``B + (horizon,)``, NaN where
    missing or not yet observed).

    Examples
    --------
    >>> import numpy as np, possibly as ps
    >>> def step(f, y):                    # robust normal mean, sd 1, NaN = predict only
    ...     miss = np.isnan(y)
    ...     lik = ps.likelihood.normal(np.where(miss, 0.0, y), sd=1.0)
    ...     log_c = ps.log_consistency(f, lik, validate=False)     # stays in log space
    ...     rho = ps.discount(log_c, 1.0, validate=False)
    ...     new = ps.combine(f, lik.power(rho, validate=False), validate=False)
    ...     return tree_select(miss, f, new), np.where(miss, np.nan, log_c), {}
    >>> s = start_init(ps.Normal.uninformative(), (), size=2)
    >>> for y in [40.0, 0.1, -0.2, 0.3, 0.0]:   # an outlier first
    ...     s, log_c, _ = start_step(s, np.asarray(y), step)
    >>> round(float(s.current.mean), 3), bool(s.collapsed)
    (0.05, True)
    """
    size = state.log_weight.shape[-1]
    y = np.asarray(y, dtype=np.float64)
    shape = state.seen.shape
    y = np.broadcast_to(y, shape)
    missing = np.isnan(y)
    alive = np.isfinite(state.log_weight)
    # 1. every existing hypothesis takes y as its next observation
    hyp, log_c, extras = step(state.hypotheses, y[..., None])
    ok_c = np.where(alive & ~missing[..., None], np.maximum(log_c, log_floor), 0.0)
    log_weight = np.where(alive, state.log_weight + ok_c, -np.inf)
    with np.errstate(invalid="ignore"):
        mix_c = np.max(np.where(alive, state.log_weight + log_c, -np.inf), axis=-1)
    # 2. a new candidate: y first, then the earlier candidates' values, in order
    create = ~missing & ~state.collapsed & (state.seen < size)
    buffer, seen = state.buffer, state.seen
    new_extras = None
    if create.any():
        cand, c0, new_extras = step(state.prior, np.where(create, y, np.nan))
        cand_score = np.where(create, np.maximum(c0, log_floor), 0.0)
        for i in range(size - 1):
            earlier = np.where(create & (i < seen), buffer[..., i], np.nan)
            if np.isnan(earlier).all():
                break
            cand, c_i, _ = step(cand, earlier)
            cand_score = cand_score + np.where(np.isnan(earlier), 0.0,
                                               np.maximum(c_i, log_floor))
        slot = np.minimum(seen, size - 1)
        here = create[..., None] & (np.arange(size) == slot[..., None])
        hyp = tree_select(here, tree_expand(cand, size, y.ndim), hyp)
        log_weight = np.where(here, cand_score[..., None], log_weight)
        buffer = np.where(here, y[..., None], buffer)
        seen = seen + create
        first = create & (state.seen == 0)
        mix_c = np.where(first, c0, mix_c)
    history, steps = state.history, state.steps + 1
    horizon = history.shape[-1]
    if score is not None and horizon and not state.collapsed.all():
        if steps <= horizon:
            history = history.copy()
            history[..., steps - 1] = y
        alive_now = np.isfinite(log_weight)
        log_weight = np.where(alive_now, score(hyp, history), -np.inf)
    top = np.max(log_weight, axis=-1, keepdims=True)
    log_weight = np.where(np.isfinite(top), log_weight - np.where(np.isfinite(top), top, 0.0),
                          log_weight)
    leader = _leader(log_weight)
    # extras of the leader: from the new candidate where it leads and was just made
    out = {}
    for name, value in extras.items():
        lead = np.take_along_axis(np.asarray(value), leader[..., None], -1)[..., 0]
        if new_extras is not None:
            made = create & (leader == np.minimum(state.seen, size - 1))
            lead = np.where(made, new_extras[name], lead)
        out[name] = lead
    # 3. collapse once every candidate exists and the others are negligible
    others = np.where(np.arange(size) == leader[..., None], -np.inf, log_weight)
    collapse = ~state.collapsed & (seen >= size) & (others.max(-1) < np.log(ratio))
    if horizon and steps >= horizon:
        collapse = ~state.collapsed                  # the horizon is reached: take the leader
    collapsed = state.collapsed | collapse
    if collapse.any():
        lead_state = tree_expand(tree_take(hyp, leader), size, y.ndim)
        hyp = tree_select(collapse[..., None] & np.ones(size, dtype=bool), lead_state, hyp)
        log_weight = np.where(collapse[..., None], 0.0, log_weight)
    if size > 1 and collapsed.all():
        # identical hypotheses everywhere: keep one (the leader) and drop the rest
        lead = _leader(log_weight)
        hyp = tree_expand(tree_take(hyp, lead), 1, y.ndim)
        log_weight = np.zeros(shape + (1,))
        buffer = buffer[..., :1]
        history = history[..., :0]
    mix_c = np.where(missing, np.nan, mix_c)
    new = StartState(hypotheses=hyp, log_weight=log_weight, buffer=buffer, seen=seen,
                     collapsed=collapsed, prior=state.prior, history=history, steps=steps)
    return new, mix_c, out
