"""The change-point detector: a thin :class:`~possibly.sequential.SequentialEstimator`."""

from __future__ import annotations

import contextlib
import functools
import inspect
import math
import signal
import threading
from collections.abc import Iterator
from dataclasses import replace
from typing import Any, cast

import numpy as np

from possibly.changepoint import anomaly as anomaly_calibration
from possibly.changepoint.anomaly import check_period, new_calibration, state_period
from possibly.changepoint.compiled_engine import (
    OUTPUTS,
    STEP_COLUMNS,
    STREAM_COLUMNS,
    CompiledModels,
    CompiledStream,
    compiled_models,
    not_compiled_because,
    run_compiled,
    shared_kernels,
)
from possibly.changepoint.models.normal_mean import NormalMean
from possibly.changepoint.models.seasonal import model_family as seasonal_family
from possibly.changepoint.models.segment_model import MAX_MAGNITUDE, SegmentModel, real_scalar
from possibly.changepoint.models.trend import (
    PolynomialTrend,
    SegmentPrior,
    WholeSeriesPrior,
    automatic_prior,
    model_family,
)
from possibly.changepoint.models.vector import MultivariateNormalSegments
from possibly.changepoint.periods import WARM_UP, infer_period, step_seconds, warm_up_length
from possibly.changepoint.recursion import (
    ChangepointInfo,
    ChangepointParams,
    Growable,
    MapTrace,
    RunState,
    as_models,
    init,
    step,
)
from possibly.changepoint.result import ChangepointResult
from possibly.sequential import SequentialEstimator
from possibly.validation import (
    as_numbers,
    check_bool,
    check_unit_interval,
    describe,
    refuse_non_numbers,
)

__all__ = ["ChangepointDetector", "default_forgetting", "default_tol", "numba_available"]

#: observations per call of the compiled loop: Python checks for Ctrl-C between chunks
CHUNK = 1 << 15
#: with period="auto", the periods are inferred again each time the stream has grown by this
#: factor (by at least REVISIT_MIN records) until it holds their warm-up (warm_up_length)
REVISIT_GROWTH = 1.25
REVISIT_MIN = 16
#: ... and at most until it holds this many (a refit of the stream so far stays short: a
#: week of minute data is learnt, a day of second data only from the first fit)
REVISIT_LIMIT = 1 << 17
#: records from which a batch's anomaly calibration is compiled, when it is not at hand already
#: (numba's disk cache, or loaded): fewer run the Python calibration (the same numbers bit for
#: bit) until the process has calibrated this many that way (_python_calibrated)
COMPILED_CALIBRATION_FROM = 10_000
_python_calibrated = [0]
#: whether the compiled calibration's code is at hand, once asked in this process
_calibration_at_hand: list[bool] = []


@functools.cache
def numba_available() -> bool:
    """Whether the compiled engine can be used (numba importable; asked once per process)."""
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


def default_forgetting(models: tuple[SegmentModel, ...]) -> float:
    """``forgetting`` when not given: the smallest of the models' ``default_forgetting`` (1 for
    the unknown-variance segment models, whose trends are modelled, not tracked; the paper's
    0.9 for the others: NormalMean, ConjugateModel, a model of your own).

    Examples
    --------
    >>> from possibly.changepoint import NormalMean, model_family
    >>> default_forgetting(tuple(model_family())), default_forgetting((NormalMean(1.0),))
    (1.0, 0.9)
    """
    return min(m.default_forgetting for m in models)


def default_tol(models: tuple[SegmentModel, ...], hazard: float) -> float:
    """``tol`` when not given: ``tol_per_hazard · hazard`` when every model gives a
    ``tol_per_hazard`` (the smallest: 0.4 for PolynomialTrend, whose cost per step grows with
    the segment length without pruning), 1e-12 otherwise.

    Examples
    --------
    >>> from possibly.changepoint import NormalMean, model_family
    >>> default_tol(tuple(model_family()), 2.5e-3), default_tol((NormalMean(1.0),), 2.5e-3)
    (0.001, 1e-12)
    """
    per_hazard = [m.tol_per_hazard for m in models]
    if any(p is None for p in per_hazard):
        return 1e-12
    return min(p for p in per_hazard if p is not None) * hazard


@contextlib.contextmanager
def _deferred_sigint() -> Iterator[list[bool]]:
    """Record Ctrl-C instead of raising it inside compiled code (checked between chunks).

    A KeyboardInterrupt raised while numba code runs surfaces as a SystemError (or worse);
    outside the main thread signals cannot be handled here and nothing is changed.
    """
    hit = [False]
    if threading.current_thread() is not threading.main_thread():
        yield hit
        return

    def handler(signum: int, frame: Any) -> None:
        hit[0] = True

    try:
        previous = signal.signal(signal.SIGINT, handler)
    except ValueError:  # pragma: no cover - e.g. embedded interpreters
        yield hit
        return
    try:
        yield hit
    finally:
        signal.signal(signal.SIGINT, previous)


def _interruptible(run: Any, state: RunState, y: np.ndarray, params: ChangepointParams
                   ) -> tuple[RunState, dict[str, np.ndarray]]:
    """``run(state, y, params, interrupted)``, a compiled engine that runs in chunks and checks
    ``interrupted`` between them, with Ctrl-C deferred so that it stays clean."""
    if y.size == 1:  # one streamed value: shorter than the two signal() calls
        return run(state, y, params, [False])
    with _deferred_sigint() as interrupted:
        return run(state, y, params, interrupted)


def _run_numpy(state: RunState, y: np.ndarray, params: ChangepointParams,
               peak: np.ndarray | None = None) -> tuple[RunState, dict[str, np.ndarray]]:
    """The numpy engine over ``y`` from ``state``; ``peak`` as in
    :func:`~possibly.changepoint.compiled_engine.run_compiled`."""
    n = len(y)
    shape = params.models[0].estimate_shape
    out = {"start": np.empty(n, np.int64), "model": np.empty(n, np.int64),
           "mean": np.empty((n, *shape)), "log_consistency": np.empty(n),
           "discount": np.empty(n), "n_active": np.empty(n, np.int64),
           "log_change_possibility": np.empty(n)}
    scalar = y.ndim == 1
    for i in range(n):
        state, info = step(state, float(y[i]) if scalar else y[i], params)
        out["start"][i] = info.t - info.map_run_length
        out["model"][i] = info.map_model
        out["mean"][i] = info.mean
        out["log_consistency"][i] = info.log_consistency
        out["discount"][i] = info.discount
        out["n_active"][i] = info.n_active
        out["log_change_possibility"][i] = info.log_change_possibility
        if peak is not None and peak.size:
            _raise_peaks(peak, state)
    return state, out


def _raise_peaks(peak: np.ndarray, state: RunState) -> None:
    """``peak[s] = max(peak[s], log w)`` over the kept hypotheses of ``state`` (the starts
    below ``peak.size``; one model's starts are distinct)."""
    for blk in state.blocks:
        start, log_w = blk.start, blk.log_w
        if start.size and start[-1] >= peak.size:
            tracked = start < peak.size
            start, log_w = start[tracked], log_w[tracked]
        peak[start] = np.maximum(peak[start], log_w)


def _index_step(index: Any) -> Any:
    """The step by which a pandas index continues, or None (see ChangepointDetector.fit)."""
    import pandas as pd

    if isinstance(index, pd.RangeIndex):
        return index.step
    if isinstance(index, pd.PeriodIndex):
        return 1
    if isinstance(index, pd.DatetimeIndex):
        freq = index.freq or (pd.infer_freq(index) if len(index) >= 3 else None)
        return None if freq is None else pd.tseries.frequencies.to_offset(freq)
    if index.dtype.kind in "iu" and len(index) >= 2:
        steps = np.diff(index.to_numpy())
        return int(steps[0]) if steps[0] != 0 and (steps == steps[0]).all() else None
    return None


def _default_positions(index: Any) -> bool:
    """Whether ``index`` is pandas' default ``RangeIndex(0, n)``: positions, not stamps."""
    import pandas as pd

    return (isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1)


def _stamped_index(base: Any, stamps: list[Any]) -> Any:
    """``base`` (the index of fit's input, or None) followed by ``stamps``; None without any
    stamp. The stamps take the base's dtype when they can (e.g. text into a DatetimeIndex)."""
    if not stamps:
        return base
    import pandas as pd

    if base is None:
        return pd.Index(stamps)
    try:
        extra = pd.Index(stamps, dtype=base.dtype)
    except (TypeError, ValueError):
        extra = pd.Index(stamps)
    return base.append(extra)


