"""Segments on the log scale for strictly positive, heavy-tailed metrics (latency, sizes).

:class:`LogTrend` is :class:`~possibly.changepoint.PolynomialTrend` on ``x = log y``: a level
(or trend) of ``log y`` with normal noise, so a segment of ``y`` is log-normal, its noise
proportional to its level. It can compete, in one family, with the models on ``y``, because
its evidence is a density of ``y`` too (docs/choosing.md, "Positive metrics"):

* the integrated evidence of a run is the log of its (tempered) predictive density. A model
  on ``x = g(y)`` gives the density of ``x``; that of ``y`` is ``p_X(g(y)) g'(y)``. The models
  on ``y`` work in units of their scale ``s`` (``z = (y - loc) / s``, density ``p_Z(z) =
  s p_Y(y)``), this model in units of its own scale ``s_x`` on ``log y``; so the increment of
  each observation, taken with exponent γ, gets ``γ (log s - log s_x - log y)``, and every
  increment of the family is then ``γ log p_Y(y) + γ log s``, the same constant for all;
* the sup-based (profile) evidence has no such correction: a possibility is not a density and
  ``sup`` is invariant under a change of variable, but the profile increment is normalised by
  each model's own best value, which differs between scales by a term that depends on the
  data. This model therefore only takes ``evidence="integrated"`` (the default).

The consistency of an observation (and so its discount) is a possibility: it needs no
correction (``π_Y(y) = π_X(log y)``). The outliers in hindsight are judged on ``log y``.
"""

from __future__ import annotations

import math
from dataclasses import KW_ONLY, dataclass, replace
from typing import Any

import numpy as np

from possibly.changepoint.models.segment_model import CompiledKernel, Runs, as_series
from possibly.changepoint.models.trend import (
    TREND_NAMES,
    PolynomialTrend,
    TrendObservation,
    automatic_prior,
)

__all__ = ["LogTrend"]


def _positive_series(y: Any) -> np.ndarray:
    """``y`` as a float series whose observed values are all ``> 0`` (NaN: missing);
    ValueError naming ``y`` otherwise."""
    arr = as_series(y)
    observed = arr[~np.isnan(arr)]
    if observed.size and not (observed > 0).all():
        bad = float(observed[~(observed > 0)][0])
        raise ValueError(f"y must be > 0 where observed for a model on log y (LogTrend), got "
                         f"{bad!r}")
    return arr


@dataclass(frozen=True)
class LogTrend(PolynomialTrend):
    """:class:`~possibly.changepoint.PolynomialTrend` on ``log y``, for series ``> 0``.

    Parameters
    ----------
    degree : int
        0 (a constant level of ``log y``), 1 or 2, as :class:`PolynomialTrend`.
    reference_scale : float, optional
        The scale ``s`` of the models on ``y`` it competes with (their
        ``automatic_prior(y).scale``), ``> 0``; with ``prior`` (set on ``log y``), needed for
        streaming. None: both set by ``fit`` from the whole series.

    Notes
    -----
    The other settings are those of :class:`PolynomialTrend` (``prior`` is that of
    ``log y``). Runs on the numpy engine (no compiled kernel). ``fitted`` returns the fit of ``y``
    (``exp`` of the fit of ``log y``) and no band (NaN): the band is not symmetric on ``y``.

    Examples
    --------
    >>> import numpy as np, possibly as ps
    >>> from possibly.changepoint import LogTrend, model_family
    >>> rng = np.random.default_rng(1)
    >>> y = np.exp(rng.normal(0.0, 0.5, 400) + np.r_[np.zeros(200), np.full(200, 1.5)])
    >>> det = ps.ChangepointDetector(model=model_family() + [LogTrend(0)], forgetting=1.0)
    >>> res = det.fit(y)
    >>> res.changepoints.tolist(), res.segment_model_names
    ([200], ['log level', 'log level'])
    """

    _: KW_ONLY
    reference_scale: float | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.evidence != "integrated":
            raise ValueError(f"LogTrend needs evidence='integrated' (the profile evidence of "
                             f"models on log y and on y cannot be compared), got "
                             f"{self.evidence!r}")
        if self.reference_scale is not None and not (
                isinstance(self.reference_scale, (int, float, np.integer, np.floating))
                and not isinstance(self.reference_scale, bool)
                and math.isfinite(self.reference_scale) and self.reference_scale > 0):
            raise ValueError(f"reference_scale must be a finite number > 0 (the scale of the "
                             f"models on y), got {self.reference_scale!r}")

    @property
    def name(self) -> str:
        return "log " + TREND_NAMES[self.degree]

    @property
    def takes_prior_on_y(self) -> bool:
        return False  # its prior is on log y

    @property
    def resolved(self) -> bool:
        return self.prior is not None and self.reference_scale is not None

    def resolve(self, y: np.ndarray) -> LogTrend:
        if self.resolved:
            return self
        y = _positive_series(y)
        return replace(self, prior=self.prior or automatic_prior(np.log(y)),
                       reference_scale=self.reference_scale or automatic_prior(y).scale)

    def check_series(self, y: Any) -> np.ndarray:
        return _positive_series(y)

    def _z(self, y: Any) -> float:
        y = float(y)
        if not y > 0:
            raise ValueError(f"y must be > 0 for a model on log y (LogTrend), got {y!r}")
        prior = self._prior()
        return (math.log(y) - prior.loc) / prior.scale

    def log_jacobian(self, z: Any) -> Any:
        """``log s - log s_x - log y`` at the standardised ``z = (log y - loc) / s_x``: what
        turns the density of ``z`` into that of ``(y - ·) / s`` (module docstring)."""
        prior = self._prior()
        if self.reference_scale is None:
            raise ValueError("LogTrend needs reference_scale to stream (module docstring)")
        return (math.log(self.reference_scale) - math.log(prior.scale)
                - (prior.loc + prior.scale * np.asarray(z, dtype=np.float64)))

    def update(self, prepared: TrendObservation, gamma: float
               ) -> tuple[np.ndarray, Runs]:
        incr, new = super().update(prepared, gamma)
        return incr + gamma * self.log_jacobian(prepared.z), new

    def estimate(self, runs: Runs) -> np.ndarray:
        """The level of ``y`` (``exp`` of E* of the level of ``log y``: a median)."""
        return np.exp(super().estimate(runs))

    def compiled_kernel(self) -> CompiledKernel | None:
        return None

    def outlying(self, y: np.ndarray, discount: np.ndarray) -> np.ndarray:
        return super().outlying(np.log(_positive_series(y)), discount)

    def outlying_segments(self, y: np.ndarray, discount: np.ndarray, bounds: np.ndarray,
                          compiled: bool | None = None) -> np.ndarray:
        return super().outlying_segments(np.log(_positive_series(y)), discount, bounds,
                                         compiled)

    def fitted(self, y: Any, weights: Any, forgetting: float = 1.0, alpha: float = 0.1
               ) -> tuple[np.ndarray, np.ndarray]:
        fit, half = super().fitted(np.log(_positive_series(y)), weights, forgetting, alpha)
        return np.exp(fit), np.full(fit.shape, np.nan)
