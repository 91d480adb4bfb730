"""A bank of change-point detectors: many independent streams, one value each per call.

Each stream of a :class:`DetectorBank` is a :class:`~possibly.ChangepointDetector` with the
bank's settings fed by :meth:`~possibly.ChangepointDetector.update`, and gets its numbers bit
for bit (with the same engine). With the compiled engine, every stream keeps its run
hypotheses in pools shared by the bank (each stream at its own offset, with its own capacity,
doubled when full), and :meth:`DetectorBank.update_many` advances all the streams it is given
in one compiled call (:func:`~possibly.changepoint.compiled_engine.step_streams`): a fleet of
metrics pays the arithmetic of the recursion, not a Python call per stream. Each stream's
calibrated anomaly signal (:mod:`possibly.changepoint.anomaly`) is advanced in the same loop,
by a per-stream hook after the recursion.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from possibly.changepoint import anomaly as calibration
from possibly.changepoint.compiled_engine import (
    BANK_COLUMNS,
    INT_HEAD,
    CompiledModels,
    compiled_models,
    compiled_streams,
    packed_settings,
    scalars,
    without_refcounts,
)
from possibly.changepoint.detector import ChangepointDetector, numba_available
from possibly.changepoint.models.segment_model import MAX_MAGNITUDE
from possibly.changepoint.models.trend import SegmentPrior
from possibly.changepoint.recursion import (
    ChangepointParams,
    Growable,
    MapTrace,
    RunBlock,
    RunState,
    init,
    step,
)
from possibly.validation import as_numbers, check_bool, describe

__all__ = ["BankInfo", "DetectorBank"]

#: runs per model a new stream has room for (as the detector's compiled stream)
FIRST_CAPACITY = 16
#: the columns of :data:`BANK_COLUMNS` by name
COLUMN = {name: j for j, name in enumerate(BANK_COLUMNS)}


@dataclass(frozen=True)
class BankInfo:
    """What one :meth:`DetectorBank.update_many` call did: one entry per id given, in the
    order given (the fields of :class:`~possibly.changepoint.ChangepointInfo`).

    Attributes
    ----------
    t : ndarray of int
        Index of the observation in its stream.
    log_consistency, discount : ndarray of float
        The observation's log consistency and discount (NaN for a missing value).
    change_detected, outlier_detected : ndarray of bool
        The online flags of :meth:`~possibly.ChangepointDetector.update`.
    map_run_length, map_model : ndarray of int
        Run length and model index of the MAP hypothesis after the update.
    mean : ndarray of float
        E* of the MAP segment's parameter (NaN before any observation of the segment).
    n_active : ndarray of int
        Number of kept hypotheses.
    log_change_possibility : ndarray of float
        Log possibility that a segment starts at this observation.
    anomaly : ndarray of float
        The calibrated anomaly signal in ``[0, 1]`` (0 for a missing value): the detector's
        ``info.anomaly`` with the stream's period.
    """

    t: np.ndarray
    log_consistency: np.ndarray
    discount: np.ndarray
    change_detected: np.ndarray
    outlier_detected: np.ndarray
    map_run_length: np.ndarray
    map_model: np.ndarray
    mean: np.ndarray
    n_active: np.ndarray
    log_change_possibility: np.ndarray
    anomaly: np.ndarray

    def __len__(self) -> int:
        return len(self.t)


class DetectorBank:
    """Many independent change-point streams, advanced together by :meth:`update_many`.

    Every stream is what a :class:`~possibly.ChangepointDetector` with the same settings
    gives through :meth:`~possibly.ChangepointDetector.update` (after :meth:`fit` of its
    warm-up when it has one): the same log consistency, discount, flags, MAP run length and
    change points, bit for bit with the same engine. Streams are named by ids, any hashable
    labels (strings, integers).

    Parameters
    ----------
    model, sigma, hazard, forgetting, robust, tau, tol, outlier_level, engine, merge_tol
        As :class:`~possibly.ChangepointDetector` (scalar streams only). The default models
        set their priors from data: give each stream a warm-up or a prior (:meth:`add`);
        models that need no data (``sigma=1.0``, or priors given to the models) start a
        stream at the first value of a new id.
    period : int, optional
        The cycle, in records, of the calibrated anomaly signal (``BankInfo.anomaly``) of
        every stream, as the detector's ``period`` (None: no cycle); :meth:`add` sets one per
        stream.

    Notes
    -----
    ``engine="auto"`` uses the compiled engine when numba is installed and the models have a
    compiled kernel (as the detector); the numpy engine steps each stream in Python (the same
    numbers as the detector's numpy engine). Memory of the compiled engine: each stream has
    room for 16 run hypotheses per model (144 bytes each with the default models: about 6.9 kB
    per stream), doubled when it needs more, in pools that grow by doubling; plus the MAP
    trace (four integers per change of a stream's MAP segment or model). Every stream also
    keeps the calibration of its anomaly signal: the last ``WINDOW = 2000`` surprises and
    as many sums of the last ten records' log p-values and, with a period ``P``, the last
    ``7 P`` values (32.8 kB without a period, 34.1 kB with ``P = 24``; a bank's rows have the
    size of its longest period). One bank must not be used by several threads at once (a
    :class:`RuntimeError` says so).

    Examples
    --------
    Three streams with the default models, their priors from a warm-up of 50 values each
    (processed as :meth:`~possibly.ChangepointDetector.fit` would), then a level shift on
    stream ``"b"``:

    >>> import numpy as np
    >>> from possibly.changepoint import DetectorBank
    >>> rng = np.random.default_rng(1)
    >>> bank = DetectorBank()
    >>> bank.add(["a", "b", "c"], warm_up=rng.normal(size=(3, 50)))
    >>> for t in range(30):
    ...     info = bank.update_many(["a", "b", "c"], rng.normal(size=3) + [0.0, 8.0, 0.0])
    ...     if info.change_detected.any():
    ...         print(t, info.change_detected.tolist())
    1 [False, True, False]
    >>> bank.changepoints("b").tolist(), bank.changepoints("a").tolist()
    ([50], [])

    Each stream's calibrated anomaly signal, the detector's ``info.anomaly``: one minus a
    p-value of the record against the stream's own past (the rank of its surprise, extrapolated
    beyond the largest), so that one threshold means the same false-alarm rate on every
    stream:

    >>> info = bank.update_many(["a", "b", "c"], [0.1, 8.2, 9.0])  # "c" jumps
    >>> (info.anomaly > 0.95).tolist()
    [False, False, True]

    Ids in any order, any subset per call; models that need no data create a stream at its
    first value (here the paper's model with σ = 1):

    >>> bank = DetectorBank(sigma=1.0, hazard=0.01)
    >>> info = bank.update_many([7, 3], [0.1, 5.0])
    >>> info = bank.update_many([3], [5.2])
    >>> len(bank), bank.t(3), bank.t(7)
    (2, 2, 1)
    """

    def __init__(self, model: Any = None, *, sigma: float | str = "auto",
                 hazard: float = 2.5e-3, forgetting: float | None = None, robust: bool = True,
                 tau: float | None = None, tol: float | None = None,
                 outlier_level: float | None = None, engine: str = "auto",
                 merge_tol: float = 1e-6, parallel: bool = False,
                 period: int | None = None) -> None:
        # the detector checks the settings and resolves their defaults
        self._detector = ChangepointDetector(
            model, sigma=sigma, hazard=hazard, forgetting=forgetting, robust=robust, tau=tau,
            tol=tol, outlier_level=outlier_level, engine=engine, history=False,
            merge_tol=merge_tol)
        self.engine = engine
        self.parallel = check_bool("parallel", parallel)
        self.period = calibration.check_period(period)
        self._lock = threading.Lock()
        self._clear()

    def _clear(self) -> None:
        self._row: dict[Hashable, int] = {}
        self._ids: list[Hashable] = []
        #: each stream's parameters (its resolved models)
        self._params: list[ChangepointParams] = []
        self._compiled: CompiledModels | None = None
        self._numba: bool | None = None  # the engine, decided at the first stream
        self._driver: Any = None
        #: per stream: the MAP start and model after its last step (0 and -1 before any)
        self._last = np.zeros((0, 2), np.int64)
        #: the numpy engine: each stream's RunState
        self._states: list[RunState] = []
        #: the compiled engine: each stream's ints (step_kernels), scalars, settings, offset
        #: into the pools of runs
        self._ints = np.zeros((0, 0), np.int64)
        self._scal = np.zeros((0, 0))
        self._settings = np.zeros((0, 0, 0))
        self._offsets = np.zeros(0, np.int64)
        self._start = np.zeros(0, np.int64)
        self._log_w = np.zeros(0)
        self._runs = np.zeros((0, 1))
        self._used = 0  # pool entries in use (the regions of streams, and garbage)
        self._garbage = 0  # pool entries left behind by streams that grew
        #: each stream's anomaly calibration (:mod:`possibly.changepoint.anomaly`), one row
        #: per stream, as wide as the largest (the per-stream hook's state in the compiled loop)
        self._post = np.zeros((0, 0))
        #: every stream's MAP trace events: (stream, time, start, model)
        self._events = tuple(Growable(np.int64) for _ in range(4))
        self._grouped: tuple[int, np.ndarray, np.ndarray] | None = None
        #: the last call's ids (a copy), their types and rows (:meth:`_repeated_rows`)
        self._last_ids: tuple[Any, Any, np.ndarray] | None = None

    # -- streams ---------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, stream_id: Any) -> bool:
        try:
            return stream_id in self._row
        except TypeError:
            return False

    @property
    def ids(self) -> list[Hashable]:
        """The ids of the streams, in the order they were created."""
        return list(self._ids)

    def add(self, ids: Any, warm_up: Any = None, prior: Any = None,
            period: Any = None) -> None:
        """Create streams.

        Parameters
        ----------
        ids : sequence of hashable
            New ids (distinct, none already in the bank).
        warm_up : array_like, optional
            One series per id: an array of shape ``(len(ids), n)`` or a list of 1-D series
            (lengths may differ; NaN = missing). Each stream's models are resolved from its
            series as :meth:`~possibly.ChangepointDetector.fit` resolves them (the default
            models' priors: :func:`~possibly.changepoint.automatic_prior`), and the series
            is processed: the stream continues as a detector after ``fit(warm_up[i])``.
        prior : SegmentPrior or sequence of SegmentPrior, optional
            The prior of the models that take one (the default models), for every stream or
            one per id; nothing is processed. Not with ``warm_up``.
        period : int or sequence of (int or None), optional
            The cycle, in records, of the streams' calibrated anomaly signal: one for every
            new stream, or one per id (None in the sequence: no cycle). None (default): the
            bank's ``period``. A warm-up calibrates the signal as ``fit`` does.

        Notes
        -----
        Without either, the models must need no data (``sigma=1.0``, or priors given to the
        models); such streams are also created by :meth:`update_many` at their first value.

        Examples
        --------
        >>> import numpy as np
        >>> from possibly.changepoint import DetectorBank, SegmentPrior
        >>> bank = DetectorBank()
        >>> bank.add(range(1000), warm_up=np.random.default_rng(0).normal(size=(1000, 100)))
        >>> bank.add(["x"], prior=SegmentPrior(loc=20.0, scale=2.0, horizon=100.0))
        >>> len(bank), bank.t(0), bank.t("x")
        (1001, 100, 0)
        """
        with self._exclusive():
            ids = self._new_ids(ids)
            if warm_up is not None and prior is not None:
                raise ValueError("give warm_up or prior, not both (a warm-up sets the prior)")
            periods = self._periods(period, len(ids))
            if warm_up is not None:
                series = self._warm_up_series(warm_up, len(ids))
                params = [self._stream_params(i, w, None) for i, w in zip(ids, series,
                                                                           strict=True)]
            else:
                priors = self._priors(prior, len(ids))
                params = [self._stream_params(i, None, p) for i, p in zip(ids, priors,
                                                                          strict=True)]
            rows = self._create(ids, params, periods)
            if warm_up is not None:
                self._process_warm_up(rows, series)

    def _new_ids(self, ids: Any) -> list[Hashable]:
        ids, distinct = self._id_list(ids)
        if distinct != len(ids):
            raise ValueError("ids must be distinct (one stream each)")
        known = [i for i in ids if i in self._row]
        if known:
            raise ValueError(f"ids must be new: {_shown(known)} already in the bank")
        return ids

    @staticmethod
    def _id_list(ids: Any) -> tuple[list[Hashable], int]:
        """``ids`` as a list of hashable labels, and the number of distinct ones."""
        if isinstance(ids, (str, bytes)) or not hasattr(ids, "__iter__"):
            raise ValueError(f"ids must be a sequence of hashable labels (strings, integers), "
                             f"one per stream, got {describe(ids)}")
        out = ids.tolist() if isinstance(ids, np.ndarray) else list(ids)
        try:
            distinct = len(set(out))  # hashes every label
        except TypeError:
            for i in out:
                try:
                    hash(i)
                except TypeError:
                    raise ValueError(f"ids must be hashable labels (strings, integers), got "
                                     f"{describe(i)}") from None
            raise
        return out, distinct

    @staticmethod
    def _warm_up_series(warm_up: Any, n: int) -> list[Any]:
        if isinstance(warm_up, np.ndarray) and warm_up.ndim == 2:
            series = list(warm_up)
        elif isinstance(warm_up, (list, tuple)):
            series = list(warm_up)
        else:
            raise ValueError(f"warm_up must be an array of shape (len(ids), n) or a list of "
                             f"1-D series, one per id, got {describe(warm_up)}")
        if len(series) != n:
            raise ValueError(f"warm_up must have one series per id ({n}), got {len(series)}")
        return series

    @staticmethod
    def _priors(prior: Any, n: int) -> list[SegmentPrior | None]:
        if prior is None or isinstance(prior, SegmentPrior):
            return [prior] * n
        if isinstance(prior, (str, bytes)) or not hasattr(prior, "__len__"):
            raise ValueError(f"prior must be a SegmentPrior or a sequence of them (one per "
                             f"id), got {describe(prior)}")
        if len(prior) != n:
            raise ValueError(f"prior must have one SegmentPrior per id ({n}), got "
                             f"{len(prior)}")
        return list(prior)

    def _periods(self, period: Any, n: int) -> list[int | None]:
        """The period of each of ``n`` new streams (``period`` checked)."""
        if period is None:
            return [self.period] * n
        if isinstance(period, (str, bytes)) or not hasattr(period, "__len__"):
            return [calibration.check_period(period)] * n
        if len(period) != n:
            raise ValueError(f"period must be one period (or None) per id ({n}), got "
                             f"{len(period)}")
        return [calibration.check_period(p) for p in period]

    def _stream_params(self, stream_id: Hashable, warm_up: Any,
                       prior: SegmentPrior | None) -> ChangepointParams:
        try:
            params = self._detector.stream_params(warm_up, prior)
        except ValueError as exc:
            if warm_up is None and prior is None and "fit" in str(exc):
                raise ValueError(
                    f"stream {stream_id!r} needs a warm-up or a prior: these models set "
                    f"their priors (or σ) from data: add(ids, warm_up=...) or add(ids, "
                    f"prior=...) first") from None
            if warm_up is not None:
                raise ValueError(f"warm_up of stream {stream_id!r}: {exc}") from None
            raise
        if any(m.event_ndim != 0 for m in params.models):
            raise ValueError("DetectorBank streams scalar values: the models must observe "
                             "scalars (event_ndim == 0)")
        return params

    def _create(self, ids: list[Hashable], params: list[ChangepointParams],
                periods: list[int | None]) -> np.ndarray:
        """New streams (their state before any observation, with the anomaly calibration of
        ``periods``); their rows."""
        if not ids:
            return np.zeros(0, np.int64)
        self._last_ids = None  # the rows of known ids do not change: kept safe all the same
        if self._numba is None:
            self._choose_engine(params[0])
        first = len(self._ids)
        rows = np.arange(first, first + len(ids))
        self._last = np.concatenate([self._last, np.tile([0, -1], (len(ids), 1))])
        if self._numba:
            self._create_compiled(params)
        else:
            self._states.extend(init(p) for p in params)
        self._add_calibrations(periods)
        for i, r in zip(ids, rows.tolist(), strict=True):
            self._row[i] = r
        self._ids.extend(ids)
        self._params.extend(params)
        return rows

    def _choose_engine(self, params: ChangepointParams) -> None:
        compiled = compiled_models(params.models) if numba_available() else None
        use = compiled is not None and self.engine != "numpy"
        if self.engine == "numba" and not use:  # pragma: no cover - the detector refuses first
            raise ValueError("engine='numba' needs numba and models with a compiled kernel")
        self._numba, self._compiled = use, compiled if use else None
        if compiled is not None and use:
            n_models = len(compiled.kernels)
            self._ints = np.zeros((0, INT_HEAD + 2 * n_models), np.int64)
            self._scal = np.zeros((0, scalars(params, compiled).size))
            self._settings = np.zeros((0, n_models, compiled.settings.shape[1]))
            self._runs = np.zeros((0, compiled.kernels[0].functions.width))

    def _create_compiled(self, params: list[ChangepointParams]) -> None:
        compiled = self._compiled
        assert compiled is not None
        n_models, width = self._settings.shape[1:]
        functions = compiled.kernels[0].functions
        settings = np.empty((len(params), n_models, width))
        done: dict[int, np.ndarray] = {}  # streams that share their models share settings
        for s, p in enumerate(params):
            key = id(p.models)
            if key not in done:
                kernels = [m.compiled_kernel() for m in p.models]
                if any(k is None or k.functions != functions or k.params.size > width
                       for k in kernels):
                    raise ValueError("every stream's models must have the compiled kernel of "
                                     "the bank's first stream")
                done[key] = packed_settings(kernels, width)  # type: ignore[arg-type]
            settings[s] = done[key]
        ints = np.zeros((len(params), self._ints.shape[1]), np.int64)
        ints[:, 1] = FIRST_CAPACITY
        scal = np.stack([scalars(p, compiled) for p in params])
        first = self._reserve(len(params) * n_models * FIRST_CAPACITY)
        offsets = first + n_models * FIRST_CAPACITY * np.arange(len(params))
        self._ints = np.concatenate([self._ints, ints])
        self._scal = np.concatenate([self._scal, scal])
        self._settings = np.concatenate([self._settings, settings])
        self._offsets = np.concatenate([self._offsets, offsets])

    def _add_calibrations(self, periods: list[int | None]) -> None:
        """Rows of :attr:`_post` for new streams, the rows widened to the largest state (the
        step reads a state's layout from its header: the padding is never read)."""
        states = {p: calibration.new_calibration(p) for p in set(periods)}
        width = max(self._post.shape[1], *(len(s) for s in states.values()))
        post = np.zeros((len(self._post) + len(periods), width))
        post[:len(self._post), :self._post.shape[1]] = self._post
        for i, p in enumerate(periods, start=len(self._post)):
            post[i, :len(states[p])] = states[p]
        self._post = post

    def _reserve(self, size: int) -> int:
        """Room for ``size`` more pool entries (the pools doubled, or compacted, when full);
        the offset of the first."""
        if self._used + size > len(self._log_w):
            if self._garbage and 3 * self._garbage >= self._used:  # half the live size
                self._compact()
            if self._used + size > len(self._log_w):
                grown = max(2 * len(self._log_w), self._used + size)
                for name in ("_start", "_log_w", "_runs"):
                    old = getattr(self, name)
                    new = np.zeros((grown, *old.shape[1:]), old.dtype)
                    new[:self._used] = old[:self._used]
                    setattr(self, name, new)
        first = self._used
        self._used += size
        return first

    def _compact(self) -> None:
        """The pools rebuilt with each stream's region in turn (no garbage)."""
        size = len(self._log_w)
        self._offsets, self._start, self._log_w, self._runs = self._packed_pools(size)
        self._used = int(self._offsets[-1] + self._ints[-1, 1] * self._settings.shape[1]) \
            if len(self._offsets) else 0
        self._garbage = 0

    def _packed_pools(self, size: int | None = None
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The streams' regions one after the other in new pools of ``size`` entries (None:
        just enough): ``(offsets, start, log_w, runs)``."""
        sizes = self._ints[:, 1] * self._settings.shape[1]
        offsets = (np.cumsum(sizes) - sizes).astype(np.int64)
        size = int(sizes.sum()) if size is None else size
        pools = []
        for old in (self._start, self._log_w, self._runs):
            new = np.zeros((size, *old.shape[1:]), old.dtype)
            for src, dst, n in zip(self._offsets.tolist(), offsets.tolist(), sizes.tolist(),
                                   strict=True):
                new[dst:dst + n] = old[src:src + n]
            pools.append(new)
        return offsets, pools[0], pools[1], pools[2]

    def _grow(self, rows: np.ndarray) -> None:
        """Double the capacity of the streams ``rows`` (moved to the end of the pools)."""
        n_models = self._settings.shape[1]
        for r in rows.tolist():
            cap = int(self._ints[r, 1])
            counts = self._ints[r, INT_HEAD:INT_HEAD + n_models]
            first = self._reserve(2 * cap * n_models)
            src = int(self._offsets[r])  # after _reserve: a compaction moves the offsets
            for k, c in enumerate(counts.tolist()):
                old, new = src + k * cap, first + k * 2 * cap
                self._start[new:new + c] = self._start[old:old + c]
                self._log_w[new:new + c] = self._log_w[old:old + c]
                self._runs[new:new + c] = self._runs[old:old + c]
            self._offsets[r] = first
            self._ints[r, 1] = 2 * cap
            self._garbage += cap * n_models

    def _process_warm_up(self, rows: np.ndarray, series: list[Any]) -> None:
        checked = [self._params[r].models[0].check_series(s) for r, s in
                   zip(rows.tolist(), series, strict=True)]
        lengths = np.array([len(s) for s in checked], dtype=np.int64)
        if not lengths.size:
            return
        block = np.full((len(checked), int(lengths.max())), np.nan)
        for s, w in enumerate(checked):
            block[s, :len(w)] = w
        for j in range(block.shape[1]):  # one compiled call per column: every stream a step
            here = lengths > j
            self._step_rows(rows[here], block[here, j])

    # -- processing --------------------------------------------------------------------------

    def update_many(self, ids: Any, values: Any) -> BankInfo:
        """Process one value for each stream of ``ids`` (NaN = missing: predict only).

        Parameters
        ----------
        ids : sequence of hashable
            Distinct stream ids, in any order; a new id creates its stream when the models
            need no data (else :meth:`add` it first).
        values : array_like of float, shape (len(ids),)
            The next value of each stream: finite or NaN, at most ``1e150`` in magnitude.

        Returns
        -------
        BankInfo
            One entry per id, in the order given.

        Notes
        -----
        When ``ids`` are the previous call's ids in the same order (a list or tuple of the
        same labels, of the same types, or a plain array of integers, booleans or strings with
        the same dtype and values), their rows are reused without looking the ids up or
        checking them again: a fleet that sends its ids the same way every call pays less per
        call. They are compared by content with a copy, so a list changed in place between
        calls is read afresh. Labels are compared with ``==``, so labels that compare equal
        must hash alike (Python's rule for dict keys).

        Examples
        --------
        >>> from possibly.changepoint import DetectorBank
        >>> bank = DetectorBank(sigma=1.0, hazard=0.01)
        >>> for y in ([0.0, 5.0], [0.2, 5.1], [-0.1, 4.9], [6.0, 5.0], [6.1, 5.2]):
        ...     info = bank.update_many(["cpu", "disk"], y)
        >>> info.change_detected.tolist(), bank.changepoints("cpu").tolist()
        ([True, False], [3])
        """
        with self._exclusive():
            rows = self._repeated_rows(ids)
            if rows is None:
                listed, distinct = self._id_list(ids)
                y = self._values(values, len(listed))
                if distinct != len(listed):  # distinct ids have distinct rows
                    raise ValueError("ids must be distinct within one call (one value per "
                                     "stream)")
                rows = self._rows_of(listed)
                self._remember(ids, listed, rows)
            else:
                y = self._values(values, len(rows))
            return self._step_rows(rows, y)

    def _repeated_rows(self, ids: Any) -> np.ndarray | None:
        """The rows of the previous call's ids when ``ids`` are the same labels in the same
        order (a fleet sends the same ids every tick), else None. The same labels: an array
        of the same dtype with equal values, or a list or tuple whose items have the same
        types and compare equal (as dict keys do); the previous ids are a copy, so a caller's
        list changed in place is compared by its content."""
        last = self._last_ids
        if last is None:
            return None
        ids_, types, rows = last
        if type(ids) is np.ndarray:  # not a subclass: a masked array's mask is not compared
            same = (type(ids_) is np.ndarray and ids.dtype == ids_.dtype
                    and ids.shape == ids_.shape and bool(np.array_equal(ids, ids_)))
        elif type(ids) in (list, tuple) and types is not None:
            same = (ids if type(ids) is list else list(ids)) == ids_ \
                and list(map(type, ids)) == types
        else:
            same = False
        return rows if same else None

    def _remember(self, ids: Any, listed: list[Hashable], rows: np.ndarray) -> None:
        """Keep a copy of ``ids`` (as :meth:`_repeated_rows` compares them) and their rows."""
        if type(ids) is np.ndarray and ids.dtype.kind in "biuUS":
            self._last_ids = (ids.copy(), None, rows)
        elif type(ids) in (list, tuple):
            self._last_ids = (listed, list(map(type, listed)), rows)  # listed: a new list
        else:
            self._last_ids = None

    @staticmethod
    def _values(values: Any, n: int) -> np.ndarray:
        what = f"one number per id (NaN for a missing value), at most {MAX_MAGNITUDE:g} in " \
               "magnitude"
        y = as_numbers("values", values, what=what)
        if y.ndim != 1 or y.size != n:
            raise ValueError(f"values must be {what}: {n} of them, got shape {y.shape}")
        bad = ~(np.isnan(y) | (np.abs(y) <= MAX_MAGNITUDE))
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            raise ValueError(f"values must be {what}, got {float(y[j])!r} at position {j}")
        return y

    def _rows_of(self, ids: list[Hashable]) -> np.ndarray:
        """The rows of ``ids``; new ids get streams when the models need no data."""
        get = self._row.get
        rows = np.fromiter((get(i, -1) for i in ids), np.int64, len(ids))
        if (rows < 0).any():
            new = [i for i, r in zip(ids, rows.tolist(), strict=True) if r < 0]
            if len(set(new)) != len(new):
                raise ValueError("ids must be distinct within one call (one value per stream)")
            params = self._stream_params(new[0], None, None)  # the same for every new stream
            created = self._create(new, [params] * len(new), [self.period] * len(new))
            rows[rows < 0] = created
        return rows

    def _step_rows(self, rows: np.ndarray, y: np.ndarray) -> BankInfo:
        n = len(rows)
        if self._numba:
            out = np.empty((n, len(BANK_COLUMNS) + 1))  # and the anomaly
            t = self._ints[rows, 0].copy()
            tops = np.empty(n, np.int64)
            self._compiled_step(rows, y, out, tops)
            full = tops >= self._ints[rows, 1]
            if full.any():  # the next step adds a run per model: room for it
                self._grow(rows[full])
        else:
            out, t = self._numpy_steps(rows, y)
        start = out[:, COLUMN["start"]].astype(np.int64)
        model = out[:, COLUMN["model"]].astype(np.int64)
        moved = out[:, COLUMN["map_event"]] != 0.0
        if moved.any():
            for g, v in zip(self._events, (rows[moved], t[moved], start[moved],
                                           model[moved]), strict=True):
                g.extend(v)
        return BankInfo(
            t=t, log_consistency=out[:, COLUMN["log_consistency"]],
            discount=out[:, COLUMN["discount"]],
            change_detected=out[:, COLUMN["change_detected"]] != 0.0,
            outlier_detected=out[:, COLUMN["outlier_detected"]] != 0.0,
            map_run_length=t - start, map_model=model, mean=out[:, COLUMN["mean"]],
            n_active=out[:, COLUMN["n_active"]].astype(np.int64),
            log_change_possibility=out[:, COLUMN["log_change_possibility"]],
            anomaly=out[:, len(BANK_COLUMNS)])

    def _compiled_step(self, rows: np.ndarray, y: np.ndarray, out: np.ndarray,
                       tops: np.ndarray) -> None:
        args = (y, rows, self._offsets, self._ints, self._start, self._log_w, self._runs,
                self._settings, self._scal, self._last, self._detector.outlier_level_, out,
                tops, self._post, _NO_PEAK)
        if self._driver is not None:
            self._driver(*args)
            return
        compiled = self._compiled
        assert compiled is not None
        functions = compiled.kernels[0].functions
        import numba

        from possibly.changepoint.anomaly_numba import bank_calibration, bank_prefetch

        # compiled (or loaded) at this first call, before it runs
        self._driver = without_refcounts(
            lambda refcounts: compiled_streams(functions, self._settings.shape[2], self.parallel,
                                               bank_calibration, refcounts=refcounts,
                                               post_prefetch=bank_prefetch),
            lambda driver: driver(*args),
            ("bank", functions, self._settings.shape[2], self.parallel,
             tuple(numba.typeof(a) for a in args)))

    def _numpy_steps(self, rows: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:func:`~possibly.changepoint.recursion.step` per stream, as the detector's numpy
        engine, then the anomaly calibration; the rows of :data:`BANK_COLUMNS` and the
        anomaly, and the streams' times."""
        out = np.empty((len(rows), len(BANK_COLUMNS) + 1))
        t = np.empty(len(rows), np.int64)
        level = self._detector.outlier_level_
        for i, (r, x) in enumerate(zip(rows.tolist(), y.tolist(), strict=True)):
            state, info = step(self._states[r], x, self._params[r])
            self._states[r] = state
            begin = info.t - info.map_run_length
            prev_start, prev_model = self._last[r]
            changed = begin > prev_start
            post = self._post[r]
            out[i] = (x, begin, info.map_model, info.mean, info.log_consistency,
                      info.discount, info.n_active, info.log_change_possibility, changed,
                      bool(info.discount < level) and not changed,
                      begin != prev_start or info.map_model != prev_model,
                      calibration.calibrate_one(post, x, -info.log_consistency))
            self._last[r] = begin, info.map_model
            t[i] = info.t
        return out, t

    # -- one stream ---------------------------------------------------------------------------

    def _row_of(self, stream_id: Any) -> int:
        try:
            return self._row[stream_id]
        except (KeyError, TypeError):
            raise KeyError(f"no stream with id {stream_id!r} in the bank ({len(self)} "
                           f"streams)") from None

    def t(self, stream_id: Any) -> int:
        """Number of observations of stream ``stream_id`` processed."""
        r = self._row_of(stream_id)
        return int(self._ints[r, 0]) if self._numba else self._states[r].t

    def params(self, stream_id: Any) -> ChangepointParams:
        """The parameters of stream ``stream_id`` (its resolved models)."""
        return self._params[self._row_of(stream_id)]

    def state(self, stream_id: Any) -> RunState:
        """The run hypotheses of stream ``stream_id`` (a copy), as a detector's ``state_``."""
        with self._exclusive():
            r = self._row_of(stream_id)
            if not self._numba:
                return self._states[r]
            compiled = self._compiled
            assert compiled is not None
            n_models = len(compiled.kernels)
            cap, first = int(self._ints[r, 1]), int(self._offsets[r])
            counts = self._ints[r, INT_HEAD:INT_HEAD + n_models].tolist()
            kernels = compiled.kernels  # unpack depends on the model, not on its prior
            blocks = tuple(RunBlock(self._start[first + k * cap:first + k * cap + c].copy(),
                                    self._log_w[first + k * cap:first + k * cap + c].copy(),
                                    kern.unpack(self._runs[first + k * cap:
                                                           first + k * cap + c]))
                           for k, (kern, c) in enumerate(zip(kernels, counts, strict=True)))
            return RunState(int(self._ints[r, 0]), blocks)

    def _trace(self, stream_id: Any) -> MapTrace:
        """The MAP trace of stream ``stream_id``, rebuilt from its events."""
        r = self._row_of(stream_id)
        stream, time, start, model = (g.view() for g in self._events)
        if self._grouped is None or self._grouped[0] != len(stream):
            order = np.argsort(stream, kind="stable")
            bounds = np.searchsorted(stream[order], np.arange(len(self) + 1))
            self._grouped = (len(stream), order, bounds)
        _, order, bounds = self._grouped
        mine = order[bounds[r]:bounds[r + 1]] if r + 1 < len(bounds) else order[:0]
        trace = MapTrace()
        n = self.t(stream_id)
        if n:
            lengths = np.diff(np.append(time[mine], n))
            trace.extend(np.repeat(start[mine], lengths), np.repeat(model[mine], lengths))
        return trace

    def changepoints(self, stream_id: Any) -> np.ndarray:
        """The change points of stream ``stream_id`` so far (the detector's
        :attr:`~possibly.ChangepointDetector.changepoints`: integer positions in the stream,
        its warm-up included)."""
        with self._exclusive():
            return self._trace(stream_id).changepoints()

    def segment_models(self, stream_id: Any) -> np.ndarray:
        """The model index of each MAP segment of stream ``stream_id``."""
        with self._exclusive():
            return self._trace(stream_id).segment_models()

    # -- bookkeeping -------------------------------------------------------------------------

    def _exclusive(self) -> _Held:
        if not self._lock.acquire(blocking=False):
            raise RuntimeError("this DetectorBank is in use by another thread: one bank must "
                               "not be used by several threads at once")
        return _Held(self._lock)

    def __getstate__(self) -> dict[str, Any]:
        with self._exclusive():
            state = self.__dict__.copy()
            if self._numba:  # the pools without their spare room and garbage
                packed = self._packed_pools()
                state.update(zip(("_offsets", "_start", "_log_w", "_runs"), packed,
                                 strict=True))
                state["_used"], state["_garbage"] = len(packed[1]), 0
        state["_driver"] = None  # compiled code: made again at the first update after loading
        state["_grouped"] = None
        state["_last_ids"] = None
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        for row in state.get("_post", ()):  # the compiled step does not check bounds
            calibration.check_state(row)
        compiled, runs = state.get("_compiled"), state.get("_runs")
        if (compiled is not None and runs is not None
                and runs.shape[1] != compiled.kernels[0].functions.width):
            raise ValueError(f"this DetectorBank was pickled by another version of possibly: "
                             f"its runs have {runs.shape[1]} columns, this version's kernel "
                             f"{compiled.kernels[0].functions.width}; start the bank again "
                             f"from the streams' data")
        self.__dict__.update(state)
        self._last_ids = None  # also for a pickle without it
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        shown = repr(self._detector)[len("ChangepointDetector("):-1]
        shown = ", ".join(p for p in shown.split(", ") if p and p != "history=False")
        return f"DetectorBank({shown}) with {len(self)} streams"


class _Held:
    """A held lock, released on leaving the ``with`` block."""

    def __init__(self, lock: threading.Lock) -> None:
        self.lock = lock

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        self.lock.release()


#: the hindsight buffer of step_kernels: not tracked by a bank
_NO_PEAK = np.empty(0)


def _shown(ids: Sequence[Hashable], most: int = 5) -> str:
    """A few ids for an error message."""
    more = f" and {len(ids) - most} more" if len(ids) > most else ""
    return ", ".join(repr(i) for i in ids[:most]) + more