def _missing_stamp(stamp: Any) -> bool:
    """Whether ``stamp`` is NaT or NaN (a missing time stamp)."""
    import pandas as pd

    try:
        return bool(pd.isna(stamp))
    except (TypeError, ValueError):  # an array-like: not one stamp (refused elsewhere)
        return False


def _revisit_horizon(step: Any) -> int:
    """The record count up to which periods inferred with the sampling ``step`` (None: from the
    values) are revisited: their warm-up, at most :data:`REVISIT_LIMIT`."""
    return min(warm_up_length(step), REVISIT_LIMIT)


def _next_revisit(t: int, horizon: int) -> int:
    """The record count at which periods inferred from ``t`` values are next revisited: a
    quarter more values (at least :data:`REVISIT_MIN`), at most the warm-up ``horizon``."""
    return min(horizon, max(t + REVISIT_MIN, math.ceil(REVISIT_GROWTH * t)))


def _batch_calibration(engine: str, n: int) -> Any:
    """The anomaly calibration of a batch of ``n`` records for a detector of ``engine``: the
    compiled one when its code is at hand (numba's disk cache, or loaded), or when ``n`` and
    the records the Python calibration did in this process reach
    :data:`COMPILED_CALIBRATION_FROM`; the Python one otherwise (the same numbers bit for bit:
    compiling, seconds once per machine, would cost more than it saves on fewer records)."""
    if engine == "numpy" or not numba_available():
        return anomaly_calibration.calibrate
    from possibly.changepoint import anomaly_numba
    from possibly.compiled import has_cached_code

    if _python_calibrated[0] + n < COMPILED_CALIBRATION_FROM:
        if not _calibration_at_hand:  # asked once (it may read numba's index from disk)
            _calibration_at_hand.append(has_cached_code(anomaly_numba.calibrate))
        if not _calibration_at_hand[0]:
            _python_calibrated[0] += n
            return anomaly_calibration.calibrate
    _calibration_at_hand[:] = [True]  # compiled (or loaded) now
    return anomaly_numba.calibrate


class _DeferredCalibration:
    """The anomaly calibration of :meth:`ChangepointDetector.fit`'s records, run on first
    need: a read of ``result.anomaly`` (:meth:`reader`), or the detector needing its
    calibration state (:meth:`run`). Run once, under a lock (a result may be read from
    another thread than the detector's); an interrupted run leaves it pending."""

    def __init__(self, state: np.ndarray, values: np.ndarray, surprises: np.ndarray,
                 engine: str) -> None:
        self._lock = threading.RLock()
        self._inputs: tuple[np.ndarray, np.ndarray, np.ndarray, str] | None = (
            state, values, surprises, engine)
        self._done: tuple[np.ndarray, np.ndarray] | None = None

    def run(self) -> tuple[np.ndarray, np.ndarray]:
        """``(anomalies, state)``: each record's anomaly and the calibration after them."""
        with self._lock:
            if self._done is None:
                assert self._inputs is not None
                state, values, surprises, engine = self._inputs
                calibrate = _batch_calibration(engine, len(values))
                state = state.copy()  # untouched by an interrupted run
                out = np.empty(len(values))
                calibrate(state, values, surprises, out)
                self._done, self._inputs = (out, state), None
            return self._done

    def reader(self) -> Any:
        """A function of no argument returning a copy of the anomalies, the same copy at
        every call (a result's ``anomaly``, read once)."""
        kept: list[np.ndarray] = []

        def read() -> np.ndarray:
            with self._lock:
                if not kept:
                    kept.append(self.run()[0].copy())
            return kept[0]

        return read


