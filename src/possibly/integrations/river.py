"""river interface: the robust change-point detector as river anomaly and drift detectors.

river learns from one record at a time, which is how :meth:`possibly.ChangepointDetector.update`
runs. :class:`PossiblyAnomalyDetector` is a river anomaly detector (``learn_one`` /
``score_one``) on one numeric feature of river's feature dicts, whose score is the detector's
calibrated anomaly signal (``info.anomaly``); :class:`PossiblyDriftDetector` is a river drift
detector (``update`` / ``drift_detected``) whose flag is the detector's ``change_detected``.

Both run the default models of ``ChangepointDetector()`` (levels and trends with an unknown
noise scale) with their scale-free priors taken from a warm-up: the first ``warm_up`` records
are kept, the priors come from them (:func:`~possibly.changepoint.automatic_prior`), the
detector processes them, then every further record is one ``update()``. The warm-up also
gives the stream's cycles (``period="auto"``, the default:
:func:`~possibly.changepoint.infer_period` of the warm-up's values, which needs two full
cycles in it), as seasonal members of the default models and the anomaly signal's period.
``model="normal"`` runs the paper's normal-mean model with σ estimated on the warm-up; a
given ``sigma`` starts it from the first record, without warm-up (and without cycles, unless
``period`` gives one).

Needs river (``pip install 'possibly[river]'``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

try:
    from river.base import AnomalyDetector, DriftDetector
except ImportError:
    raise ImportError("possibly.integrations.river needs river: "
                      "pip install 'possibly[river]'") from None

from possibly.changepoint import (
    ChangepointDetector,
    NormalMean,
    SegmentModel,
    automatic_prior,
    estimate_sigma,
    infer_period,
    model_family,
)
from possibly.changepoint.models.segment_model import MAX_MAGNITUDE
from possibly.changepoint.recursion import ChangepointInfo
from possibly.validation import check_int, describe

__all__ = ["PossiblyAnomalyDetector", "PossiblyDriftDetector"]


def _value(name: str, value: Any) -> float:
    """``value`` as a float: a real number (NaN or None: missing), refused otherwise."""
    if value is None:
        return math.nan
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a real number (NaN or None for a missing value), "
                         f"got {describe(value)}")
    x = float(value)
    if math.isinf(x) or abs(x) > MAX_MAGNITUDE:
        raise ValueError(f"{name} must be at most {MAX_MAGNITUDE:g} in magnitude (NaN for a "
                         f"missing value), got {value!r}")
    return x


class _Monitor:
    """What the two detectors share: the parameters, the warm-up and the streamed detector."""

    def _configure(self, warm_up: int, model: str | None, sigma: float | str, hazard: float,
                   forgetting: float | None, robust: bool, tau: float | None,
                   outlier_level: float | None, engine: str, period: int | str | None = "auto"
                   ) -> None:
        self.warm_up = warm_up
        self.model = model
        self.sigma = sigma
        self.hazard = hazard
        self.forgetting = forgetting
        self.robust = robust
        self.tau = tau
        self.outlier_level = outlier_level
        self.engine = engine
        check_int("warm_up", warm_up, 2)
        if model not in (None, "auto", "normal"):
            raise ValueError(f"model must be None, 'auto' or 'normal' (the segment models learn "
                             f"their priors on the warm-up), got {model!r}")
        # bad parameters fail here, at the call site (ChangepointDetector checks them all)
        ChangepointDetector(sigma=sigma, model=model, hazard=hazard, forgetting=forgetting,
                            robust=robust, tau=tau, outlier_level=outlier_level, engine=engine,
                            period=period)
        self._period = period
        self._warm: list[float] = []  # the warm-up, from the first observed value on
        self._detector: ChangepointDetector | None = None

    def _normal(self) -> bool:
        """Whether the model is the paper's NormalMean (model="normal" or a given sigma)."""
        return self.model == "normal" or not isinstance(self.sigma, str)

    def _learnt_models(self, values: np.ndarray, periods: tuple[float, ...] | None
                       ) -> list[SegmentModel]:
        """The segment models with what the warm-up teaches: σ of the paper's model, or the
        scale-free priors of the default models (with seasonal members for ``periods``)."""
        if not self._normal():
            return list(model_family(prior=automatic_prior(values), period=periods))
        if isinstance(self.sigma, str):
            return [NormalMean(estimate_sigma(values))]
        return [NormalMean(float(self.sigma))]

    def _start(self, values: np.ndarray) -> ChangepointDetector:
        """The detector, with the models (and with ``period="auto"``, the cycles) learnt from
        ``values``, after processing them."""
        period, periods = self._period, None
        if isinstance(period, str):  # "auto": the warm-up's cycles (none without a warm-up)
            periods = infer_period(values) if values.size else None
            period = None if periods is None else int(round(periods[0]))
        detector = ChangepointDetector(
            model=self._learnt_models(values, periods), hazard=self.hazard,
            forgetting=self.forgetting, robust=self.robust, tau=self.tau,
            outlier_level=self.outlier_level, engine=self.engine, history=False, period=period)
        if values.size:
            detector.fit(values)
        return detector

    def _running(self) -> ChangepointDetector | None:
        """The detector once it can run: a given σ needs no warm-up (None: still warming up)."""
        if self._detector is None and self._normal() and not isinstance(self.sigma, str):
            self._detector = self._start(np.zeros(0))
        return self._detector

    def _learn(self, x: float) -> ChangepointInfo | None:
        """Process one value (NaN: missing); its step's Info, None during the warm-up."""
        detector = self._running()
        if detector is not None:
            return detector.update(x)
        if self._warm or x == x:  # missing values before the first observation: no stream yet
            self._warm.append(x)
        if len(self._warm) >= self.warm_up:
            warm, self._warm = np.asarray(self._warm), []
            try:
                self._detector = self._start(warm)
            except ValueError as exc:  # σ of a warm-up with too few or tied values
                self._warm = warm[1:].tolist()  # the warm-up slides on with the next record
                raise ValueError(f"the warm-up of the last {warm.size} records could not set "
                                 f"the model: {exc}") from None
        return None

    def _score(self, x: float) -> float:
        """The calibrated anomaly of ``x`` against the current state, without learning it
        (:meth:`~possibly.ChangepointDetector.peek_anomaly`: what ``update(x)`` would report;
        0 during the warm-up and for a missing value)."""
        detector = self._running()
        if detector is None or x != x:
            return 0.0
        return detector.peek_anomaly(x)

    @property
    def detector(self) -> ChangepointDetector | None:
        """The streamed :class:`~possibly.ChangepointDetector` (None during the warm-up): its
        ``changepoints``, ``params_`` (the models with the priors learnt on the warm-up), ..."""
        return self._running()


