"""The paper's segment model: a piecewise-constant normal mean with known noise scale σ.

:class:`NormalMean` is the model of the paper's §5.3, with the evidence floor of the other
models by default (``outliers="paper"`` is the paper's recursion exactly). Its compiled kernel
(:meth:`NormalMean.compiled_kernel`) is written here, next to the numpy methods, with the same
floating-point expressions in the same order, so that both engines give bit-identical results.
"""

from __future__ import annotations

import math
from dataclasses import KW_ONLY, dataclass, replace
from typing import Any, NamedTuple

import numpy as np

from possibly.changepoint.models.quantisation import ROUNDING_SD, quantisation_step
from possibly.changepoint.models.segment_model import (
    DEFAULT_OUTLIER_COST,
    CompiledKernel,
    KernelFunctions,
    Runs,
    SegmentModel,
    as_series,
    real_scalar,
)

__all__ = ["MAX_SIGMA", "MIN_SIGMA", "NormalMean", "estimate_sigma"]

#: accepted range of the noise scale σ of :class:`NormalMean`: σ² and 1/σ² stay finite and
#: normal, with room for the squared residuals of observations up to MAX_MAGNITUDE
MIN_SIGMA = 1e-100
MAX_SIGMA = 1e100
#: NormalMean's outlier handling: the evidence floor, or the paper's recursion (none)
OUTLIER_RULES = ("floor", "paper")


def estimate_sigma(y: Any) -> float:
    """Robust noise scale: ``1.4826 · MAD(first differences) / √2``, NaNs skipped.

    Differencing removes the piecewise-constant level (a jump only moves one difference) and
    the median ignores outliers; ``1.4826 · MAD`` is consistent for the normal standard deviation
    and a difference of two independent noises has variance ``2σ²``. On a quantised series
    (:func:`~possibly.changepoint.models.quantisation.quantisation_step`: step δ, e.g. whole
    percent) σ is at least ``δ / √12``, the sd of a rounding error: more than half the
    differences can be 0 there.

    Examples
    --------
    >>> y = np.random.default_rng(0).normal(0.0, 2.0, 5000)
    >>> round(estimate_sigma(y), 1)
    2.0
    >>> y = [3.0, 3.0, 3.0, 3.0, 2.0, 3.0, 3.0, 3.0, 3.0, 4.0, 3.0, 3.0, 3.0]
    >>> round(estimate_sigma(y), 4)  # the differences' MAD is 0: the rounding sd 1 / √12
    0.2887
    """
    y = as_series(y)
    d = np.diff(y[~np.isnan(y)])
    if d.size < 2:
        raise ValueError("sigma='auto' needs at least 3 observed (non-NaN) values; "
                         "pass sigma=<float> instead")
    mad = float(np.median(np.abs(d - np.median(d))))
    sigma = 1.482602218505602 * mad / math.sqrt(2.0)
    step = quantisation_step(y)
    if step > 0.0:
        sigma = max(sigma, ROUNDING_SD * step)
    if not sigma > 0.0:
        raise ValueError("sigma='auto' failed: the first differences have zero median absolute "
                         "deviation (constant or heavily tied series); pass sigma=<float>")
    if not MIN_SIGMA <= sigma <= MAX_SIGMA:
        raise ValueError(f"sigma='auto' gave {sigma:g}, outside the accepted range "
                         f"[{MIN_SIGMA:g}, {MAX_SIGMA:g}]: rescale y")
    return sigma


def check_sigma(sigma: Any) -> float:
    """σ as a float in ``[MIN_SIGMA, MAX_SIGMA]``; ValueError naming sigma otherwise."""
    sigma = real_scalar("sigma", sigma)
    if not MIN_SIGMA <= sigma <= MAX_SIGMA:
        raise ValueError(f"sigma must be in [{MIN_SIGMA:g}, {MAX_SIGMA:g}] (rescale the data "
                         f"otherwise), got {sigma!r}")
    return sigma


