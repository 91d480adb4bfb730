"""The one result type of the Gaussian filters, and the warning when most of a series is
discounted.

:class:`FilterResult` holds, per step, the filtered mean and (co)variance, the predicted mean
and covariance, what each observation did (``log_consistency``, ``discount``) and the final
state; :meth:`FilterResult.to_frame` and :meth:`FilterResult.to_xarray` keep a pandas input's
index. A filter with more per-step output subclasses it (the learned noise scale's
:class:`~possibly.filters.noise_scale.NoiseScaleResult`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from possibly.filters._common import _inverse, _sym, state_dataset, state_frame
from possibly.inference import discount

__all__ = [
    "DISCOUNTED_BELOW",
    "MOSTLY_DISCOUNTED",
    "FilterResult",
    "MostlyDiscountedWarning",
    "discounted_fraction",
    "warn_if_mostly_discounted",
]


#: an observation whose discount is below this is counted as discounted: it keeps less than a
#: tenth of its weight (the paper's threshold τ, and ``kalman_many``'s ``outlier_level``)
DISCOUNTED_BELOW = 0.1


#: more than this fraction of a series' observations discounted draws a warning
MOSTLY_DISCOUNTED = 0.5


class MostlyDiscountedWarning(UserWarning):
    """Most observations of a series were discounted: the model does not fit the data.

    Under the model an inlier is rarely discounted below 0.1 (probability 5.6e-4 for a 1-D
    constant-velocity track with the defaults, 0.03 with the paper's ``γ = c^(1/d)`` and
    ``dim=1``), and no robust filter can tell inliers from outliers once the outliers are the
    majority; so when more than half of a series is discounted, the usual cause is the noise
    scale ``R`` (e.g. given in other units than the data). The message says what to do for
    the filter that warns: for the Kalman filters, set ``R`` from the data
    (:func:`possibly.filters.constant_velocity_noise`) or learn its scale
    (``learn_noise_scale=True``); for the extended and unscented filters, check ``R`` and ``Q``
    in the data's units. The fraction is ``result.discounted_fraction``.
    """


#: what :func:`warn_if_mostly_discounted` advises by default (the Kalman filters')
_KALMAN_ADVICE = ("the model does not fit the data, most likely its noise scale R (in other "
                 "units than the data?): set it from the data "
                 "(possibly.filters.constant_velocity_noise) or learn its scale "
                 "(learn_noise_scale=True)")


def discounted_fraction(discount: Any) -> np.ndarray:
    """Fraction of the observed steps (discount not NaN) whose discount is below 0.1, along
    the last (time) axis; 0 for a series with no observation.

    Examples
    --------
    >>> import numpy as np
    >>> from possibly.filters.filter_result import discounted_fraction
    >>> float(discounted_fraction([1.0, 0.0, np.nan, 0.05, 1.0]))
    0.5
    """
    d = np.asarray(discount, dtype=float)
    observed = (~np.isnan(d)).sum(-1)
    low = (np.nan_to_num(d, nan=1.0) < DISCOUNTED_BELOW).sum(-1)
    return np.where(observed > 0, low / np.maximum(observed, 1), 0.0)


def warn_if_mostly_discounted(discount: Any, stacklevel: int = 3,
                              advice: str = _KALMAN_ADVICE) -> None:
    """Emit a :class:`MostlyDiscountedWarning` when some series of ``discount`` (time on the
    last axis) has more than half its observations discounted below 0.1; ``advice``: what the
    message tells the caller to do (default: the Kalman filters' advice).

    Examples
    --------
    >>> import warnings
    >>> from possibly.filters.filter_result import warn_if_mostly_discounted
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_if_mostly_discounted([1.0, 0.0, 0.0, 1e-5])
    >>> print(caught[0].message)  # doctest: +ELLIPSIS
    3 of 4 observations (75%) were discounted below 0.1: the model does not fit the data...
    """
    frac = np.atleast_1d(discounted_fraction(discount))
    bad = frac > MOSTLY_DISCOUNTED
    if not bad.any():
        return
    if frac.size == 1:
        d = np.asarray(discount, dtype=float).reshape(-1)
        n = int((~np.isnan(d)).sum())
        what = (f"{round(float(frac[0]) * n)} of {n} observations ({float(frac[0]):.0%}) were "
                f"discounted below {DISCOUNTED_BELOW:g}")
    else:
        what = (f"{int(bad.sum())} of {frac.size} series have most of their observations "
                f"discounted below {DISCOUNTED_BELOW:g} (up to {float(frac.max()):.0%})")
    warnings.warn(f"{what}: {advice}", MostlyDiscountedWarning, stacklevel=stacklevel)


@dataclass(frozen=True)
class FilterResult:
    """Output of every Gaussian filter (:class:`~possibly.filters.kalman.KalmanFilter`, with or
    without a learned noise scale, and the extended and unscented filters): one entry per time
    step ``t`` (axis ``-2``/``-3``).

    Fields not asked for with ``keep`` are None; ``mean`` is always kept.

    Attributes
    ----------
    mean : ndarray, shape (..., T, n)
        E* of the filtered possibility function of θ_t given y_1..y_t.
    variance : ndarray, shape (..., T, n)
        Diagonal of ``covariance`` (``inf`` for a component not yet informed).
    covariance : ndarray, shape (..., T, n, n)
        V*; while some direction is not yet informed, ``inf`` off the diagonal and on it the
        variance of each component's max-marginal (``inf`` for a component not informed).
    log_consistency, discount : ndarray, shape (..., T)
        As in :class:`KalmanInfo`; NaN at missing observations.
    gamma : ndarray, shape (..., T)
        ``c ** (1 / dim)`` (a property, computed from ``log_consistency``).
    predicted_mean : ndarray, shape (..., T, n)
        E* of θ_t given y_1..y_{t-1} (the prior at t = 0).
    predicted_covariance : ndarray, shape (..., T, n, n)
    state_names : tuple of str
        Names of the state components (from the model).
    index : pandas.Index or None
        The index of a pandas input (kept by :meth:`to_frame`).
    final : KalmanState or None
        The state after the last observation (to continue filtering with ``step``; the
        filter's own state type, e.g. a NoiseScaleState for a learned noise scale). After a
        series that ends during the robust start (its first 14 steps), the
        :class:`~possibly.filters.kalman.KalmanFilter` (without a learned scale) and the
        extended and unscented filters keep the leading hypothesis' state, not the mixture:
        continuing with ``step`` from it runs the plain recursion, which can differ from
        filtering the whole series (where the start could still reject one of the first
        observations). With a learned noise scale ``final`` is then the start's state itself,
        and continuing with ``step`` equals filtering the whole series.
    """

    mean: np.ndarray
    variance: np.ndarray | None
    covariance: np.ndarray | None
    log_consistency: np.ndarray
    discount: np.ndarray
    predicted_mean: np.ndarray | None
    predicted_covariance: np.ndarray | None
    state_names: tuple[str, ...] = ()
    dim: float = 1.0
    index: Any = field(default=None, repr=False)
    final: Any = field(default=None, repr=False)
    # exact precisions of the first steps, run in information form (filtered, predicted),
    # shape (..., k, n, n) each: what the smoother needs where covariances are inf
    _information: tuple[np.ndarray, np.ndarray | None] | None = field(default=None,
                                                                     repr=False)

    @property
    def consistency(self) -> np.ndarray:
        """``c = exp(log_consistency)`` in [0, 1] (NaN at missing observations)."""
        return np.exp(self.log_consistency)

    @property
    def discounted_fraction(self) -> np.ndarray:
        """Per series (shape ``...``), the fraction of observed steps discounted below 0.1
        (:func:`discounted_fraction`); above 0.5, :meth:`KalmanFilter.filter` warns
        (:class:`MostlyDiscountedWarning`)."""
        return discounted_fraction(self.discount)

    @property
    def gamma(self) -> np.ndarray:
        """``γ = c ** (1 / dim)``, the discount before any threshold (NaN where missing)."""
        return discount(self.log_consistency, self.dim, validate=False)

    @property
    def precision(self) -> np.ndarray:
        """Precision of each filtered state (finite also before every direction is informed)."""
        return _precision(self._need("covariance"), self._information_part(0))

    @property
    def predicted_precision(self) -> np.ndarray:
        return _precision(self._need("predicted_covariance"), self._information_part(1))

    def _need(self, name: str) -> np.ndarray:
        value = getattr(self, name)
        if value is None:
            raise ValueError(f"this result does not hold {name}: filter with keep='all'")
        return value

    def _information_part(self, i: int) -> np.ndarray:
        part = None if self._information is None else self._information[i]
        if part is None:
            raise ValueError("this result does not hold the precisions: filter with keep='all'")
        return part

    def _names(self) -> tuple[str, ...]:
        return tuple(self.state_names) or tuple(f"x{j}" for j in range(self.mean.shape[-1]))

    def _extra(self) -> dict[str, np.ndarray]:
        """Further per-step arrays ``(..., T)`` of a subclass: columns of :meth:`to_frame`
        and variables of :meth:`to_xarray`."""
        return {}

    def to_frame(self) -> Any:
        """The result as a pandas DataFrame, indexed like a pandas input.

        Columns: the filtered mean of each state component (named after the model's state
        names, e.g. ``position, velocity``), ``<name>_sd`` (when variances were kept),
        ``log_consistency``, ``consistency`` and ``discount``. Index: that of a pandas input
        (a DatetimeIndex stays one), else a RangeIndex ``step``; a batch gets a leading
        ``series`` level (flattened batch position).

        Examples
        --------
        >>> import numpy as np, pandas as pd, possibly as ps
        >>> ys = pd.Series([0.0, 1.1, 1.9, 30.0, 4.1],
        ...                index=pd.date_range("2024-01-01", periods=5, freq="D"))
        >>> frame = ps.KalmanFilter(ps.filters.constant_velocity()).filter(ys).to_frame()
        >>> frame[["position", "velocity", "discount"]].round(2)
                    position  velocity  discount
        2024-01-01      0.00      0.00       1.0
        2024-01-02      1.10      1.10       1.0
        2024-01-03      1.95      0.95       1.0
        2024-01-04      2.90      0.95       0.0
        2024-01-05      4.06      1.01       1.0
        >>> frame.columns[2:].tolist()
        ['position_sd', 'velocity_sd', 'log_consistency', 'consistency', 'discount']
        """
        return state_frame(self.mean, self.variance, self.log_consistency, self.discount,
                           self._names(), self.index, self._extra())

    def to_xarray(self) -> Any:
        """The result as an xarray Dataset (needs the ``xarray`` extra).

        Dimensions ``series_0, ...`` (batch), ``time`` (the pandas index if there was one)
        and ``state`` (the state names); variables ``mean``, ``variance``,
        ``log_consistency``, ``discount`` (those kept).

        Examples
        --------
        >>> import pandas as pd, possibly as ps
        >>> ys = pd.Series([0.0, 1.1, 1.9], index=pd.date_range("2024-01-01", periods=3))
        >>> ds = ps.KalmanFilter(ps.filters.constant_velocity()).filter(ys).to_xarray()
        >>> dict(ds["mean"].sizes), ds["time"].dt.day.values.tolist()
        ({'time': 3, 'state': 2}, [1, 2, 3])
        """
        return state_dataset(self.mean, self.variance, self.log_consistency, self.discount,
                             self._names(), self.index, self._extra())


def _precision(cov: np.ndarray, prefix: np.ndarray) -> np.ndarray:
    k = prefix.shape[-3]
    rest = _sym(_inverse(cov[..., k:, :, :]))
    return np.concatenate([prefix, rest], axis=-3)

