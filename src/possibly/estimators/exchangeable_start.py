"""A robust start for sequential robust updates of exchangeable observations: a maxitive mixture
of start hypotheses.

From an uninformative prior the first observation cannot be judged, so an outlier there
captures the estimate. Hypothesis ``j`` runs the robust recursion with ``y_j`` first and
judges every other observation against it; hypotheses are scored by their consistencies (each
floored at ``α``), the posterior is their maxitive mixture, and it collapses to the leader once
the others are negligible (docs/math.md, "The robust start for exchangeable observations").
The functions are generic over the state (a family member, a frozen dataclass, a tuple or an
array, batch dimensions first); :mod:`possibly.estimators.location_scale` uses them. Time
series cannot be reordered: the filters have their own start,
:mod:`possibly.filters.robust_start`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from possibly._tree import tree_expand, tree_select, tree_take

__all__ = ["StartState", "StartStep", "start_init", "start_step"]

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


def _candidate(state: StartState, y: np.ndarray, create: np.ndarray, step: StartStep,
               log_floor: float) -> tuple[Any, np.ndarray, dict[str, np.ndarray], np.ndarray]:
    """The new hypothesis of each stream where ``create``: ``y`` first, then the earlier
    candidates' values in order. Returns its state, the consistency of ``y`` with the prior,
    the extras of that first step and the hypothesis' score."""
    size = state.log_weight.shape[-1]
    buffer, seen = state.buffer, state.seen
    cand, c0, new_extras = step(state.prior, np.where(create, y, np.nan))
    cand_score = np.where(create, np.maximum(c0, log_floor), 0.0)
    for i in range(size - 1):
        earlier = np.where(create & (i < seen), buffer[..., i], np.nan)
        if np.isnan(earlier).all():
            break
        cand, c_i, _ = step(cand, earlier)
        cand_score = cand_score + np.where(np.isnan(earlier), 0.0,
                                           np.maximum(c_i, log_floor))
    return cand, c0, new_extras, cand_score


def _rescored(state: StartState, y: np.ndarray, steps: int, hyp: Any, log_weight: np.ndarray,
              score: Callable[[Any, np.ndarray], np.ndarray] | None
              ) -> tuple[np.ndarray, np.ndarray]:
    """The history with ``y`` kept (while within the horizon) and the log weights, replaced
    by ``score``'s where one is given and a stream has not collapsed."""
    history = state.history
    horizon = history.shape[-1]
    if score is not None and horizon and not state.collapsed.all():
        if steps <= horizon:
            history = history.copy()
            history[..., steps - 1] = y
        alive_now = np.isfinite(log_weight)
        log_weight = np.where(alive_now, score(hyp, history), -np.inf)
    return history, log_weight


def _max_normalised(log_weight: np.ndarray) -> np.ndarray:
    """Log weights less their maximum per stream (left as they are where none is finite)."""
    top = np.max(log_weight, axis=-1, keepdims=True)
    return np.where(np.isfinite(top), log_weight - np.where(np.isfinite(top), top, 0.0),
                    log_weight)


def _leader_extras(extras: dict[str, np.ndarray], leader: np.ndarray,
                   new_extras: dict[str, np.ndarray] | None, made: np.ndarray
                   ) -> dict[str, np.ndarray]:
    """The ``extras`` of each stream's leader; ``new_extras`` (the new candidate's) where
    ``made`` (the leader is the candidate just made)."""
    out = {}
    for name, value in extras.items():
        lead = np.take_along_axis(np.asarray(value), leader[..., None], -1)[..., 0]
        if new_extras is not None:
            lead = np.where(made, new_extras[name], lead)
        out[name] = lead
    return out


def _collapsed(state: StartState, hyp: Any, log_weight: np.ndarray, leader: np.ndarray,
               seen: np.ndarray, steps: int, ratio: float
               ) -> tuple[Any, np.ndarray, np.ndarray]:
    """Collapse to the leader the streams whose every candidate exists and whose other
    hypotheses are negligible (all the streams once the horizon is reached). Returns the
    hypotheses, their log weights and which streams have collapsed."""
    size = log_weight.shape[-1]
    horizon = state.history.shape[-1]
    others = np.where(np.arange(size) == leader[..., None], -np.inf, log_weight)
    collapse = ~state.collapsed & (seen >= size) & (others.max(-1) < np.log(ratio))
    if horizon and steps >= horizon:
        collapse = ~state.collapsed                  # the horizon is reached: take the leader
    collapsed = state.collapsed | collapse
    if collapse.any():
        lead_state = tree_expand(tree_take(hyp, leader), size, leader.ndim)
        hyp = tree_select(collapse[..., None] & np.ones(size, dtype=bool), lead_state, hyp)
        log_weight = np.where(collapse[..., None], 0.0, log_weight)
    return hyp, log_weight, collapsed


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
        cand, c0, new_extras, cand_score = _candidate(state, y, create, step, log_floor)
        slot = np.minimum(seen, size - 1)
        here = create[..., None] & (np.arange(size) == slot[..., None])
        hyp = tree_select(here, tree_expand(cand, size, y.ndim), hyp)
        log_weight = np.where(here, cand_score[..., None], log_weight)
        buffer = np.where(here, y[..., None], buffer)
        seen = seen + create
        first = create & (state.seen == 0)
        mix_c = np.where(first, c0, mix_c)
    steps = state.steps + 1
    history, log_weight = _rescored(state, y, steps, hyp, log_weight, score)
    log_weight = _max_normalised(log_weight)
    leader = _leader(log_weight)
    # extras of the leader: from the new candidate where it leads and was just made
    made = create & (leader == np.minimum(state.seen, size - 1))
    out = _leader_extras(extras, leader, new_extras, made)
    # 3. collapse once every candidate exists and the others are negligible
    hyp, log_weight, collapsed = _collapsed(state, hyp, log_weight, leader, seen, steps,
                                            ratio)
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