class MeanObservation(NamedTuple):
    """:meth:`NormalMean.prepare`: the residual ``d = y - μ_r`` of every run."""

    runs: Runs
    y: Any
    d: np.ndarray


@dataclass(frozen=True)
class NormalMean(SegmentModel):
    """Piecewise-constant mean with normal noise of known scale σ (the paper's §5.3 model).

    Given its run, the segment mean θ has the normal possibility ``N̄(θ; μ_r, λ_r)``; a new
    segment starts uninformative (``λ = 0``). Per observation ``y`` (docs/math.md §6):

    * forget: ``λ_r ← ρ λ_r``;
    * consistency: ``log sup_θ f_r L = −½ (y − μ_r)² λ_r / (1 + λ_r σ²)``;
    * update with ``L^γ`` (noise variance ``σ²/γ``): ``k = γ/σ²``, gain ``k/(λ_r + k)``,
      increment ``−½ (y − μ_r)² λ_r gain``, ``μ_r += gain (y − μ_r)``, ``λ_r += k``;
    * outlier floor (``outliers="floor"``, the default, as the default models): the increment
      never falls below ``−outlier_cost``, and a run whose increment is floored is left
      unchanged. The paper's discount alone keeps at least ``γ = √h`` of any observation, so
      a gross spike kills every established run and becomes a pair of change points; with
      the floor a lone spike of any size costs a run at most ``outlier_cost`` (``|log h|`` at
      the default hazard), no more than the change point that would isolate it, and is an
      outlier. ``outliers="paper"`` is the paper's recursion exactly (its reproduction pins
      it).

    The detector runs this model with a compiled (numba) engine when it is installed; both
    engines give bit-identical results.

    Parameters
    ----------
    sigma : "auto" or float
        Noise scale within a segment, in ``[1e-100, 1e100]``; ``"auto"`` is estimated from the
        whole series by :func:`estimate_sigma` (MAD of first differences / √2) when the
        detector's ``fit`` is called.
    outliers : {"floor", "paper"}
        ``"floor"``: the evidence floor above; ``"paper"``: the paper's §5.3 recursion, no
        floor.
    outlier_cost : float, optional
        The floor, ``> 0``, with ``outliers="floor"`` only; default ``|log 2.5e-3|``, the
        default hazard's.

    Examples
    --------
    >>> import possibly as ps
    >>> from possibly.changepoint import NormalMean
    >>> res = ps.ChangepointDetector(model=NormalMean(1.0), hazard=0.01).fit(
    ...     [0.1, -0.2, 0.0, 0.2, 8.0, 8.1, 7.9, 8.2])
    >>> res.changepoints.tolist(), res.segment_models
    ([4], [0, 0])
    """

    sigma: float | str = "auto"
    _: KW_ONLY
    outliers: str = "floor"
    outlier_cost: float | None = None
    dim = 2.0  # (θ, r): not a field

    def __post_init__(self) -> None:
        if isinstance(self.sigma, str):
            if self.sigma != "auto":
                raise ValueError(f"sigma must be 'auto' or a number in [{MIN_SIGMA:g}, "
                                 f"{MAX_SIGMA:g}], got {self.sigma!r}")
        else:
            object.__setattr__(self, "sigma", check_sigma(self.sigma))
        if not (isinstance(self.outliers, str) and self.outliers in OUTLIER_RULES):
            raise ValueError(f"outliers must be 'floor' (the evidence floor outlier_cost) or "
                             f"'paper' (the paper's recursion), got {self.outliers!r}")
        if self.outliers == "paper":
            if self.outlier_cost is not None:
                raise ValueError(f"outlier_cost is the floor of outliers='floor'; the paper's "
                                 f"recursion (outliers='paper') has none: drop one of them, got "
                                 f"outlier_cost={self.outlier_cost!r}")
            return
        cost = DEFAULT_OUTLIER_COST if self.outlier_cost is None else \
            real_scalar("outlier_cost", self.outlier_cost)
        if not cost > 0.0:
            raise ValueError(f"outlier_cost must be a finite number > 0, got "
                             f"{self.outlier_cost!r}")
        object.__setattr__(self, "outlier_cost", cost)

    @property
    def floor(self) -> float:
        """The evidence floor: ``outlier_cost``, or ``inf`` for the paper's recursion."""
        return math.inf if self.outlier_cost is None else self.outlier_cost

    @property
    def name(self) -> str:
        return "level"

    @property
    def resolved(self) -> bool:
        return not isinstance(self.sigma, str)

    def resolve(self, y: np.ndarray) -> NormalMean:
        return self if self.resolved else replace(self, sigma=estimate_sigma(y))

    def _s2(self) -> float:
        if isinstance(self.sigma, str):
            raise ValueError("sigma='auto' needs the whole series: call fit(y) first, or "
                             "construct the detector with sigma=<float> to stream")
        return self.sigma * self.sigma

    def check_series(self, y: Any) -> np.ndarray:
        return as_series(y)

    def new_runs(self, n: int) -> Runs:
        return {"mean": np.zeros(n), "precision": np.zeros(n)}

    def forget(self, runs: Runs, rho: float) -> Runs:
        return {"mean": runs["mean"], "precision": runs["precision"] * rho}

    def prepare(self, runs: Runs, y: Any) -> MeanObservation:
        return MeanObservation(runs, y, y - runs["mean"])

    def log_consistency(self, prepared: MeanObservation) -> np.ndarray:
        s2 = self._s2()
        lam = prepared.runs["precision"]
        d = prepared.d
        # 1 / (1/λ + σ²) written so that λ = 0 gives 0 (uninformative: no penalty); an
        # overflow to -inf is the right limit (an impossible run), so it is not warned about
        with np.errstate(over="ignore"):
            return -(0.5 * (d * d) * (lam / (1.0 + lam * s2)))

    def update(self, prepared: MeanObservation, gamma: float
               ) -> tuple[np.ndarray, Runs]:
        k = gamma / self._s2()  # precision of the discounted observation
        lam, mu = prepared.runs["precision"], prepared.runs["mean"]
        d = prepared.d
        gain = k / (lam + k)
        with np.errstate(over="ignore"):  # -inf: an impossible run (see log_consistency)
            incr = -(0.5 * (d * d) * (lam * gain))
        if self.outlier_cost is None:  # the paper's recursion
            return incr, {"mean": mu + gain * d, "precision": lam + k}
        # the compiled kernel evaluates the same expressions (kernel_update)
        floor = -self.outlier_cost
        floored = incr < floor
        return np.where(floored, floor, incr), {
            "mean": np.where(floored, mu, mu + gain * d),
            "precision": np.where(floored, lam, lam + k)}

    def estimate(self, runs: Runs) -> np.ndarray:
        lam = runs["precision"]
        return np.where(lam > 0.0, runs["mean"], np.nan)

    def indistinguishable(self, runs: Runs, tol: float) -> np.ndarray:
        # same precision within tol (relative) and means within tol standard units; the
        # compiled kernel evaluates the same expressions (kernel_indistinguishable)
        lam, mu = runs["precision"], runs["mean"]
        lmax = np.maximum(lam[:-1], lam[1:])
        dm = mu[1:] - mu[:-1]
        with np.errstate(over="ignore"):  # inf: far apart, not merged
            return (np.abs(lam[1:] - lam[:-1]) <= tol * lmax) & ((dm * dm) * lmax <= tol * tol)

    def outlying(self, y: np.ndarray, discount: np.ndarray) -> np.ndarray:
        obs = y[~np.isnan(y)]
        if not obs.size:
            return np.zeros(len(y), dtype=bool)
        return np.abs(y - np.median(obs)) > 3.0 * float(self.sigma)  # NaN compares False

    def compiled_kernel(self) -> CompiledKernel | None:
        """The kernel of this class (a subclass that changes the recursion gets none).

        Examples
        --------
        >>> kernel = NormalMean(2.0).compiled_kernel()
        >>> kernel.params.tolist()               # σ² and the evidence floor
        [4.0, 5.991464547107982]
        >>> kernel.pack({"mean": np.array([1.5]), "precision": np.array([0.25])}).tolist()
        [[1.5, 0.25]]
        """
        if type(self) is not NormalMean:
            return None
        s2 = math.nan if isinstance(self.sigma, str) else self.sigma * self.sigma
        return CompiledKernel(KERNEL, np.array([s2, self.floor]), pack_runs, unpack_runs)

    def __repr__(self) -> str:
        extra = ""
        if self.outliers != "floor":
            extra = f", outliers={self.outliers!r}"
        elif self.outlier_cost != DEFAULT_OUTLIER_COST:
            extra = f", outlier_cost={self.outlier_cost!r}"
        return f"NormalMean(sigma={self.sigma!r}{extra})"




