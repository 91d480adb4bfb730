"""The run-length recursion: one state type, one pure ``init``/``step``, one backtracking.

The possibilistic BOCPD of the paper's §5.3 (docs/math.md §6), for one or several segment
models (:mod:`possibly.changepoint.models`). The state after ``t`` observations is, for every
kept run hypothesis ``(s, k)`` — a segment that started at index ``s`` under model ``k`` — a
log possibility ``log w`` (maximum 0 over all hypotheses) and the model's possibility function
of the segment parameter. Per observation ``y`` with hazard ``h`` and forgetting ``ρ``:

* predict: every run grows by one and keeps ``w``; its information is forgotten
  (``f ← f^ρ``); under *each* model a new run starts at ``t`` with ``w = h · max w`` (its
  parent is the MAP hypothesis after ``t − 1``);
* consistency: ``log c = max [log w + log sup_θ f L(θ | y)]`` (``≥ log h``);
* discount: ``γ`` from :func:`possibly.inference.discount` with ``d`` the largest ``dim`` of
  the models (``γ = c^(1/d)``, 1 for the standard recursion, thresholded by ``τ``);
* update: every run's weight gets the model's evidence increment and ``f ← f L^γ / sup``;
  then ``log w −= max log w``.

A missing observation (NaN) only predicts; its log consistency and discount are NaN.

The segmentation is the exact MAP one (every new run's parent is the MAP hypothesis), and the
cost per observation is bounded by dropping (``tol``) and merging (``merge_tol``) hypotheses:
docs/math.md §6.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from possibly.changepoint.models.normal_mean import NormalMean
from possibly.changepoint.models.segment_model import SegmentModel, real_scalar
from possibly.inference import discount_one
from possibly.sequential import Info
from possibly.validation import check_bool, check_unit_interval

__all__ = [
    "ChangepointInfo",
    "ChangepointParams",
    "MapTrace",
    "RunBlock",
    "RunState",
    "backtrack",
    "init",
    "step",
]


def as_models(model: Any) -> tuple[SegmentModel, ...]:
    """One segment model or a non-empty list of them, as a tuple (TypeError otherwise)."""
    models = tuple(model) if isinstance(model, (list, tuple)) else (model,)
    if not models:
        raise ValueError("model must be a segment model or a non-empty list of them, got []")
    for m in models:
        if not isinstance(m, SegmentModel):
            raise TypeError(f"model must be a segment model (NormalMean, ConjugateModel, ...) "
                            f"or a list of them, got {m!r}")
    return models


@dataclass(frozen=True)
class ChangepointParams:
    """Parameters of the recursion (validated by :meth:`make`).

    Attributes
    ----------
    models : tuple of SegmentModel
        The segment models; a new run is proposed under each at every step.
    hazard : float
        Possibility ``h`` in (0, 1) of a change point at each step.
    forgetting : float
        ``ρ`` in (0, 1]: the power applied to every run's possibility function per step.
    robust : bool
        Discount each observation by ``γ = c^(1/d)`` (True) or keep it whole (False).
    tau : float or None
        Threshold variant: discount only when ``γ ≤ tau``, in (0, 1].
    tol : float
        Hypotheses below ``tol`` relative to the maximum are dropped; in [0, hazard).
    merge_tol : float
        Adjacent indistinguishable hypotheses are merged (module docstring); 0 never merges.
    """

    models: tuple[SegmentModel, ...]
    hazard: float = 2.5e-3
    forgetting: float = 0.9
    robust: bool = True
    tau: float | None = None
    tol: float = 1e-12
    merge_tol: float = 0.0

    @classmethod
    def make(cls, sigma: Any = None, hazard: Any = 2.5e-3, forgetting: Any = 0.9,
             robust: Any = True, tau: Any = None, tol: Any = 1e-12, model: Any = None,
             merge_tol: Any = 0.0) -> ChangepointParams:
        """Validate and build; ``sigma`` alone is shorthand for ``model=NormalMean(sigma)``.

        Examples
        --------
        >>> ChangepointParams.make(sigma=1.0, hazard=0.01).models
        (NormalMean(sigma=1.0),)
        """
        if model is None:
            models: tuple[SegmentModel, ...] = (NormalMean(1.0 if sigma is None else sigma),)
            if sigma is None:
                raise ValueError("sigma must be given for the normal-mean model (or pass model)")
        else:
            models = as_models(model)
            if sigma is not None:
                raise ValueError("sigma belongs to NormalMean: it must be None with model=... "
                                 f"(pass NormalMean(sigma) as the model), got {sigma!r}")
        hazard = float(check_unit_interval("hazard", real_scalar("hazard", hazard),
                                           low_open=True, high_open=True))
        forgetting = float(check_unit_interval(
            "forgetting", real_scalar("forgetting", forgetting), low_open=True,
            high_open=False))
        if tau is not None:
            tau = float(check_unit_interval("tau", real_scalar("tau", tau),
                                            low_open=True, high_open=False))
        tol = real_scalar("tol", tol)
        if not 0.0 <= tol < hazard:
            raise ValueError(f"tol must be in [0, hazard) = [0, {hazard:g}) (the pruning "
                             f"tolerance, below the hazard), got {tol!r}")
        merge_tol = real_scalar("merge_tol", merge_tol)
        if not 0.0 <= merge_tol < 1.0:
            raise ValueError(f"merge_tol must be in [0, 1), got {merge_tol!r}")
        return cls(models, hazard, forgetting, check_bool("robust", robust), tau, tol,
                   merge_tol)

    @property
    def dim(self) -> float:
        """``d`` of the discount: the largest ``dim`` of the models."""
        return max(float(m.dim) for m in self.models)

    @property
    def sigma(self) -> float | None:
        """σ of the first :class:`NormalMean` model (None without one)."""
        for m in self.models:
            if isinstance(m, NormalMean):
                return m.sigma  # type: ignore[return-value]
        return None


@dataclass(frozen=True, eq=False)
class RunBlock:
    """The kept hypotheses of one model, ordered by start (longest run first)."""

    start: np.ndarray
    log_w: np.ndarray
    runs: dict[str, np.ndarray]

    def take(self, keep: np.ndarray) -> RunBlock:
        return RunBlock(self.start[keep], self.log_w[keep],
                        {k: v[keep] for k, v in self.runs.items()})


@dataclass(frozen=True, eq=False)
class RunState:
    """Kept run hypotheses after ``t`` observations, one :class:`RunBlock` per model."""

    t: int
    blocks: tuple[RunBlock, ...]

    @property
    def start(self) -> np.ndarray:
        """Start index of every kept hypothesis (models in order)."""
        return np.concatenate([b.start for b in self.blocks])

    @property
    def log_w(self) -> np.ndarray:
        """Log possibility of every kept hypothesis (models in order), maximum 0."""
        return np.concatenate([b.log_w for b in self.blocks])

    @property
    def model(self) -> np.ndarray:
        """Model index of every kept hypothesis."""
        return np.concatenate([np.full(b.start.size, k, dtype=np.int64)
                               for k, b in enumerate(self.blocks)])

    @property
    def n_active(self) -> int:
        return int(sum(b.start.size for b in self.blocks))


@dataclass(frozen=True)
class ChangepointInfo(Info):
    """What one observation did (an :class:`possibly.sequential.Info`).

    Attributes
    ----------
    t : int
        Index of the observation.
    map_run_length : int
        Run length of the MAP hypothesis after the update (0: a segment starts here).
    map_model : int
        Index of the MAP hypothesis's segment model.
    mean : float or ndarray
        E* of the MAP segment's parameter (NaN before any observation of the segment).
    n_active : int
        Number of kept hypotheses.
    log_change_possibility : float
        Log possibility that a segment starts at this observation (the new runs' weight).
    change_detected : bool
        The MAP segment start moved forward at this step: a new change point at
        ``t - map_run_length`` (river's ``drift_detected``). Set by the detector's
        :meth:`~possibly.ChangepointDetector.update`; False from the pure :func:`step`.
    outlier_detected : bool
        The observation was discounted below the detector's ``outlier_level`` without a
        change being detected (online; the first observations after a change are flagged
        too until it is confirmed).
    anomaly : float
        The calibrated anomaly of the observation, in ``[0, 1]``: one minus its p-value
        against the stream's earlier records
        (:mod:`possibly.changepoint.anomaly`); 0 for a missing one. Set by the detector's
        :meth:`~possibly.ChangepointDetector.update`; 0 from the pure :func:`step`.
    """

    t: int = 0
    map_run_length: int = 0
    map_model: int = 0
    mean: Any = math.nan
    n_active: int = 0
    log_change_possibility: float = -math.inf
    change_detected: bool = False
    outlier_detected: bool = False
    anomaly: float = 0.0


def init(model: Any = None) -> RunState:
    """The state before any observation: no run yet (the first one starts for sure).

    ``model`` is a segment model, a list of them, or :class:`ChangepointParams` (None: one
    normal-mean model).
    """
    if isinstance(model, ChangepointParams):
        models = model.models
    elif model is None:
        models = (NormalMean(),)
    else:
        models = as_models(model)
    return RunState(0, tuple(RunBlock(np.zeros(0, dtype=np.int64), np.zeros(0), m.new_runs(0))
                             for m in models))


def _concat(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {k: np.concatenate([a[k], b[k]]) for k in a}


def _is_missing(y: Any) -> bool:
    return bool(np.isnan(np.asarray(y, dtype=np.float64)).any())


def _discount(log_c: float, params: ChangepointParams) -> float:
    """γ of one observation, by the same Python function the compiled engines run compiled,
    so the numpy and numba engines stay bit-identical whether or not numba is installed."""
    return discount_one(log_c, params.dim, math.nan if params.tau is None else params.tau,
                        params.robust)


def merge_keep(log_w: np.ndarray, close: np.ndarray) -> np.ndarray:
    """Which runs survive the merge: of each indistinguishable adjacent pair, the larger weight.

    ``close[j]`` says runs ``j`` and ``j + 1`` are indistinguishable; ties keep ``j``.
    """
    keep = np.ones(log_w.size, dtype=bool)
    newer_wins = log_w[1:] > log_w[:-1]
    keep[:-1] &= ~(close & newer_wins)
    keep[1:] &= ~(close & ~newer_wins)
    return keep


def step(state: RunState, y: Any, params: ChangepointParams) -> tuple[RunState, ChangepointInfo]:
    """Process one observation (NaN = missing: predict only); returns ``(new_state, info)``.

    Pure: ``state`` is not modified. The models of ``params`` must be resolved (a fixed σ).

    Examples
    --------
    >>> p = ChangepointParams.make(sigma=1.0, hazard=0.01, forgetting=1.0)
    >>> s = init(p)
    >>> for y in [0.1, -0.2, 0.0, 8.0, 8.1, 7.9]:
    ...     s, info = step(s, y, p)
    >>> info.map_run_length, round(info.mean, 3)
    (2, 8.0)
    """
    t = state.t
    models = params.models
    maxes = [float(b.log_w.max()) for b in state.blocks if b.log_w.size]
    log_new = math.log(params.hazard) + max(maxes) if maxes else 0.0
    blocks = []
    for m, b in zip(models, state.blocks, strict=True):
        blocks.append(RunBlock(np.append(b.start, t), np.append(b.log_w, log_new),
                               _concat(m.forget(b.runs, params.forgetting), m.new_runs(1))))
    if _is_missing(y):
        log_c = gamma = math.nan
    else:
        # the per-step statistics (residuals, Mahalanobis distances, ...) computed once for
        # the consistency and the update (SegmentModel.prepare)
        prepared = [m.prepare(b.runs, y) for m, b in zip(models, blocks, strict=True)]
        log_c = max(float(np.max(b.log_w + m.log_consistency(p)))
                    for m, b, p in zip(models, blocks, prepared, strict=True))
        gamma = _discount(log_c, params)
        updated = []
        for m, b, p in zip(models, blocks, prepared, strict=True):
            incr, runs = m.update(p, gamma)
            updated.append(RunBlock(b.start, b.log_w + incr, runs))
        shift = max(float(np.max(b.log_w)) for b in updated)
        blocks = [RunBlock(b.start, b.log_w - shift, b.runs) for b in updated]
    if params.tol > 0.0:
        log_tol = math.log(params.tol)
        blocks = [b if bool((b.log_w >= log_tol).all()) else b.take(b.log_w >= log_tol)
                  for b in blocks]
    if params.merge_tol > 0.0:
        merged = []
        for m, b in zip(models, blocks, strict=True):
            close = m.indistinguishable(b.runs, params.merge_tol)
            merged.append(b.take(merge_keep(b.log_w, close)) if close.any() else b)
        blocks = merged
    # MAP: the first maximum in the order (model 0 first, then by start)
    best_k, best_i, best_v = 0, 0, -math.inf
    for k, b in enumerate(blocks):
        if b.log_w.size:
            i = int(np.argmax(b.log_w))
            if b.log_w[i] > best_v:
                best_k, best_i, best_v = k, i, float(b.log_w[i])
    b = blocks[best_k]
    est = models[best_k].estimate({name: v[best_i:best_i + 1] for name, v in b.runs.items()})[0]
    mean = float(est) if np.ndim(est) == 0 else est
    log_cp = max((float(c.log_w[-1]) for c in blocks if c.start.size and c.start[-1] == t),
                 default=-math.inf)
    new = RunState(t + 1, tuple(blocks))
    return new, ChangepointInfo(log_c, gamma, t=t, map_run_length=t - int(b.start[best_i]),
                                map_model=best_k, mean=mean, n_active=new.n_active,
                                log_change_possibility=log_cp)


# ----------------------------------------------------------------------------------------------
# segmentation


def backtrack(map_run_length: Any) -> np.ndarray:
    """Change points from MAP run lengths: segment start ``t - r_t``, then jump to ``start - 1``.

    Returns the 0-based start indices of the segments after the first, increasing.

    Examples
    --------
    >>> backtrack([0, 1, 2, 0, 1, 0, 1, 2]).tolist()
    [3, 5]
    >>> backtrack([0, 1, 2, 0, 4, 5]).tolist()  # the reset at 3 was overridden by t = 5
    []
    """
    r = np.asarray(map_run_length)
    if r.ndim != 1 or (r.size and not np.issubdtype(r.dtype, np.integer)):
        raise ValueError("map_run_length must be a 1-D array of integers")
    r = r.astype(np.int64)
    bad = (r < 0) | (r > np.arange(r.size))
    if bad.any():  # a run length outside [0, t] would make the walk go forwards
        t = int(np.flatnonzero(bad)[0])
        raise ValueError(f"map_run_length[t] must be in [0, t], got {int(r[t])} at t={t}")
    trace = MapTrace()
    trace.extend(np.arange(r.size) - r, np.zeros(r.size, dtype=np.int64))
    return trace.changepoints()


class Growable:
    """An array with amortised O(1) append along its first axis (capacity doubles)."""

    def __init__(self, dtype: Any, row: tuple[int, ...] = ()) -> None:
        self.data = np.empty((16, *row), dtype=dtype)
        self.n = 0

    def extend(self, values: np.ndarray) -> None:
        need = self.n + len(values)
        self.reserve(need)
        self.data[self.n:need] = values
        self.n = need

    def reserve(self, size: int) -> np.ndarray:
        """Room for at least ``size`` rows (``n`` unchanged); the buffer, rows past ``n``
        unset, for a caller that writes them before it sets ``n``."""
        if size > len(self.data):
            grown = np.empty((max(size, 2 * len(self.data)), *self.data.shape[1:]),
                             dtype=self.data.dtype)
            grown[:self.n] = self.data[:self.n]
            self.data = grown
        return self.data

    def append(self, value: Any) -> None:
        if self.n == len(self.data):
            self.extend(np.asarray(value, dtype=self.data.dtype)[None])
            return
        self.data[self.n] = value
        self.n += 1

    def last(self) -> Any:
        return self.data[self.n - 1]

    def view(self) -> np.ndarray:
        return self.data[:self.n]


@dataclass
class MapTrace:
    """The MAP ``(start, model)`` after every step, stored only where it changes.

    Each stored event ``e`` covers the steps from ``time[e]`` to the next event; its parent is
    the event covering ``start[e] − 1`` (the MAP hypothesis there), so the change points are a
    walk over parents: linear in the number of segments, and cached between calls.
    """

    t: int = 0
    time: Growable = field(default_factory=lambda: Growable(np.int64))
    start: Growable = field(default_factory=lambda: Growable(np.int64))
    model: Growable = field(default_factory=lambda: Growable(np.int8))
    parent: Growable = field(default_factory=lambda: Growable(np.int64))
    _cache: tuple[int, np.ndarray, np.ndarray] | None = None

    def extend(self, start: np.ndarray, model: np.ndarray) -> None:
        """Record the MAP start and model of the next ``len(start)`` steps."""
        start = np.asarray(start, dtype=np.int64)
        model = np.asarray(model, dtype=np.int64)
        if start.size == 0:
            return
        if start.size == 1:  # streaming: plain Python on scalars
            self._append(int(start[0]), int(model[0]))
            return
        if self.start.n:
            prev_s, prev_m = self.start.view()[-1], self.model.view()[-1]
        else:
            prev_s, prev_m = -1, -1
        change = np.empty(start.size, dtype=bool)
        change[0] = start[0] != prev_s or model[0] != prev_m
        change[1:] = (start[1:] != start[:-1]) | (model[1:] != model[:-1])
        idx = np.flatnonzero(change)
        times = self.t + idx
        starts = start[idx]
        self.time.extend(times)
        self.start.extend(starts)
        self.model.extend(model[idx].astype(np.int8))
        # parent: the event covering start - 1 (searched among all events, new ones included)
        parents = np.searchsorted(self.time.view(), starts - 1, side="right") - 1
        self.parent.extend(np.where(starts > 0, parents, -1))
        self.t += start.size

    def _append(self, s: int, k: int) -> None:
        if self.start.n and int(self.start.last()) == s and int(self.model.last()) == k:
            self.t += 1
            return
        self.time.append(self.t)
        self.start.append(s)
        self.model.append(k)
        self.parent.append(self.event_at(s - 1) if s > 0 else -1)
        self.t += 1

    def event_at(self, t: int) -> int:
        return int(np.searchsorted(self.time.view(), t, side="right")) - 1

    def _walk(self) -> tuple[np.ndarray, np.ndarray]:
        n = self.time.n
        if self._cache is not None and self._cache[0] == n:
            return self._cache[1], self._cache[2]
        starts, parent, model = self.start.view(), self.parent.view(), self.model.view()
        chain = []
        e = n - 1
        while e >= 0:
            chain.append(e)
            e = int(parent[e])
        chain.reverse()
        ev = np.array(chain, dtype=np.int64)
        seg_starts, seg_models = starts[ev], model[ev].astype(np.int64)
        self._cache = (n, seg_starts, seg_models)
        return seg_starts, seg_models

    def changepoints(self) -> np.ndarray:
        """Start indices of the MAP segments after the first, increasing."""
        if self.t == 0:
            return np.zeros(0, dtype=np.int64)
        return self._walk()[0][1:].copy()

    def segment_models(self) -> np.ndarray:
        """Model index of each MAP segment."""
        if self.t == 0:
            return np.zeros(0, dtype=np.int64)
        return self._walk()[1].copy()

    def nbytes(self) -> int:
        return sum(g.data.nbytes for g in (self.time, self.start, self.model, self.parent))