class ChangepointDetector(SequentialEstimator):
    """Robust online change-point detector (paper §5.3), for any segment model.

    Two configurations matter:

    * the default, ``ChangepointDetector()``: constant level, linear and quadratic trend
      segments with unknown noise precision competing per segment
      (:func:`~possibly.changepoint.model_family`), integrated evidence, priors from robust
      summaries of the series, ``forgetting=1``, ``tol=0.4 · hazard``; a vector series
      (2-D, time first) gets :class:`~possibly.changepoint.MultivariateNormalSegments`. It is
      the most accurate on the synthetic suite (trends, variance changes, outliers;
      BENCHMARKS.md) and needs :meth:`fit` (or explicit priors) to set its priors;
    * the paper's model, ``ChangepointDetector(sigma=...)`` (or ``model="normal"`` with σ
      estimated from the series): piecewise-constant level with a known noise scale
      (:class:`~possibly.changepoint.NormalMean`), ``forgetting=0.9``, ``tol=1e-12``;
      the paper's §5.3 results, the fastest, and streams from the first value with a known σ.

    Parameters
    ----------
    model : None, "auto", "normal", SegmentModel or list (or tuple) of SegmentModel
        The segment model(s): ``"auto"`` is ``model_family()`` for a scalar series and
        ``MultivariateNormalSegments()`` for a vector one (``sigma`` must stay ``"auto"``);
        ``"normal"`` is ``NormalMean(sigma)``; None (default) is ``"auto"``, or ``"normal"``
        when ``sigma`` is given. A list proposes a new segment under each model at every step,
        and ``result.segment_models`` says which model each segment has.
        ``NormalMean(sigma)`` floors the evidence of gross outliers as the default models do;
        ``model=NormalMean(sigma, outliers="paper")`` is the paper's recursion exactly.
    sigma : "auto" or float
        Shorthand for ``model=NormalMean(sigma)`` (the paper's model): the noise scale within
        a segment, in ``[1e-100, 1e100]``. ``"auto"`` with ``model="normal"`` estimates it from
        the series given to :meth:`fit` (the value used is ``result.sigma``); ``"auto"``
        without ``model`` selects the default models. Leave it at ``"auto"`` with another
        ``model`` (``model="auto"`` with a number is refused: the default models have no σ).
    hazard : float
        Possibility of a change at each step, in (0, 1).
    forgetting : float, optional
        ``ρ`` in (0, 1]: every segment's possibility function is raised to this power per
        step (the normal mean's precision is multiplied by it), so the level is learnt from
        about ``1 / (1 − ρ)`` recent observations; 1 is the constant-parameter model. None
        (default): 1 when every model has an unknown noise precision (``PolynomialTrend``,
        ``NormalMeanVariance``, ``MultivariateNormalSegments``: the default models), else the
        paper's 0.9 (:func:`default_forgetting`). The value used is ``params_.forgetting``.
    robust : bool
        Discount observations by ``γ = c^(1/d)`` (True) or run the standard recursion (False).
    tau : float, optional
        Threshold variant: keep observations whole unless ``γ ≤ tau`` (robust only).
    tol : float, optional
        Relative possibility below which run hypotheses are dropped, in [0, hazard). None
        (default): ``0.4 · hazard`` when every model is a ``PolynomialTrend`` (the default
        scalar models: their cost per step would grow with the segment length), else 1e-12
        (:func:`default_tol`). The value used is ``params_.tol``.
    outlier_level : float, optional
        Discount below which an observation counts as discounted; default ``(4 hazard)^(1/d)``
        (consistency within a factor 4 of its floor ``hazard``; ``2 √hazard`` for ``d = 2``).
        Robust only.
    engine : {"auto", "numpy", "numba"}
        Inner loop; ``"auto"`` uses numba when it is installed and the models have one
        compiled kernel (:meth:`~possibly.changepoint.models.SegmentModel.compiled_kernel`:
        :class:`NormalMean`, bit-identical results; :class:`PolynomialTrend`, the same to
        rounding) that the compiled engine can run (scalar observations; a kernel
        ``indistinguishable`` when the model merges runs), else numpy. ``"numba"`` refuses
        other models with the reason. The first compiled fit on a machine compiles the loop
        (seconds, once: it is cached on disk) and the first of each process loads numba;
        ``"numpy"`` avoids both for a one-off short series, the result's hindsight outliers
        included (docs: Numerics, the one-time cost).
    history : bool
        Keep per-step outputs (about 50 bytes per step) so that :meth:`result` works after
        streaming; False streams in bounded memory (:attr:`changepoints` and each step's Info
        stay available).
    merge_tol : float
        Adjacent run hypotheses whose segment possibility functions agree within this relative
        tolerance are merged (the larger weight is kept), which bounds the cost per observation
        at any segment length with forgetting; 0 never merges. See
        :mod:`possibly.changepoint.recursion`.
    period : "auto", int or None
        The cycles of the series. ``"auto"`` (default): the periods are inferred
        (:func:`~possibly.changepoint.infer_period`, from at most the first 4096 values) from
        what the first :meth:`fit` or :meth:`extend` receives (its values and, for a pandas
        Series with a DatetimeIndex, its time stamps; 16 of the calendar's longest cycle when
        that is longer, :func:`~possibly.changepoint.warm_up_length`), and again from the
        values so far before the next record each time the stream has grown by a quarter,
        until it holds that many or :data:`REVISIT_LIMIT` (a warm-up too short for a weekly
        cycle): when they change, the detector becomes what :meth:`fit` of the
        stream so far gives, the outputs already returned staying as they were; with the
        default models, the accepted periods add the seasonal members
        (``model_family(period=...)``), and the shortest, rounded, of at most 10⁶ records is
        the anomaly signal's period (a longer one, as a day of millisecond data, only adds its
        seasonal member). A series without a strong
        cycle (most series: no period is accepted on noise, trends or level shifts) gets
        exactly the results of ``period=None``, and so does a vector series or a stream begun with
        :meth:`update` (no series to infer from: fit or extend a warm-up first to have its
        cycles); :meth:`reset` forgets the periods (the next fit or extend infers them
        again). A whole number in ``[2, 10⁶]`` (an int, or a float that is one, as ``24.0``;
        ``365.2425`` is refused), for scalar series: the length of a cycle in records (24 for
        hourly data with a daily cycle), used by the calibrated anomaly signal
        (``info.anomaly``, ``result.anomaly``) only: each record's surprise is then its
        deviation from the median of the same phase over the previous periods, measured
        against the mean of all earlier such deviations (give seasonal models with
        ``model=model_family(period=...)``). None: no cycle; the surprise is the segment
        model's, ``−log c_t`` (the paper's exact path, and no inference cost). The period
        used is :attr:`period_` (and ``result.period``), the periods :attr:`periods_`. See
        :mod:`possibly.changepoint.anomaly`.

    Notes
    -----
    Thread safety: one detector must not be used by several threads at once; concurrent
    ``fit``/``update`` calls raise :class:`possibly.sequential.ConcurrentUseError`, and so do
    ``state``, ``state_``, ``history_nbytes`` and pickling while another thread runs them. The
    pure :meth:`init`/:meth:`step` are safe from any thread. Numeric range: observations up to
    ``1e150`` in magnitude, σ in ``[1e-100, 1e100]``.

    Examples
    --------
    The default models on a trend with a jump: one change point, two linear-trend segments
    (the paper's level model, ``model="normal"``, cuts the trend into 9 steps):

    >>> import possibly as ps
    >>> rng = np.random.default_rng(0)
    >>> t = np.arange(200.0)
    >>> trend = np.where(t < 120, 0.05 * t, 0.05 * t + 4.0) + 0.3 * rng.normal(size=200)
    >>> res = ps.ChangepointDetector().fit(trend)
    >>> res.changepoints.tolist(), [res.params.models[k].degree for k in res.segment_models]
    ([120], [1, 1])

    The paper's model (piecewise-constant level, known noise scale):

    >>> y, cps, outliers = ps.datasets.piecewise_constant(300, n_changes=2, seed=3)
    >>> res = ps.ChangepointDetector(sigma=1.0, hazard=1e-3).fit(y)
    >>> res.changepoints.tolist(), cps.tolist()
    ([40, 235], [40, 235])
    >>> res.outliers.tolist(), np.flatnonzero(outliers).tolist()  # y[5] is a 3.5 σ noise value
    ([5, 7, 159, 223], [7, 159, 223])

    Online, river-style: each :meth:`update` says whether a change or an outlier was detected.

    >>> det = ps.ChangepointDetector(sigma=1.0, hazard=1e-3)
    >>> for t, x in enumerate(y[:60]):
    ...     info = det.update(x)
    ...     if info.change_detected:
    ...         print(f"t={t}: change at {t - info.map_run_length}")
    t=45: change at 40

    Counts with a change of rate and one gross outlier, with a gamma prior on the rate:

    >>> from possibly.changepoint import ConjugateModel
    >>> counts = np.r_[np.full(30, 4), np.full(30, 12)]
    >>> counts[10] = 40
    >>> model = ConjugateModel(ps.Gamma.uninformative(), ps.likelihood.poisson)
    >>> res = ps.ChangepointDetector(hazard=1e-3, model=model).fit(counts)
    >>> res.changepoints.tolist(), res.outliers.tolist()
    ([30], [10])
    """

    #: the compiled state of update() while streaming (CompiledStream), else None
    _stream: CompiledStream | None = None
    _prev_start = 0  # the MAP segment's start after the last streamed value
    _calibrators: Any = None
    #: fit's records awaiting the anomaly calibration (None: the calibration is current)
    _pending: _DeferredCalibration | None = None
    #: with period="auto", the values so far while the periods are still revisited (None:
    #: no longer), the record count at which they next are, and the sampling step the
    #: calendar's candidate periods come from (None: from the values)
    _early: Growable | None = None
    _revisit_at: int = 0
    _period_step: Any = None

    def __init__(self, model: (str | SegmentModel | list[SegmentModel]
                               | tuple[SegmentModel, ...] | None) = None, *,
                 sigma: float | str = "auto", hazard: float = 2.5e-3,
                 forgetting: float | None = None, robust: bool = True,
                 tau: float | None = None, tol: float | None = None,
                 outlier_level: float | None = None, engine: str = "auto",
                 history: bool = True, merge_tol: float = 1e-6,
                 period: int | str | None = "auto") -> None:
        self.model = model
        self.sigma = sigma
        self.hazard = hazard
        self.forgetting = forgetting
        self.robust = robust
        self.tau = tau
        self.tol = tol
        self.outlier_level = outlier_level
        self.engine = engine
        self.history = history
        self.merge_tol = merge_tol
        self.period = period
        self._configure()

    # -- parameters ----------------------------------------------------------------------------

    def _configure(self) -> None:
        """Validate the parameters (errors point at the call site) and reset."""
        self._set_models(self._build_models())
        check_bool("history", self.history)
        if not self._auto_period():
            if isinstance(self.period, str):
                raise ValueError(f"period must be None or a whole number of records in "
                                 f"[2, {anomaly_calibration.MAX_PERIOD}], or 'auto', got "
                                 f"{self.period!r}")
            check_period(self.period)
        self.reset()

    def _set_models(self, models: tuple[SegmentModel, ...]) -> None:
        """Use ``models``, with the defaults that depend on them (forgetting, tol, level).

        Nothing is changed unless every check passes."""
        hazard = real_scalar("hazard", self.hazard)
        forgetting = default_forgetting(models) if self.forgetting is None else self.forgetting
        tol = self.tol
        if tol is None:
            tol = default_tol(models, hazard) if 0.0 < hazard < 1.0 else 1e-12
            if 0.0 < hazard <= tol:  # the default tol: name hazard
                raise ValueError(f"hazard must be greater than tol = {tol:g} (pass a smaller "
                                 f"tol, e.g. tol=0, for such a hazard), got {hazard!r}")
        robust = check_bool("robust", self.robust)
        if not robust and self.tau is not None:
            raise ValueError(f"tau applies to the robust version only (robust=False discounts "
                             f"nothing): drop robust=False or tau, got tau={self.tau!r}")
        if not robust and self.outlier_level is not None:
            raise ValueError(f"outlier_level applies to the robust version only (robust=False "
                             f"discounts nothing, so it has no outliers): drop robust=False or "
                             f"outlier_level, got outlier_level={self.outlier_level!r}")
        base = ChangepointParams.make(
            None, self.hazard, forgetting, self.robust, self.tau, tol, models, self.merge_tol)
        if self.engine not in ("auto", "numpy", "numba"):
            raise ValueError(f"engine must be 'auto', 'numpy' or 'numba', got {self.engine!r}")
        reason = not_compiled_because(models) if self.engine == "numba" else None
        if reason is not None:
            raise ValueError(f"engine='numba' needs models with one compiled kernel (each "
                             f"model's compiled_kernel() is not None, all with the same "
                             f"functions: NormalMean, PolynomialTrend, or a model of your "
                             f"own), but {reason}; use engine='auto' or 'numpy' with these "
                             f"models")
        if self.engine == "numba" and not numba_available():
            raise ImportError("engine='numba' needs numba: pip install 'possibly[fast]'")
        level = self.outlier_level
        if level is None:  # γ = c^(1/d) at c = 4 · hazard
            level = (4.0 * float(self.hazard)) ** (1.0 / base.dim)
            if base.dim == 2.0:
                level = 2.0 * math.sqrt(self.hazard)  # the same value, as it always was
            level = min(level, 1.0)  # hazard > 1/4: every discounted observation counts
        level = float(check_unit_interval(
            "outlier_level", real_scalar("outlier_level", level), low_open=True,
            high_open=False))
        self._models, self._base_params, self._outlier_level = models, base, level
        # the models check a series as as_series does (finite or NaN, at most MAX_MAGNITUDE):
        # update() then checks a plain number without building an array
        self._plain_series = all(type(m).check_series in _SERIES_CHECKS for m in models)

    def _default_models(self) -> bool:
        """Whether the models are the default family (``model`` None or ``"auto"``,
        ``sigma="auto"``)."""
        return ((self.model is None or (isinstance(self.model, str) and self.model == "auto"))
                and isinstance(self.sigma, str) and self.sigma == "auto")

    def _build_models(self) -> tuple[SegmentModel, ...]:
        if self.model is None or isinstance(self.model, str):
            if self.model is not None and self.model not in ("auto", "normal"):
                raise ValueError(f"model must be 'auto', 'normal', a segment model or a list "
                                 f"of them, got {self.model!r}")
            if isinstance(self.sigma, str) and self.sigma != "auto":
                raise ValueError(f"sigma must be 'auto' or a positive number, got "
                                 f"{self.sigma!r}")
            if self.model == "auto" and not self._default_models():
                raise ValueError(f"sigma is the noise scale of model='normal'; model='auto' "
                                 f"estimates the noise of each segment: drop sigma or use "
                                 f"model='normal', got model='auto' and sigma={self.sigma!r}")
            if self._default_models():
                return tuple(model_family())
            return (NormalMean(self.sigma),)
        models = as_models(self.model)
        if not (isinstance(self.sigma, str) and self.sigma == "auto"):
            raise ValueError(f"sigma belongs to model='normal' (NormalMean); with model=... "
                             f"leave sigma at 'auto' (NormalMean(sigma) sets it), got "
                             f"{self.sigma!r}")
        return models

    def _engine(self) -> str:
        if shared_kernels(self._models) is None:
            return "numpy"
        if self.engine == "auto":
            return "numba" if numba_available() else "numpy"
        return self.engine

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor arguments (scikit-learn convention)."""
        names = list(inspect.signature(type(self).__init__).parameters)[1:]
        return {name: getattr(self, name) for name in names}

    def set_params(self, **params: Any) -> ChangepointDetector:
        """Set constructor arguments, validate them and reset (scikit-learn convention)."""
        valid = self.get_params()
        for name in params:
            if name not in valid:
                raise ValueError(f"unknown parameter {name!r}; valid: {', '.join(valid)}")
        old = {k: getattr(self, k) for k in params}
        for k, v in params.items():
            setattr(self, k, v)
        try:
            self._configure()
        except Exception:
            for k, v in old.items():
                setattr(self, k, v)
            raise
        return self

    def __repr__(self) -> str:
        defaults = {name: p.default for name, p in
                    inspect.signature(type(self).__init__).parameters.items() if name != "self"}
        shown = [f"{k}={v!r}" for k, v in self.get_params().items()
                 if not (type(v) is type(defaults[k]) and v == defaults[k])]
        return f"ChangepointDetector({', '.join(shown)})"

    def __setstate__(self, state: dict[str, Any]) -> None:
        if state.get("_calibration") is not None:  # the compiled step does not check bounds
            anomaly_calibration.check_state(state["_calibration"])
        super().__setstate__(state)

    def __getstate__(self) -> dict[str, Any]:
        lock = self._acquire()  # the stream's buffers are not read while update writes them
        try:
            self._flush()  # the streamed rows recorded
            self._settle()
            state = super().__getstate__()
            state.pop("_pending", None)
            state["_compiled"] = None  # compiled code: made again on first use after unpickling
            state["_calibrators"] = None
            # the compiled step's buffers as a RunState (unpickled, update packs them again)
            state["_state"], state["_stream"] = self._current_state(), None
            return state
        finally:
            lock.release()

    # -- state ---------------------------------------------------------------------------------

    def reset(self) -> ChangepointDetector:
        """Forget every observation (``sigma='auto'`` is estimated again by :meth:`fit`, and
        with ``period="auto"``, the periods and their seasonal models are forgotten: the next
        :meth:`fit` or :meth:`extend` infers them again)."""
        with self._exclusive():
            return self._forget()

    def _forget(self) -> ChangepointDetector:
        """:meth:`reset` for callers that hold the lock."""
        if getattr(self, "periods_", None) is not None and self._default_models():
            self._set_models(self._build_models())
        return self._reset()

    def _reset(self) -> ChangepointDetector:
        object.__setattr__(self, "_state", None)
        self.params_: ChangepointParams | None = None
        #: (the resolved models' compiled engine, or None for the numpy engine,) once asked
        self._compiled: tuple[CompiledModels | None] | None = None
        self.sigma_estimated_ = False
        self._trace = MapTrace()
        self._history: dict[str, Growable] | None = None
        #: per start, the hindsight log change possibility (kept with the history)
        self._peak: Growable | None = Growable(np.float64)
        self._index: Any = None
        self._stamps: list[Any] = []  # time stamps of the observations after fit's input
        self._step: tuple[Any] | None = None  # (the index's step,) once computed
        self._name: Any = None
        self._stream = None
        self._prev_start = 0
        #: the anomaly calibration's state (:mod:`possibly.changepoint.anomaly`), the
        #: anomalies of the streamed rows not yet recorded, and the calibration's functions
        #: the anomaly signal's period (None: no cycle) and the periods the models were given;
        #: with period="auto", set by the first fit or extend (None before) and revisited
        #: while the stream is short (_revisit_periods)
        self.period_: int | None = None if self._auto_period() else check_period(self.period)
        self.periods_: tuple[float, ...] | None = None
        self._calibration = new_calibration(self.period_)
        self._calibrators = None
        self._pending = None
        self._early = None
        return self

    def _settle(self) -> None:
        """The deferred calibration of fit's records run (if not yet), its anomalies written
        to the history and its state made the detector's (for callers that hold the lock)."""
        pending = self._pending
        if pending is None:
            return
        anomalies, state = pending.run()
        if self._history is not None:
            self._history["anomaly"].view()[:len(anomalies)] = anomalies
        self._calibration, self._pending = state.copy(), None

    def _defer_anomalies(self, arr: np.ndarray, log_consistency: np.ndarray) -> None:
        """The calibration of ``arr`` (fit's records, from the current calibration) left
        pending until first needed (:meth:`_settle`, or a read of ``result.anomaly``)."""
        values = np.where(np.isnan(arr.reshape(len(arr), -1)).any(axis=1), math.nan,
                          arr.reshape(len(arr), -1)[:, 0]).astype(np.float64)
        self._pending = _DeferredCalibration(
            self._calibration, values, -np.asarray(log_consistency, dtype=np.float64),
            self.engine)

    def _calibrate_one(self) -> Any:
        """The anomaly calibration's step, ``calibrate_one`` (compiled unless
        ``engine="numpy"`` or numba is missing: the compiled step for a state array and a
        float, as :meth:`update` passes them), asked once (not pickled); a batch's calibration
        is :func:`_batch_calibration`'s choice."""
        step = self._calibrators
        if step is None:
            if self.engine == "numpy" or not numba_available():
                step = anomaly_calibration.calibrate_one
            else:
                from possibly.changepoint import anomaly_numba

                step = anomaly_numba.calibrate_one_entry()
            self._calibrators = step
        return step

    def _anomalies(self, arr: np.ndarray, log_consistency: np.ndarray) -> np.ndarray:
        """The calibrated anomaly of each of ``arr`` (the recursion's ``log_consistency``),
        the calibration advanced only when every record is done (an interrupt changes
        nothing)."""
        self._settle()
        # the observation (NaN for a missing record) and the segment model's surprise
        values = np.where(np.isnan(arr.reshape(len(arr), -1)).any(axis=1), math.nan,
                          arr.reshape(len(arr), -1)[:, 0]).astype(np.float64)
        surprises = -np.asarray(log_consistency, dtype=np.float64)
        state = self._calibration.copy()
        out = np.empty(len(values))
        _batch_calibration(self.engine, len(values))(state, values, surprises, out)
        self._calibration = state
        return out

    @property
    def t(self) -> int:
        """Number of observations processed."""
        if self._stream is not None:
            return self._stream.t
        return 0 if self._state is None else self._state.t

    @property
    def state_(self) -> RunState:
        """The current run hypotheses (:class:`~possibly.changepoint.recursion.RunState`)."""
        lock = self._acquire()  # the stream's buffers are not read while update writes them
        try:
            return self._current_runs()
        finally:
            lock.release()

    @property
    def state(self) -> RunState | None:
        """The state after the observations so far (None before any)."""
        lock = self._acquire()
        try:
            return self._current_state()
        finally:
            lock.release()

    def _current_state(self) -> RunState | None:
        """:attr:`state`, for callers that hold the lock."""
        stream = self._stream  # streaming: a copy of the compiled step's runs
        return self._state if stream is None else stream.state()

    def _current_runs(self) -> RunState:
        """:attr:`state_`, for callers that hold the lock."""
        state = self._current_state()
        return self.init() if state is None else state

    @property
    def changepoints(self) -> np.ndarray:
        """Change points so far (integer positions; also with history=False)."""
        if self._stream is not None and self._stream.n:  # streamed rows to record first
            with self._exclusive():
                self._flush()
        return self._trace.changepoints()

    def init(self, batch_shape: tuple[int, ...] = ()) -> RunState:
        """The state before any observation (one series: ``batch_shape`` must be ``()``)."""
        if tuple(batch_shape) != ():
            raise ValueError(f"ChangepointDetector processes one series: batch_shape must be "
                             f"(), got {batch_shape!r}")
        return init(self._models)

    def _params(self, y: np.ndarray | None = None) -> ChangepointParams:
        if self.params_ is None:
            self.params_ = self._resolved_params(y)
            self.sigma_estimated_ = not all(m.resolved for m in self._models)
        return self.params_

    def _resolved_params(self, y: np.ndarray | None,
                         models: tuple[SegmentModel, ...] | None = None) -> ChangepointParams:
        """The parameters with ``models`` (default: the detector's) resolved from the checked
        series ``y`` (None: the models must need no data)."""
        models = self._models if models is None else models
        if not all(m.resolved for m in models):
            if y is None and self._default_models():
                raise ValueError(
                    "the default models set their priors from the whole series: call "
                    "fit(y) first; to stream, pass sigma=<float> (the paper's model) or "
                    "model=model_family(prior=automatic_prior(warm_up))")
            if y is None:
                raise ValueError("sigma='auto' needs the whole series: call fit(y) first, "
                                 "or construct the detector with sigma=<float> to stream")
            # the prior from the whole series computed once for the models that take it
            # (WholeSeriesPrior.resolve sets only it), not once per model
            takers = [not m.resolved and type(m).resolve is WholeSeriesPrior.resolve
                      for m in models]
            prior = automatic_prior(y) if sum(takers) > 1 else None
            # (each model its own copy, as resolve gives: a pickle shares no object)
            models = tuple(replace(cast(Any, m), prior=replace(prior))
                           if prior is not None and takes else m.resolve(y)
                           for m, takes in zip(models, takers, strict=True))
        return ChangepointParams(models, *(
            getattr(self._base_params, f) for f in
            ("hazard", "forgetting", "robust", "tau", "tol", "merge_tol")))

    def stream_params(self, warm_up: Any = None, prior: SegmentPrior | None = None
                      ) -> ChangepointParams:
        """The recursion's parameters of a new scalar stream with these settings.

        The models are resolved from ``warm_up`` as :meth:`fit` resolves them from its series
        (the default models' priors, ``sigma="auto"``), or get ``prior`` (a
        :class:`~possibly.changepoint.SegmentPrior` on ``y``, for the models whose
        ``takes_prior_on_y`` is true: :class:`~possibly.changepoint.PolynomialTrend` and
        :class:`~possibly.changepoint.SeasonalTrend`, the default and seasonal families; a
        :class:`~possibly.changepoint.LogTrend`, whose prior is on ``log y``, keeps its own,
        and without one is refused); with
        neither, the models must need no data (a given ``sigma``, or priors given to the
        models). The detector is not changed.

        Examples
        --------
        >>> from possibly.changepoint import SegmentPrior
        >>> det = ChangepointDetector()
        >>> prior = det.stream_params([1.0, 2.0, 3.0, 4.0, 100.0]).models[0].prior
        >>> prior.loc, prior.scale, prior.horizon
        (3.0, 1.4826, 5.0)
        >>> det.stream_params(prior=SegmentPrior(0.0, 2.0, 50.0)).models[2].prior.scale
        2.0
        >>> ChangepointDetector(sigma=2.0).stream_params().models
        (NormalMean(sigma=2.0),)
        """
        models = self._models
        if self._default_models():
            models = tuple(model_family())
        if prior is not None:
            if not isinstance(prior, SegmentPrior):
                raise ValueError(f"prior must be a SegmentPrior (see automatic_prior), got "
                                 f"{describe(prior)}")
            if not any(m.takes_prior_on_y for m in models):
                raise ValueError(f"prior was given (a SegmentPrior on y), but none of these "
                                 f"models takes one ({_model_names(models)}): drop prior")
            models = tuple(replace(cast(Any, m), prior=prior) if m.takes_prior_on_y else m
                           for m in models)
            unresolved = [m for m in models if not m.resolved]
            if warm_up is None and unresolved:
                log_y = (" (a LogTrend's prior is on log y: give it prior=automatic_prior("
                         "np.log(warm_up)) and reference_scale=automatic_prior(warm_up).scale)"
                         if any(m.name.startswith("log ") for m in unresolved) else "")
                raise ValueError(f"prior was given (a SegmentPrior on y), but these models "
                                 f"take none and set their settings from data: "
                                 f"{_model_names(unresolved)}{log_y}; give them their own "
                                 f"settings, or pass warm_up instead of prior")
        arr = None if warm_up is None else models[0].check_series(_series(warm_up))
        if arr is not None and all(type(m) is PolynomialTrend for m in models
                                   if not m.resolved):
            # what each model's resolve(arr) sets, computed once for all of them
            prior = automatic_prior(arr)
            models = tuple(replace(m, prior=prior)
                           if isinstance(m, PolynomialTrend) and not m.resolved else m
                           for m in models)
        return self._resolved_params(arr, models)

    @property
    def outlier_level_(self) -> float:
        """The discount below which an observation counts as an outlier: ``outlier_level``,
        or its default (see the class's parameters)."""
        return self._outlier_level

    def step(self, state: RunState, y: Any) -> tuple[RunState, ChangepointInfo]:
        """One observation from ``state``: ``(new_state, info)`` (pure; numpy engine)."""
        return step(state, y, self._params())

    def peek_anomaly(self, y: Any) -> float:
        """The calibrated anomaly that :meth:`update` would report for ``y`` (its
        ``info.anomaly``), without processing ``y``: the detector is unchanged (a scorer
        that must not learn, as river's ``score_one``). The same engine as :meth:`update`,
        run on a copy of the calibration and, without a period, of the run hypotheses.

        Examples
        --------
        >>> det = ChangepointDetector(sigma=1.0, hazard=0.01)
        >>> for x in [0.0, 0.3, -0.2, 0.1, -0.4, 0.2]:
        ...     _ = det.update(x)
        >>> peek = det.peek_anomaly(4.0)  # above the six earlier surprises: p = 1 / 7
        >>> peek == 1 - 3 / 7, det.t, det.update(4.0).anomaly == peek  # three p-values
        (True, 6, True)
        """
        lock = self._acquire()
        try:
            arr = self._checked_value(y)
            if np.isnan(arr).any():  # a missing record (anomaly_calibration: 0)
                return 0.0
            self._settle()
            surprise = math.nan  # not used with a period
            if state_period(self._calibration) is None:
                fresh = self.params_ is None
                try:
                    _, out = self._run(self._current_runs(), arr)
                finally:
                    if fresh:  # the parameters the run resolved are not kept: no change
                        self.params_, self.sigma_estimated_, self._compiled = None, False, None
                surprise = -float(out["log_consistency"][0])
            # update's step on a copy of the calibration (the same engine, the same numbers)
            return float(self._calibrate_one()(self._calibration.copy(),
                                               float(arr.ravel()[0]), surprise))
        finally:
            lock.release()

    # -- processing ----------------------------------------------------------------------------

    def _check(self, y: Any) -> np.ndarray:
        return self._models[0].check_series(y)

    def _select_models(self, y: Any) -> None:
        """With the default models, a vector series (2-D, time first) gets
        :class:`MultivariateNormalSegments` and a scalar one :func:`model_family`."""
        if self._default_models():
            vector = np.ndim(y) == 2
            models = (MultivariateNormalSegments(),) if vector else tuple(model_family())
            if models != self._models:
                self._set_models(models)

    def _compiled_models(self, params: ChangepointParams) -> CompiledModels | None:
        """The resolved models' compiled kernel (None: the numpy engine), asked once per fit
        or reset, not per streamed value."""
        if self._compiled is None:
            self._compiled = (compiled_models(params.models) if self._engine() == "numba"
                              else None,)
        return self._compiled[0]

    def _run(self, state: RunState, arr: np.ndarray, peak: np.ndarray | None = None
             ) -> tuple[RunState, dict[str, np.ndarray]]:
        """The recursion over ``arr`` from ``state``; ``peak[s]`` raised in place to the
        hindsight log change possibility of start ``s`` (None: not tracked)."""
        params = self._params()
        compiled = self._compiled_models(params)
        if compiled is not None:  # the resolved models' compiled kernel
            return _interruptible(functools.partial(run_compiled, compiled=compiled,
                                                    chunk=CHUNK, peak=peak), state, arr, params)
        return _run_numpy(state, arr, params, peak)

    def _peak_buffer(self, n: int, keep: bool) -> np.ndarray | None:
        """The hindsight log change possibility of every start so far and of the next ``n``
        (-inf), for :meth:`_run` to raise in place; None when it is not ``keep``-t."""
        peak = getattr(self, "_peak", None)  # absent from a detector pickled without it
        if not keep or peak is None or peak.n != self.t:
            return None
        if n == 1:
            peak.append(-math.inf)
        else:
            peak.extend(np.full(n, -math.inf))
        return peak.view()

    def _run_tracked(self, arr: np.ndarray, keep: bool | None = None, defer: bool = False
                     ) -> tuple[RunState, dict[str, np.ndarray]]:
        """:meth:`_run` from the current state, with the hindsight change possibility when
        ``keep`` (default: with the history); the new starts are dropped again when the run
        fails (no state was stored), and the older starts' values restored. ``out`` has the
        calibrated ``anomaly`` too, the calibration advanced with the run (``defer``: zeros,
        the calibration left pending, :meth:`_defer_anomalies`)."""
        t = self.t
        state = self._current_runs()
        peak = self._peak_buffer(len(arr), self.history if keep is None else keep)
        # only the starts of the kept hypotheses can be raised: their values are saved, for a
        # run interrupted between chunks (or steps) raises them by values never stored
        first = min((int(blk.start[0]) for blk in state.blocks if blk.start.size), default=t)
        saved = None if peak is None else peak[first:t].copy()
        try:
            state, out = self._run(state, arr, peak)
            if defer:
                self._defer_anomalies(arr, out["log_consistency"])
                out["anomaly"] = np.zeros(len(arr))
            else:
                out["anomaly"] = self._anomalies(arr, out["log_consistency"])
            return state, out
        except BaseException:
            if peak is not None and saved is not None and self._peak is not None:
                peak[first:t] = saved
                self._peak.n = t
            raise

    def _record(self, arr: np.ndarray, out: dict[str, np.ndarray], index: Any = None) -> None:
        self._trace.extend(out["start"], out["model"])
        if not self.history:
            return
        if self._history is None:
            self._history = {"y": Growable(np.float64, arr.shape[1:])}
            for name in OUTPUTS:
                v = out[name]
                dtype = (np.int8 if name == "model" else np.int32 if name == "n_active"
                         else v.dtype)
                self._history[name] = Growable(dtype, v.shape[1:])
            self._history["anomaly"] = Growable(np.float64)
        if len(arr) == 1:  # streaming: scalar appends
            self._history["y"].append(arr[0])
            for name in _RECORDED:
                self._history[name].append(out[name][0])
        else:
            self._history["y"].extend(arr)
            for name in _RECORDED:
                self._history[name].extend(out[name])
        if index is not None:
            self._index = index

    def _next_stamps(self, n: int, given: Any) -> list[Any]:
        """The time stamps of the next ``n`` observations: ``given`` (a sequence of ``n``, or
        None), else the index continued by its step; [] when the stream has no stamps.

        Checked before the observations are processed, so that a refusal changes nothing.
        """
        if not self.history:
            return []
        stamped = self._index is not None or bool(self._stamps)
        if given is not None:
            if not stamped and self.t > 0:
                raise ValueError("time: the observations so far have no time stamps (fit "
                                 "was given an array): pass fit a pandas Series, or stream "
                                 "with time stamps from the first observation")
            return self._checked_stamps(list(given))
        if not stamped:
            return []
        if self._step is None:  # once per fit: inferring a frequency reads the whole index
            self._step = (None if self._index is None else _index_step(self._index),)
        step = self._step[0]
        if step is None:
            raise ValueError("time must be given: the index of the series given to fit (or "
                             "the stamps given to update) has no regular step to continue "
                             "(a RangeIndex, an evenly spaced integer index or a DatetimeIndex "
                             "with a frequency has one): pass update(y, time=...) or extend "
                             "a pandas Series")
        last = self._stamps[-1] if self._stamps else self._index[-1]
        return [last + step * k for k in range(1, n + 1)]

    def _checked_stamps(self, given: list[Any]) -> list[Any]:
        """``given`` as stamps of the stream's kind, after the last one: a number is no stamp
        of a DatetimeIndex (pandas would read it as nanoseconds since 1970), and time does not
        run backwards."""
        import pandas as pd

        base = self._index
        last = self._stamps[-1] if self._stamps else (
            base[-1] if base is not None and len(base) else None)
        if base is not None and base.dtype.kind == "M":
            if any(isinstance(g, (int, float, np.number)) and not isinstance(g, bool)
                   for g in given):
                raise ValueError(f"time must be a date/time stamp like the series' index "
                                 f"({base.dtype}), got {describe(given[0])}")
            try:
                given = list(pd.Index(given, dtype=base.dtype))
            except (TypeError, ValueError) as exc:
                raise ValueError(f"time must be a date/time stamp like the series' index "
                                 f"({base.dtype}): {exc}") from None
        for g in given:
            if _missing_stamp(g):
                raise ValueError(f"time must be a time stamp, got {describe(g)} (a missing "
                                 f"stamp cannot be ordered; leave time=None to continue the "
                                 f"index)")
        try:
            backwards = any(b < a for a, b in zip([last, *given][:-1], given, strict=True)
                            if a is not None)
        except TypeError:
            raise ValueError(f"time must be a stamp of the same kind as the series' index, "
                             f"got {describe(given[0])} after {describe(last)}") from None
        if backwards:
            raise ValueError("time must not go back: each stamp is at or after the previous "
                             f"one (the last was {describe(last)})")
        return given

    def fit(self, y: Any) -> ChangepointResult:
        """Process a whole series from scratch and return the result.

        ``y`` is a 1-D array or pandas Series (its index is kept: ``result.index``); NaN marks
        a missing observation (prediction only), and so does a masked entry of a numpy masked
        array. A one-column DataFrame or ``(T, 1)`` array is that column's series. For vector
        observations (the default :class:`MultivariateNormalSegments`, or a
        :class:`ConjugateModel`), time is the first axis: ``(T, d)``; a ``(1, T)`` row is
        refused rather than taken as one ``T``-dimensional observation (``y.ravel()`` is the
        series). Complex values and dates/times are refused (the time stamps belong in the
        index of a pandas Series). The detector keeps its state, so
        :meth:`update` continues the same stream; with ``history=False`` it keeps no per-step
        outputs (the returned result has them).

        Time stamps after ``fit``: :meth:`update` (``time=``) and :meth:`extend` (a pandas
        Series) extend ``result.index``. Without a stamp, an index with a regular step
        continues by it (a RangeIndex or an evenly spaced integer index by its step, a
        DatetimeIndex by its frequency, given or inferred, a PeriodIndex by one period); any
        other index needs the stamp (a ValueError otherwise). A stream begun without stamps
        (``fit`` of an array) stays positional: ``result.index`` is None.
        """
        with self._exclusive():
            return self._fit(y)

    def _fit(self, y: Any, known: tuple[Any, tuple[float, ...] | None] | None = None
             ) -> ChangepointResult:
        """:meth:`fit` for callers that hold the lock (``known``: the sampling step and the
        periods of :meth:`_revisit_periods`, instead of inferring them)."""
        index = getattr(y, "index", None)  # a pandas Series' index (lists have a method)
        index = None if callable(index) else index
        name = getattr(y, "name", None)  # a pandas Series' name: the plots' y label
        y = _series(y)
        self._select_models(y)
        arr = self._check(y)
        self._check_period(arr)
        self._reset()
        self._infer_period(arr, index, known)
        self._name = name
        self._params(arr)
        state, out = self._run_tracked(arr, keep=True, defer=True)
        object.__setattr__(self, "_state", state)
        history, self.history = self.history, True
        try:
            self._record(arr, out, index)
            res = self._result()
        finally:
            self.history = history
        if not history:
            self._history, self._index, self._peak = None, None, None
        if self._early is not None:
            self._early.extend(arr)
        return res

    def extend(self, values: Any) -> dict[str, np.ndarray]:
        """Process several observations in order; returns their per-step outputs (arrays).

        A pandas Series extends ``result.index`` by its index (ignored when the stream has no
        time stamps); other values continue the index as :meth:`fit` says.
        """
        with self._exclusive():
            self._sync()
            index = getattr(values, "index", None)  # a pandas Series' (lists have a method)
            index = None if callable(index) else index
            arr = self._check(values)
            if index is not None and self._index is None and not self._stamps and self.t:
                index = None  # a positional stream stays positional
            if _default_positions(index):
                index = None  # pandas' default index: positions, no stamps
            stamps = self._next_stamps(len(arr), index)
            self._check_period(arr)
            self._revisit_if_due()  # after the checks: a refused call changes nothing
            if self.t == 0:
                self._infer_period(arr, index)
                try:
                    state, out = self._run_tracked(arr)
                except BaseException:
                    self._forget()  # the periods too: a stream begun later has none
                    raise
            else:
                state, out = self._run_tracked(arr)
            object.__setattr__(self, "_state", state)
            self._record(arr, out)
            self._stamps.extend(stamps)
            if self._early is not None:  # period="auto" early in the stream
                self._early.extend(arr)
            return out

    def update(self, y: Any, time: Any = None) -> ChangepointInfo:
        """Process one observation (NaN = missing); same results as :meth:`fit`.

        Returns the step's :class:`~possibly.changepoint.recursion.ChangepointInfo`, with the
        online flags ``change_detected`` and ``outlier_detected``. ``time``, the observation's
        time stamp, extends ``result.index`` (see :meth:`fit` for the rule without it).

        Examples
        --------
        >>> det = ChangepointDetector(sigma=1.0, hazard=0.01)
        >>> flags = [det.update(x).change_detected for x in [0.0, 0.2, -0.1, 6.0, 6.1, 5.9]]
        >>> flags, det.changepoints.tolist()
        ([False, False, False, False, True, False], [3])
        """
        # as _exclusive, without a context manager's cost (the lock taken here when it is free)
        lock = self.__dict__.get("_busy")
        if lock is None or not lock.acquire(False):
            lock = self._acquire()  # made, or ConcurrentUseError
        try:
            x = _plain_number(y) if self._plain_series else None
            arr = None
            if x is None:  # anything but a plain number: checked (and refused) as fit does
                arr = self._checked_value(y)
                if arr.shape == (1,):
                    x = float(arr[0])
            early = self._early
            if early is not None and early.n >= self._revisit_at:  # period="auto", early on
                self._next_stamps(1, None if time is None else [time])  # a refusal: no change
                self._revisit_periods()
                early = self._early
            stream = self._stream
            if stream is None and x is not None:
                stream = self._open_stream()
            if stream is None or x is None:
                return self._update_generic(arr if arr is not None else np.array([x]), time)
            stamps = None
            if time is not None or self._index is not None or self._stamps:
                stamps = self._next_stamps(1, None if time is None else [time])
            if stream.full:
                self._flush()
            # the step and the anomaly calibration in one compiled call
            _, start, model, mean, log_c, disc, n_active, log_cp, anomaly = stream.step(
                x, self._calibration)
            if stamps:
                self._stamps.extend(stamps)
            t, begin = stream.t - 1, start  # an int (as model and n_active)
            changed = begin > self._prev_start
            self._prev_start = begin
            # ChangepointInfo(...) with the fields written at once: a frozen dataclass's
            # __init__ sets each of the ten through a call of object.__setattr__ (and a dict
            # costs less than keywords)
            info = _new_object(ChangepointInfo)
            info.__dict__.update({
                "log_consistency": log_c, "discount": disc, "t": t,
                "map_run_length": t - begin, "map_model": model, "mean": mean,
                "n_active": n_active, "log_change_possibility": log_cp,
                "change_detected": changed,
                "outlier_detected": disc < self._outlier_level and not changed,
                "anomaly": anomaly})
            if early is not None:
                early.append(x)
            return info
        finally:
            lock.release()

    def _auto_period(self) -> bool:
        return isinstance(self.period, str) and self.period == "auto"

    def _infer_period(self, arr: np.ndarray, index: Any,
                      known: tuple[Any, tuple[float, ...] | None] | None = None) -> None:
        """With ``period="auto"``, before the first observation: the periods of ``arr`` (its
        time stamps ``index`` when they are dates; ``known``: the sampling step and periods
        found already) set :attr:`periods_`, :attr:`period_`, the anomaly calibration and,
        with the default models, the seasonal members; within the periods' warm-up, the
        values are kept for :meth:`_revisit_periods`."""
        if not self._auto_period() or self.t or arr.ndim != 1:
            return
        if known is None:
            stamps = index if index is not None and getattr(index, "dtype", None) is not None \
                and index.dtype.kind == "M" and len(index) == len(arr) else None
            periods = infer_period(arr, stamps)
            # the step the calendar's candidates came from, for the revisits (which may have
            # no stamps: a detector with history=False keeps none)
            step = None if stamps is None or len(stamps) < 2 else np.timedelta64(
                round(step_seconds(stamps[:WARM_UP + 1]) * 1e9), "ns")
        else:
            step, periods = known
        horizon = _revisit_horizon(step)
        self._period_step = step
        self._early = Growable(np.float64) if len(arr) < horizon else None
        self._revisit_at = _next_revisit(len(arr), horizon)
        self.periods_ = periods
        # the shortest the anomaly signal's state can hold (a day of millisecond data is
        # longer: the seasonal models take it, the anomaly signal goes without a cycle)
        self.period_ = next((int(round(p)) for p in periods or ()
                             if round(p) <= anomaly_calibration.MAX_PERIOD), None)
        self._calibration = new_calibration(self.period_)
        if periods is not None and self._default_models():
            self._set_models(tuple(seasonal_family(period=periods)))

    def _revisit_if_due(self) -> None:
        early = self._early
        if early is not None and early.n >= self._revisit_at:
            self._revisit_periods()

    def _revisit_periods(self) -> None:
        """With ``period="auto"``, before the first record after the stream has grown by a
        quarter since its periods were last inferred (within their warm-up,
        :func:`warm_up_length`): the periods of the values so far; when they differ, the
        detector becomes what :meth:`fit` of the stream so far gives with them (the outputs
        already returned stay as they were). An interrupt leaves the detector as it was."""
        early = cast(Growable, self._early)
        values = early.view()
        horizon = _revisit_horizon(self._period_step)
        periods = infer_period(values, self._period_step)
        if periods == self.periods_:
            if len(values) >= horizon:
                self._early = None  # longer series have the periods of this warm-up
            else:
                self._revisit_at = _next_revisit(len(values), horizon)
            return
        self._sync()
        index = _stamped_index(self._index, self._stamps) if self.history else None
        if self._step is None and self._index is not None:
            # the step of fit's index (an index joined with later stamps has no frequency)
            self._step = (_index_step(self._index),)
        y: Any = values.copy()
        if index is not None and len(index) == len(y):
            import pandas as pd

            y = pd.Series(y, index=index, name=self._name)
        # fitted apart and then taken whole, the lock held throughout
        fresh = type(self)(**self.get_params())
        fresh._fit(y, (self._period_step, periods))
        fresh._name, fresh._step = self._name, self._step
        taken = dict(fresh.__dict__)
        taken.pop("_busy", None)
        lock = self.__dict__.get("_busy")
        if lock is not None:
            taken["_busy"] = lock
        self.__dict__.update(taken)
        for name in [k for k in self.__dict__ if k not in taken]:
            del self.__dict__[name]

    def _check_period(self, arr: np.ndarray) -> None:
        if self.period is not None and not self._auto_period() and arr.ndim != 1:
            raise ValueError(f"period applies to a scalar series (the cycle of one value per "
                             f"record), got observations of shape {arr.shape[1:]}: use "
                             f"period=None")

    def _checked_value(self, y: Any) -> np.ndarray:
        """One observation as an array of one row, checked as :meth:`fit` checks a series."""
        what = "one observation (a number, NaN for a missing value)"
        refuse_non_numbers("y", y, what)
        single = as_numbers("y", y, what=what)  # complex values, dates: refused as such
        try:
            return self._check(single[None])
        except (TypeError, ValueError):
            raise ValueError(f"y must be {what}, got {describe(y)}") from None

    def _update_generic(self, arr: np.ndarray, time: Any) -> ChangepointInfo:
        """:meth:`update` of a checked observation by the engines of :meth:`fit` (the numpy
        engine, a vector observation)."""
        self._sync()
        prev = int(self._trace.start.view()[-1]) if self._trace.start.n else 0
        stamps = self._next_stamps(1, None if time is None else [time])
        self._check_period(arr)
        state, out = self._run_tracked(arr)
        object.__setattr__(self, "_state", state)
        self._record(arr, out)
        self._stamps.extend(stamps)
        if self._early is not None:
            self._early.extend(arr)
        t = state.t - 1
        start = int(out["start"][0])
        mean = out["mean"][0]
        changed = start > prev
        disc = float(out["discount"][0])
        return ChangepointInfo(
            float(out["log_consistency"][0]), disc, t=t, map_run_length=t - start,
            map_model=int(out["model"][0]),
            mean=float(mean) if np.ndim(mean) == 0 else mean,
            n_active=int(out["n_active"][0]),
            log_change_possibility=float(out["log_change_possibility"][0]),
            change_detected=changed,
            outlier_detected=bool(disc < self._outlier_level) and not changed,
            anomaly=float(out["anomaly"][0]))

    def _open_stream(self) -> CompiledStream | None:
        """The compiled state of :meth:`update` from the current state, or None where the
        compiled engine does not run these models (or does not write every output)."""
        params = self._params()
        compiled = self._compiled_models(params)
        if compiled is None or not set(OUTPUTS) <= set(STEP_COLUMNS):
            return None
        self._settle()
        self._calibrate_one()
        from possibly.changepoint import anomaly_numba  # numba runs the compiled models

        self._stream = CompiledStream(compiled, self._current_runs(), params,
                                      calibrate=anomaly_numba.calibrate_inline)
        self._prev_start = int(self._trace.start.last()) if self._trace.start.n else 0
        self._lend_peaks(self._stream)
        return self._stream

    def _flush(self) -> None:
        """Record the rows streamed since the last flush (history and MAP trace)."""
        stream = self._stream
        if stream is None or stream.n == 0:
            return
        rows = stream.drain()
        out = {name: rows[:, STEP_COLUMNS.index(name)] for name in OUTPUTS}
        for name in ("start", "model", "n_active"):
            out[name] = out[name].astype(np.int64)
        out["anomaly"] = rows[:, STREAM_COLUMNS.index("anomaly")]
        self._record(rows[:, 0], out)
        self._lend_peaks(stream)

    def _lend_peaks(self, stream: CompiledStream) -> None:
        """Count the starts ``stream`` has set in the hindsight buffer (:attr:`_peak`), and
        lend it the buffer with room for its next block of rows, when the history keeps it
        (as :meth:`_peak_buffer`)."""
        peak = getattr(self, "_peak", None)
        if peak is not None and stream.peak.size:  # lent before: its starts are set
            peak.n = stream.t
        if not self.history or peak is None or peak.n != stream.t:
            stream.peak = _NO_PEAK
            return
        stream.peak = peak.reserve(stream.t + len(stream.rows))

    def _sync(self) -> None:
        """Leave streaming: the rows recorded, the compiled state back to a RunState."""
        stream = self._stream
        if stream is None:
            return
        self._flush()
        object.__setattr__(self, "_state", stream.state())
        self._stream = None

    def result(self) -> ChangepointResult:
        """Everything processed since the last :meth:`fit` or :meth:`reset` (needs history)."""
        with self._exclusive():
            if not self.history and self.t > 0:
                raise ValueError("result() needs history=True (this detector streams in "
                                 "bounded memory: use .changepoints or each update's Info)")
            return self._result()

    def _result(self) -> ChangepointResult:
        self._flush()
        if self.t == 0 or self._history is None:
            raise ValueError("no observation processed yet: call fit(y) or update(y)")
        h = {k: g.view().copy() for k, g in self._history.items()}
        t = np.arange(len(h["y"]))
        index = _stamped_index(self._index, self._stamps)
        if index is not None and len(index) != len(t):
            index = None
        peak = getattr(self, "_peak", None)
        hindsight = peak.view().copy() if peak is not None and peak.n == len(t) else None
        anomaly: Any = h.get("anomaly")
        if anomaly is not None and len(anomaly) != len(t):
            anomaly = None
        elif self._pending is not None:  # fit's records only: calibrated when read
            anomaly = self._pending.reader()
        return ChangepointResult(
            h["y"], t - h["start"], h["model"].astype(np.int64), h["mean"],
            h["log_consistency"], h["discount"], h["n_active"].astype(np.int64),
            h["log_change_possibility"], params=self._params(),
            sigma_estimated=self.sigma_estimated_, outlier_level=self._outlier_level,
            index=index, name=self._name, log_change_possibility=hindsight,
            anomaly=anomaly, period=self.period_, engine=self.engine)

    def history_nbytes(self) -> int:
        """Bytes held for the per-step history and the MAP trace."""
        lock = self._acquire()
        try:
            self._flush()
            hist = 0 if self._history is None else sum(g.data.nbytes
                                                       for g in self._history.values())
            peak = getattr(self, "_peak", None)
            hist += 0 if peak is None else peak.data.nbytes
            return hist + self._trace.nbytes()
        finally:
            lock.release()