# ----------------------------------------------------------------------------------------------
# the compiled kernel (KernelFunctions): one run is the row (mean, precision); params are
# (σ², floor), floor = inf for the paper's recursion


def pack_runs(runs: Runs) -> np.ndarray:
    """NormalMean runs as rows ``(mean, precision)``."""
    rows = np.empty((len(runs["mean"]), 2))
    rows[:, 0], rows[:, 1] = runs["mean"], runs["precision"]
    return rows


def unpack_runs(rows: np.ndarray) -> Runs:
    """The inverse of :func:`pack_runs`."""
    return {"mean": rows[:, 0].copy(), "precision": rows[:, 1].copy()}


def kernel_prepare(params: np.ndarray, y: float) -> float:
    return y


def kernel_new_run(params: np.ndarray, runs: np.ndarray, j: int) -> None:
    runs[j, 0] = 0.0
    runs[j, 1] = 0.0


def kernel_forget(params: np.ndarray, runs: np.ndarray, j: int, rho: float,
                  work: np.ndarray) -> None:
    runs[j, 1] = runs[j, 1] * rho


def kernel_log_consistency(params: np.ndarray, runs: np.ndarray, j: int, y: float) -> float:
    d = y - runs[j, 0]
    lam = runs[j, 1]
    return -(0.5 * (d * d) * (lam / (1.0 + lam * params[0])))