class PossiblyAnomalyDetector(_Monitor, AnomalyDetector):
    """Robust online change-point detection (possibly's BOCPD) as a river anomaly detector.

    Univariate: it monitors one numeric feature of river's feature dicts, the one named
    ``feature``, or, with ``feature=None``, the only feature of each record (a record with
    several features is then refused). A record without that feature, or whose value is None
    or NaN, is a missing observation: the detector steps forward without it (river's features
    come and go) and ``score_one`` gives it 0.

    ``score_one(x)`` scores ``x`` against the detector's current state without learning it
    (:meth:`possibly.ChangepointDetector.peek_anomaly`), ``learn_one(x)`` processes it
    (:meth:`possibly.ChangepointDetector.update`), and the score is the ``info.anomaly`` that
    this update reports: the calibrated anomaly signal, in [0, 1], one minus a p-value of the
    record against the stream's previous records (the rank of its surprise among at most 2000,
    extrapolated beyond the largest, combined with a sum over the last records and the runs of
    repeated values; its surprise: the segment model's ``−log c``, or with a ``period``, its
    deviation from the same phase of the previous cycles). A threshold then means the same
    false-alarm rate on every stream, whatever its units or tails (docs: Monitoring streams).
    During the warm-up (the first ``warm_up`` records from the first observed value, from
    which the priors are learnt; they calibrate the signal) the score is 0.

    Parameters
    ----------
    feature : str, optional
        The feature to monitor; None (default): the only feature of each record.
    warm_up : int
        Number of records (at least 2) from which the priors (or σ, ``model="normal"``) are
        learnt before scoring starts; unused when ``sigma`` is a number.
    model : {None, "auto", "normal"}
        None (default): ``"normal"`` when ``sigma`` is a number, else ``"auto"``.
        ``"auto"``: the default models of ``ChangepointDetector()``, constant level, linear
        and quadratic trend segments with an unknown noise scale, their scale-free priors
        (median, MAD and length) taken from the warm-up; ``"normal"``: the paper's normal-mean
        model (piecewise-constant level, known noise scale ``sigma``).
    sigma : "auto" or float
        Noise scale of the paper's model; a number selects that model and starts from the
        first record. ``"auto"`` with ``model="normal"``: estimated on the warm-up
        (:func:`possibly.changepoint.estimate_sigma`).
    hazard, forgetting, robust, tau, outlier_level, engine
        As :class:`possibly.ChangepointDetector` (``hazard``: the possibility of a change at
        each record; ``outlier_level``: the discount below which a record sets the online
        ``outlier_detected`` flag).
    period : "auto", int or None
        The cycle of the stream in records (24 for hourly records with a daily cycle), as
        :class:`possibly.ChangepointDetector`'s ``period``: the score measures each record
        against the same phase of the previous cycles. ``"auto"`` (default): the cycles of
        the warm-up, if it shows one strongly (:func:`possibly.changepoint.infer_period`; the
        warm-up must hold two full cycles), which also add seasonal members to the default
        models; a stream without a strong cycle runs as with None. None: no cycle.

    Attributes
    ----------
    detector : ChangepointDetector or None
        The streamed detector after the warm-up (its ``changepoints``; its ``params_.models``
        hold the priors learnt on the warm-up); None before.

    Examples
    --------
    >>> import numpy as np
    >>> from possibly.integrations.river import PossiblyAnomalyDetector
    >>> rng = np.random.default_rng(0)
    >>> y = 20.0 + rng.normal(size=300)
    >>> y[200] = 35.0                                    # a spike after the warm-up
    >>> det = PossiblyAnomalyDetector(feature="latency", warm_up=100)
    >>> scores = []
    >>> for value in y:
    ...     x = {"latency": value, "host": 3}            # other features are ignored
    ...     scores.append(det.score_one(x))
    ...     det.learn_one(x)
    >>> int(np.argmax(scores)), max(scores[:100])
    (200, 0.0)
    >>> bool(scores[200] > 0.9999)  # far beyond the 200 earlier surprises: the fitted tail
    True
    """

    def __init__(self, feature: str | None = None, warm_up: int = 100, model: str | None = None,
                 sigma: float | str = "auto", hazard: float = 2.5e-3,
                 forgetting: float | None = None, robust: bool = True, tau: float | None = None,
                 outlier_level: float | None = None, engine: str = "auto",
                 period: int | str | None = "auto"):
        self.feature = feature
        self.period = period
        self._configure(warm_up, model, sigma, hazard, forgetting, robust, tau, outlier_level,
                        engine, period)

    def _read(self, x: Any) -> float:
        """The monitored value of the record ``x`` (NaN: missing)."""
        if not isinstance(x, dict):
            raise ValueError(f"x must be a dict of features (river's records), got {describe(x)}")
        if self.feature is not None:
            return _value(f"x[{self.feature!r}]", x.get(self.feature))
        if len(x) > 1:
            raise ValueError(f"x has {len(x)} features ({', '.join(map(repr, list(x)[:5]))}"
                             f"{', ...' if len(x) > 5 else ''}): name the one to monitor with "
                             "feature=<name> (feature=None reads the only feature of a record)")
        if not x:
            return math.nan
        ((name, value),) = x.items()
        return _value(f"x[{name!r}]", value)

    def learn_one(self, x: dict) -> None:
        """Process the record ``x`` (one ``update()`` of the detector after the warm-up)."""
        self._learn(self._read(x))

    def score_one(self, x: dict) -> float:
        """The anomaly score of the record ``x``, in [0, 1], without learning it."""
        return self._score(self._read(x))

    @classmethod
    def _unit_test_params(cls):
        yield {}
        yield {"feature": "value", "warm_up": 50}
        yield {"warm_up": 40, "engine": "numpy"}
        yield {"feature": "value", "sigma": 1.0, "hazard": 0.01}
        yield {"model": "normal", "warm_up": 30, "robust": False, "engine": "numpy"}
        yield {"warm_up": 48, "period": 24}