_new_object = object.__new__
_FLOAT64 = np.float64
#: the per-step outputs the history keeps
_RECORDED = (*OUTPUTS, "anomaly")
#: the hindsight buffer of a stream that does not keep it
_NO_PEAK = np.empty(0)

#: the series checks of the models that take plain numbers (as_series)
_SERIES_CHECKS = (NormalMean.check_series, PolynomialTrend.check_series)


def _plain_number(y: Any) -> float | None:
    """``y`` as a float when it is a plain finite (at most MAX_MAGNITUDE) or NaN number,
    else None (to be checked the long way)."""
    kind = type(y)
    if kind is float or kind is _FLOAT64 or (kind is int and -2**53 <= y <= 2**53):
        x = float(y)
        if -MAX_MAGNITUDE <= x <= MAX_MAGNITUDE or x != x:
            return x
    return None


def _model_names(models: Any) -> str:
    """The models for a message: ``"LogTrend(log level), NormalMean"``."""
    return ", ".join(type(m).__name__ + ("" if m.name == type(m).__name__ else f"({m.name})")
                     for m in models)


def _series(y: Any) -> np.ndarray:
    """The series given to :meth:`ChangepointDetector.fit` as floats: one column squeezed,
    a ``(1, T)`` row refused (it would be one ``T``-dimensional observation)."""
    arr = as_numbers("y", y)
    if arr.ndim == 2 and arr.shape[1] == 1:  # a one-column DataFrame or (T, 1) array
        return arr[:, 0]
    if arr.ndim == 2 and arr.shape[0] == 1 and arr.shape[1] > 1:
        raise ValueError(f"y has shape {arr.shape}: one row, which would be a single "
                         f"{arr.shape[1]}-dimensional observation; a series of "
                         f"{arr.shape[1]} values is 1-D (pass y.ravel()), and a vector series "
                         "has time first, shape (T, d) (pass y.T)")
    return arr