def kernel_update(params: np.ndarray, runs: np.ndarray, j: int, y: float, gamma: float,
                  work: np.ndarray) -> float:
    k = gamma / params[0]
    d = y - runs[j, 0]
    lam = runs[j, 1]
    gain = k / (lam + k)
    incr = -(0.5 * (d * d) * (lam * gain))
    floor = params[1]
    if incr < -floor:  # never with floor = inf (the paper's recursion)
        return -floor
    runs[j, 0] = runs[j, 0] + gain * d
    runs[j, 1] = lam + k
    return incr


def kernel_estimate(params: np.ndarray, runs: np.ndarray, j: int) -> float:
    return runs[j, 0] if runs[j, 1] > 0.0 else math.nan


def kernel_indistinguishable(params: np.ndarray, runs: np.ndarray, j: int, tol: float) -> bool:
    lam0, lam1 = runs[j, 1], runs[j + 1, 1]
    lmax = lam1 if lam1 > lam0 else lam0
    dm = runs[j + 1, 0] - runs[j, 0]
    return abs(lam1 - lam0) <= tol * lmax and (dm * dm) * lmax <= tol * tol


KERNEL = KernelFunctions(2, kernel_prepare, kernel_new_run, kernel_forget,
                         kernel_log_consistency, kernel_update, kernel_estimate,
                         kernel_indistinguishable)