class PossiblyDriftDetector(_Monitor, DriftDetector):
    """Robust online change-point detection (possibly's BOCPD) as a river drift detector.

    ``update(x)`` processes one value (:meth:`possibly.ChangepointDetector.update`);
    ``drift_detected`` is that step's ``change_detected``: the detector's most possible
    segment now starts later than before, at ``t − map_run_length`` (a change point at that
    step, which the detector finds a few records after it happened). Outliers are discounted,
    not flagged as drifts. A value of None or NaN is a missing observation (predict only).
    During the warm-up (the first ``warm_up`` values from the first observed one, from which
    the priors are learnt) ``drift_detected`` stays False, and changes inside the warm-up are
    not flagged (they are in ``detector.changepoints``).

    Parameters
    ----------
    warm_up, model, sigma, hazard, forgetting, robust, tau, outlier_level, engine, period
        As :class:`PossiblyAnomalyDetector` (with ``period="auto"``, the default, a cycle of
        the warm-up adds seasonal members to the default models: the cycle is not a drift).

    Attributes
    ----------
    detector : ChangepointDetector or None
        The streamed detector after the warm-up (its ``changepoints``: every change so far,
        as positions in the stream); None before.
    drift_detected : bool
        Whether the last value's step detected a change.

    Examples
    --------
    >>> import numpy as np
    >>> from possibly.integrations.river import PossiblyDriftDetector
    >>> rng = np.random.default_rng(1)
    >>> y = np.r_[rng.normal(0, 1, 200), rng.normal(5, 1, 100)]
    >>> drift = PossiblyDriftDetector(warm_up=100)
    >>> for t, value in enumerate(y):
    ...     drift.update(value)
    ...     if drift.drift_detected:
    ...         print(f"t={t}: a change at {drift.detector.changepoints[-1]}")
    t=201: a change at 200
    """

    def __init__(self, warm_up: int = 100, model: str | None = None,
                 sigma: float | str = "auto", hazard: float = 2.5e-3,
                 forgetting: float | None = None, robust: bool = True, tau: float | None = None,
                 outlier_level: float | None = None, engine: str = "auto",
                 period: int | str | None = "auto"):
        super().__init__()
        self.period = period
        self._configure(warm_up, model, sigma, hazard, forgetting, robust, tau, outlier_level,
                        engine, period)

    def update(self, x: int | float) -> None:
        """Process one value (None or NaN: missing); sets :attr:`drift_detected`."""
        info = self._learn(_value("x", x))
        self._drift_detected = info is not None and info.change_detected

    @classmethod
    def _unit_test_params(cls):
        yield {}
        yield {"sigma": 1.0, "hazard": 0.01}
        yield {"model": "normal", "warm_up": 30, "robust": False, "engine": "numpy"}
        yield {"warm_up": 60, "period": None}
