"""The result of a change-point fit: per-step outputs, the MAP segmentation, outliers, frames."""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from possibly.changepoint.models.segment_model import SegmentModel
from possibly.changepoint.models.trend import PolynomialTrend
from possibly.changepoint.outliers import find_outliers
from possibly.changepoint.recursion import ChangepointParams, MapTrace, init, step
from possibly.changepoint.uncertainty import change_possibility, possibility_intervals
from possibly.frames import per_step_dataset

__all__ = ["ChangepointResult", "model_name"]


def model_name(model: SegmentModel) -> str:
    """A short name of a segment model for reports: its ``name`` (``"level"`` for
    :class:`NormalMean` and a :class:`PolynomialTrend` of degree 0, ``"linear trend"``,
    ``"quadratic trend"``; the class name for other models).

    Examples
    --------
    >>> from possibly.changepoint import NormalMean, model_family
    >>> [model_name(m) for m in [NormalMean(1.0), *model_family()]]
    ['level', 'level', 'linear trend', 'quadratic trend']
    """
    return model.name


class _ReadOnce:
    """A dataclass field that may be given a function of no argument instead of its value:
    the function is called on the first read and its value kept (the detector's anomaly
    signal, calibrated only when read). The value lives in the instance's ``__dict__`` under
    the field's name, as a plain field's would (pickles are the same)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return None  # the field's default
        value = obj.__dict__.get(self.name)
        if callable(value):
            value = value()  # the same array at every call (thread-safe)
            obj.__dict__[self.name] = value
        return value

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__[self.name] = value


def _cut(positions: np.ndarray, edge: int = 5) -> str:
    """``[a, b, c]``, or the first and last ``edge`` items around ``...`` when longer."""
    items = positions.tolist()
    if len(items) > 2 * edge:
        items = [*items[:edge], "...", *items[-edge:]]
    return "[" + ", ".join(map(str, items)) + "]"


def _span(first: Any, last: Any) -> str:
    """``first ... last``; dates at midnight without their time, as pandas prints them."""
    ends = [str(first), str(last)]
    if all(e.endswith(" 00:00:00") for e in ends):
        ends = [e.removesuffix(" 00:00:00") for e in ends]
    return " ... ".join(ends)


@dataclass(frozen=True, eq=False)
class ChangepointResult:
    """Output of :meth:`ChangepointDetector.fit` (arrays of shape ``(T,)``).

    Attributes
    ----------
    y : ndarray
        The observations (NaN = missing); shape ``(T, *event)`` for vector observations.
    map_run_length : ndarray of int64
        MAP run length after each observation (``0``: a segment starts here).
    map_model : ndarray of int
        Segment model index of the MAP hypothesis after each observation.
    mean : ndarray
        E* of the segment parameter of the MAP hypothesis; NaN before any observation of the
        segment. Shape ``(T, *estimate_shape)`` when the parameter is not scalar (the
        components of a joint mode, e.g. ``NormalGamma``'s ``(mean, precision)``, are
        concatenated).
    log_consistency, discount : ndarray
        ``log c_t`` and the exponent ``γ_t`` applied to the likelihood (1 for the standard
        version); NaN at missing observations.
    n_active : ndarray of int
        Number of kept run hypotheses after each step.
    log_online_change_possibility : ndarray
        Log possibility, right after each step, that a segment starts at that observation (the
        new run's weight as seen online). :attr:`change_possibility` is the hindsight value.
    params : ChangepointParams
        The parameters used, with the resolved models (e.g. the ``sigma`` actually used).
    sigma_estimated : bool
        Whether ``sigma`` came from :func:`~possibly.changepoint.estimate_sigma`.
    outlier_level : float
        Discount level below which an observation counts as discounted (see ``outliers``).
    index : pandas.Index or None
        The index of the input when it was a pandas Series, extended by the time stamps of
        the observations streamed after it (:meth:`ChangepointDetector.fit` gives the rule);
        positions stay integers everywhere else; used by :meth:`to_frame`.
    name : hashable or None
        The ``name`` of the input when it was a pandas Series (the y label of :meth:`plot`).
    log_change_possibility : ndarray or None
        ``log`` of :attr:`change_possibility`, kept by the recursion as it ran (the detector
        fills it); None: :attr:`change_possibility` replays the recursion.
    anomaly : ndarray or None
        The calibrated online anomaly of each observation, in ``[0, 1]``, the values
        :meth:`ChangepointDetector.update` reports (``info.anomaly``): one minus a
        p-value of the observation against the stream's earlier ones
        (:mod:`possibly.changepoint.anomaly`); 0 at missing observations. None when the
        result was not made by the detector. It may be given as a function of no argument
        returning the array, called on the first read (the detector defers the calibration
        of :meth:`~ChangepointDetector.fit`'s records until they are read).
    period : int or None
        The anomaly signal's period in records (the detector's ``period_``: given, or
        inferred with ``period="auto"``); None: no cycle.
    engine : {"auto", "numpy", "numba"}
        The detector's ``engine``: with ``"numpy"``, :attr:`outliers` judges the segments by
        numpy's steps too (never importing numba); otherwise by the compiled hindsight when
        numba is installed.

    Examples
    --------
    The repr is a summary, lists cut in the middle as pandas cuts them:

    >>> import pandas as pd, possibly as ps
    >>> y = pd.Series(np.tile([0.0, 0.0, 0.0, 0.0, 9.0], 40),
    ...               index=pd.date_range("2024-01-01", periods=200, freq="D"))
    >>> ps.ChangepointDetector(sigma=1.0).fit(y)
    ChangepointResult(200 observations, 0 missing, index 2024-01-01 ... 2024-07-18
      model: level, robust, hazard 0.0025, forgetting 0.9
      change points (0): []
      outliers (40): [4, 9, 14, 19, 24, ..., 179, 184, 189, 194, 199])
    """

    y: np.ndarray
    map_run_length: np.ndarray
    map_model: np.ndarray
    mean: np.ndarray
    log_consistency: np.ndarray
    discount: np.ndarray
    n_active: np.ndarray
    log_online_change_possibility: np.ndarray
    params: ChangepointParams
    sigma_estimated: bool = False
    outlier_level: float = 0.1
    index: Any = None
    name: Any = None
    log_change_possibility: np.ndarray | None = None
    anomaly: np.ndarray | None = _ReadOnce()  # type: ignore[assignment]
    period: int | None = None
    engine: str = "auto"
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def __getstate__(self) -> dict[str, Any]:
        self.anomaly  # noqa: B018  (a deferred value computed: the pickle holds its array)
        return self.__dict__

    def __repr__(self) -> str:
        n = len(self.y)
        missing = int(np.isnan(self.y.reshape(n, -1)).any(axis=1).sum())
        index = ("" if self.index is None or not len(self.index)
                 else f", index {_span(self.index[0], self.index[-1])}")
        p = self.params
        models = " or ".join(model_name(m) for m in p.models)
        if len(models) > 60:  # a family with cycles: the line stays short
            models = (f"{len(p.models)} models, {model_name(p.models[0])} ... "
                      f"{model_name(p.models[-1])}")
        return (f"ChangepointResult({n} observations, {missing} missing{index}\n"
                f"  model: {models}, {'robust' if p.robust else 'standard'}, hazard "
                f"{p.hazard:g}, forgetting {p.forgetting:g}\n"
                f"  change points ({self.changepoints.size}): {_cut(self.changepoints)}\n"
                f"  outliers ({self.outliers.size}): {_cut(self.outliers)})")

    @property
    def sigma(self) -> float | None:
        """σ of the normal-mean model (None without one)."""
        return self.params.sigma

    @property
    def consistency(self) -> np.ndarray:
        """``c_t = exp(log c_t)``."""
        # math.exp, not numpy's vectorised exp (which can differ in the last bit): the values
        # the detector always reported, and the compiled engine's arithmetic
        lc = self.log_consistency
        return np.fromiter((math.exp(v) for v in lc.tolist()), dtype=np.float64, count=lc.size)

    def _trace(self) -> MapTrace:
        if "trace" not in self._cache:
            trace = MapTrace()
            t = np.arange(len(self.map_run_length))
            trace.extend(t - self.map_run_length, self.map_model)
            self._cache["trace"] = trace
        return self._cache["trace"]

    @property
    def changepoints(self) -> np.ndarray:
        """Start indices (integer positions) of the MAP segments after the first."""
        return self._trace().changepoints()

    @property
    def segment_models(self) -> list[int]:
        """Model index of each MAP segment (see ``segments``)."""
        return self._trace().segment_models().tolist()

    @property
    def segment_model_names(self) -> list[str]:
        """:func:`model_name` of each MAP segment's model (see ``segment_models``).

        Examples
        --------
        >>> import numpy as np, possibly as ps
        >>> t = np.arange(100.0)
        >>> y = np.where(t < 50, 0.0, 0.2 * (t - 50)) + 0.1 * np.sin(t * t)  # no cycle
        >>> ps.ChangepointDetector().fit(y).segment_model_names
        ['level', 'linear trend']
        """
        return [model_name(self.params.models[k]) for k in self.segment_models]

    @property
    def segments(self) -> list[tuple[int, int]]:
        """``[(start, stop), ...]``, half-open, covering ``0..T``."""
        bounds = [0, *self.changepoints.tolist(), len(self.y)]
        return list(zip(bounds[:-1], bounds[1:], strict=True))

    @property
    def discounted(self) -> np.ndarray:
        """Indices whose discount fell below ``outlier_level`` (change points included)."""
        return np.flatnonzero(self.discount < self.outlier_level)

    @property
    def outliers(self) -> np.ndarray:
        """Observations treated as outliers (:mod:`possibly.changepoint.outliers`)."""
        if "outliers" not in self._cache:
            numpy_only = self.engine == "numpy"
            self._cache["outliers"] = find_outliers(
                self.y, self.discount, self.segments, self.segment_models, self.params.models,
                self.outlier_level, compiled=False if numpy_only else None)
        return self._cache["outliers"].copy()

    # -- possibilistic uncertainty (changepoint/uncertainty.py) ---------------------------------

    @property
    def change_possibility(self) -> np.ndarray:
        """Per step, the possibility that a segment starts there, in [0, 1] (1 at every change
        point): the largest relative weight its hypotheses reached at any time
        (:mod:`possibly.changepoint.uncertainty`). The detector keeps it as the recursion runs
        (``log_change_possibility``); without it, the recursion is replayed once."""
        if "change_possibility" not in self._cache:
            if self.log_change_possibility is not None:
                self._cache["change_possibility"] = np.exp(self.log_change_possibility)
            else:
                self._cache["change_possibility"] = change_possibility(
                    len(self.y), self.iter_run_lengths())
        return self._cache["change_possibility"].copy()

    @property
    def outlier_score(self) -> np.ndarray:
        """Per step, ``1 − discount`` in [0, 1]: how inconsistent the observation was with
        what came before (NaN at missing observations; 0 for the standard recursion)."""
        return 1.0 - self.discount

    def changepoint_intervals(self, alpha: float = 0.5) -> list[tuple[int, int]]:
        """Per change point, the half-open ``(first, stop)`` range of steps around it whose
        :attr:`change_possibility` is at least ``alpha`` (a possibility interval)."""
        return possibility_intervals(self.change_possibility, self.changepoints, alpha)

    def segment_medians(self) -> np.ndarray:
        """Median of the observations of each segment, broadcast to shape ``y.shape``.

        Vector observations get componentwise medians; observations containing a NaN are left
        out.
        """
        out = np.full(self.y.shape, np.nan)
        for a, b in self.segments:
            seg = self.y[a:b]
            seg = seg[~np.isnan(seg.reshape(len(seg), -1)).any(axis=1)]
            if len(seg):
                out[a:b] = np.median(seg, axis=0)
        return out

    def segment_fit(self, alpha: float = 0.1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each MAP segment's fitted function at every step, with its band: ``(fit, low, high)``.

        A segment of a :class:`~possibly.changepoint.PolynomialTrend` model (the default
        models: level, linear or quadratic trend) gets its model's fit
        (:meth:`~possibly.changepoint.PolynomialTrend.fitted`): the segment's possibility
        function from all its observations, each with the exponent the recursion gave it
        (its ``discount``), the :attr:`outliers` left out; the band is the ``alpha``-cut of
        the fitted value's possibility. Segments of other models get the mean of their
        observations (outliers and missing values left out; componentwise for vector
        observations) and no band (NaN).

        Parameters
        ----------
        alpha : float
            Possibility level of the band, in (0, 1).

        Returns
        -------
        fit, low, high : ndarray, shape ``y.shape``

        Examples
        --------
        >>> import numpy as np, possibly as ps
        >>> t = np.arange(100.0)
        >>> y = np.where(t < 50, 50.0 - t, 2.0 * (t - 50.0)) + 0.3 * np.sin(t * t)
        >>> res = ps.ChangepointDetector().fit(y)                # down, then up
        >>> res.segment_model_names
        ['linear trend', 'linear trend']
        >>> fit, low, high = res.segment_fit()
        >>> fit[[0, 99]].round(1).tolist(), bool(np.all((low < fit) & (fit < high)))
        ([49.7, 97.8], True)
        """
        fit = np.full(self.y.shape, np.nan)
        half = np.full(self.y.shape, np.nan)
        weights = np.nan_to_num(self.discount, nan=0.0)
        weights[self.outliers] = 0.0
        kept = np.ones(len(self.y), dtype=bool)
        kept[self.outliers] = False
        for (a, b), k in zip(self.segments, self.segment_models, strict=True):
            model = self.params.models[k]
            if isinstance(model, PolynomialTrend):
                fit[a:b], half[a:b] = model.fitted(self.y[a:b], weights[a:b],
                                                   self.params.forgetting, alpha)
                continue
            seg = self.y[a:b][kept[a:b]]
            seg = seg[~np.isnan(seg.reshape(len(seg), -1)).any(axis=1)]
            if len(seg):
                fit[a:b] = np.mean(seg, axis=0)
        return fit, fit - half, fit + half

    def log_run_length_possibility(self, t: int) -> np.ndarray:
        """Log possibility of every run length ``0..t`` after observation ``t`` (one model).

        Recomputed by replaying the (deterministic) recursion without pruning or merging, so
        nothing is stored by :meth:`~ChangepointDetector.fit` and every run length gets its
        value, also those that were dropped (dropping changes no kept value: there is no
        normalising sum). With several models, the maximum over the models. Costs ``O(t²)``.
        """
        t = self._check_t(t)
        for s, (starts, log_w) in enumerate(self.iter_run_lengths(stop=t + 1, tol=0.0)):
            if s == t:
                out = np.full(t + 1, -np.inf)
                np.maximum.at(out, t - starts, log_w)
                return out
        raise AssertionError("unreachable")  # pragma: no cover

    def run_length_possibility(self, t: int) -> np.ndarray:
        """Possibility of every run length ``0..t`` after observation ``t`` (max 1).

        Examples
        --------
        >>> import possibly as ps
        >>> det = ps.ChangepointDetector(sigma=1.0, hazard=0.01)
        >>> res = det.fit([0.0, 0.1, -0.1, 5.0, 5.1, 4.9, 5.0])
        >>> res.run_length_possibility(6).round(4).tolist()  # MAP r = 3: a segment began at 3
        [0.01, 0.0394, 0.3005, 1.0, 0.001, 0.0001, 0.0007]
        >>> res.discount.round(2)  # the jump was discounted until it was confirmed
        array([1.  , 1.  , 1.  , 0.1 , 0.18, 0.5 , 1.  ])
        """
        return np.exp(self.log_run_length_possibility(t))

    def iter_run_lengths(self, stop: int | None = None, tol: float | None = None
                         ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield ``(start, log_w)`` of the kept hypotheses after each step ``0..stop-1``.

        ``tol`` overrides the pruning tolerance of the fit (0 keeps every run length and
        disables the merging).
        """
        stop = len(self.y) if stop is None else stop
        params = self.params
        if tol is not None:
            params = dataclasses.replace(params, tol=tol,
                                         merge_tol=params.merge_tol if tol > 0 else 0.0)
        state = init(params)
        scalar = self.y.ndim == 1
        for t in range(stop):
            state, _ = step(state, float(self.y[t]) if scalar else self.y[t], params)
            yield state.start, state.log_w

    def _check_t(self, t: Any) -> int:
        if isinstance(t, bool) or not isinstance(t, numbers.Integral):
            raise ValueError(f"t must be an integer index, got {t!r}")
        t = int(t)
        n = len(self.y)
        if t < 0:
            t += n
        if not 0 <= t < n:
            raise ValueError(f"t must be in [0, {n}), got {t}")
        return t

    def plot(self, ax: Any = None, **kwargs: Any) -> Any:
        """Draw the result (needs the ``plot`` extra): shaded segments, outliers, the series.

        A thin wrapper of :func:`possibly.plotting.changepoint_plots.plot_result` (keyword
        arguments are passed on); the x-axis shows the input's time stamps when it had them,
        the y-axis its name (a pandas Series' ``name``) unless ``ylabel`` is given.
        Returns the Matplotlib Axes.
        """
        from possibly.plotting.changepoint_plots import plot_result

        if self.name is not None and kwargs.get("ylabel") is None:
            kwargs["ylabel"] = str(self.name)
        return plot_result(self, None, ax, **kwargs)

    def to_frame(self) -> Any:
        """A pandas DataFrame with one row per observation, indexed like the input.

        Columns: ``changepoint`` (a segment starts here, in the final MAP segmentation),
        ``change_possibility`` (the possibility that a segment starts at this observation, in
        hindsight: :attr:`change_possibility`), ``online_change_possibility`` (the same as seen
        right after the observation), ``outlier`` and ``outlier_score`` (``1 − discount``),
        ``segment_mean`` (E* of the MAP segment's parameter, online), ``discount``,
        ``log_consistency`` and, when the detector made the result, ``anomaly`` (the calibrated
        online anomaly signal, :attr:`anomaly`). With vector parameters ``segment_mean`` holds
        arrays.

        Examples
        --------
        >>> import pandas as pd, possibly as ps
        >>> y = pd.Series([0.0, 0.1, -0.1, 5.0, 5.1, 4.9],
        ...               index=pd.date_range("2024-01-01", periods=6, freq="D"))
        >>> frame = ps.ChangepointDetector(sigma=1.0, hazard=0.01).fit(y).to_frame()
        >>> frame["changepoint"].loc[lambda s: s].index.strftime("%m-%d").tolist()
        ['01-04']
        """
        import pandas as pd

        n = len(self.y)
        cp = np.zeros(n, dtype=bool)
        cp[self.changepoints] = True
        out = np.zeros(n, dtype=bool)
        out[self.outliers] = True
        mean = self.mean if self.mean.ndim == 1 else list(self.mean)
        index = self.index if self.index is not None else pd.RangeIndex(n)
        columns = {
            "changepoint": cp,
            "change_possibility": self.change_possibility,
            "online_change_possibility": np.exp(self.log_online_change_possibility),
            "outlier": out,
            "outlier_score": 1.0 - self.discount,
            "segment_mean": mean,
            "discount": self.discount,
            "log_consistency": self.log_consistency,
        }
        if self.anomaly is not None:
            columns["anomaly"] = self.anomaly
        return pd.DataFrame(columns, index=index)

    def to_xarray(self) -> Any:
        """The columns of :meth:`to_frame` as an xarray Dataset over ``time`` (the pandas
        index if there was one); a vector ``segment_mean`` over ``(time, component)``.

        Examples
        --------
        >>> import pandas as pd, possibly as ps
        >>> y = pd.Series([0.0, 0.1, -0.1, 5.0, 5.1, 4.9],
        ...               index=pd.date_range("2024-01-01", periods=6, freq="D"))
        >>> ds = ps.ChangepointDetector(sigma=1.0, hazard=0.01).fit(y).to_xarray()
        >>> ds["changepoint"].sel(time="2024-01-04").item()
        True
        """
        frame = self.to_frame()
        data: dict[str, tuple[np.ndarray, tuple[str, ...]]] = {
            name: (frame[name].to_numpy(), ()) for name in frame.columns}
        if self.mean.ndim > 1:
            data["segment_mean"] = (self.mean.reshape(len(self.mean), -1), ("component",))
        return per_step_dataset(data, self.index)

    def to_dict(self) -> dict[str, Any]:
        """Plain lists and numbers (JSON-serialisable; NaN becomes None)."""

        def floats(a: Any) -> Any:
            if np.ndim(a) > 1:
                return [floats(row) for row in a]
            return [None if math.isnan(v) else float(v) for v in a]

        p = self.params
        params: dict[str, Any] = {"sigma": p.sigma, "hazard": p.hazard,
                                  "forgetting": p.forgetting, "robust": p.robust,
                                  "tau": p.tau, "tol": p.tol, "merge_tol": p.merge_tol}
        if p.sigma is None or len(p.models) > 1:
            params["model"] = [repr(m) for m in p.models] if len(p.models) > 1 else repr(
                p.models[0])
        return {
            "params": params,
            "sigma_estimated": self.sigma_estimated,
            "outlier_level": self.outlier_level,
            "changepoints": self.changepoints.tolist(),
            "outliers": self.outliers.tolist(),
            "y": floats(self.y),
            "map_run_length": self.map_run_length.tolist(),
            "mean": floats(self.mean),
            "consistency": floats(self.consistency),
            "discount": floats(self.discount),
        }
