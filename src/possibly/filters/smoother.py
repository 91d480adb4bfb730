"""The possibilistic RTS smoother: a pure function of the model and the filtered states.

The backward pass keeps the discounts of the forward pass: it is the exact smoother of the
model with observation noise ``R / ρ_t`` (docs/math.md §2). Steps whose filtered state is in
information form (before every direction of the state is informed) use the same recursion in
natural parameters, ``smoothed_t = filtered_t × back-propagated(smoothed_{t+1} /
predicted_{t+1})``, exact with a singular ``Q``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from possibly.filters._common import (
    AutoCall,
    _covariance_or_inf,
    _inverse,
    _mv,
    _scale_exponent,
    _sym,
    _Transition,
    _unscale,
    compiled_module,
    numpy_work,
    state_dataset,
    state_frame,
)
from possibly.filters.filter_result import FilterResult
from possibly.filters.state_space import LinearGaussianModel

__all__ = ["SmootherResult", "smooth"]


@dataclass(frozen=True)
class SmootherResult:
    """Output of :func:`smooth`.

    Attributes
    ----------
    mean : ndarray, shape (..., T, n)
        E* of θ_t given all observations (the max-marginal mode).
    covariance : ndarray, shape (..., T, n, n)
    variance : ndarray, shape (..., T, n)
        Diagonal of ``covariance`` (a property; ``inf`` for a component not informed).
    filtered : FilterResult
        The forward pass, whose discounts the smoother keeps.
    """

    mean: np.ndarray
    covariance: np.ndarray
    filtered: FilterResult

    @property
    def variance(self) -> np.ndarray:
        """Variance of each component's max-marginal, the diagonal of ``covariance``."""
        return np.diagonal(self.covariance, axis1=-2, axis2=-1)

    @property
    def consistency(self) -> np.ndarray:
        return self.filtered.consistency

    @property
    def discount(self) -> np.ndarray:
        return self.filtered.discount

    def to_frame(self) -> Any:
        """The smoothed means and sds per step as a pandas DataFrame, indexed like the input,
        with the forward pass's consistency and discount (see ``FilterResult.to_frame``)."""
        fr = self.filtered
        return state_frame(self.mean, self.variance, fr.log_consistency, fr.discount,
                           fr.state_names, fr.index)

    def to_xarray(self) -> Any:
        """The smoothed means and variances as an xarray Dataset, with the forward pass's
        log-consistency and discount (the layout of ``FilterResult.to_xarray``).

        Examples
        --------
        >>> import pandas as pd, possibly as ps
        >>> ys = pd.Series([0.0, 1.1, 1.9], index=pd.date_range("2024-01-01", periods=3))
        >>> ds = ps.KalmanFilter(ps.filters.constant_velocity()).smooth(ys).to_xarray()
        >>> ds["mean"].sel(state="velocity").values.round(2)
        array([0.95, 0.95, 0.95])
        """
        fr = self.filtered
        return state_dataset(self.mean, self.variance, fr.log_consistency, fr.discount,
                             fr.state_names, fr.index)


def smooth(model: LinearGaussianModel, filtered: FilterResult, *,
           engine: str = "auto") -> SmootherResult:
    """Backward (RTS) pass over the stacked filtered and predicted states of a forward pass.

    Parameters
    ----------
    model : LinearGaussianModel
        The model the forward pass ran with.
    filtered : FilterResult
        From :meth:`possibly.KalmanFilter.filter` with ``keep="all"`` (the default).
    engine : {"auto", "numpy", "numba"}
        ``"numba"``: the steps in a compiled loop (needs numba; those in information form
        too for a time-invariant model);
        ``"numpy"``: batched numpy steps; ``"auto"`` (default): by the rule of
        :meth:`possibly.KalmanFilter.filter` (numpy for a process's small calls until the
        compiled pass is loaded or a budget of numpy work is spent). Both agree to about
        1e-12 where the model is well conditioned; the steps in information form (from a
        flat prior) and ill-conditioned models (a tiny ``R`` against ``Q``) round more, as
        the engines' filters do.

    Returns
    -------
    SmootherResult

    Examples
    --------
    >>> import numpy as np, possibly as ps
    >>> from possibly.filters import smooth
    >>> model = ps.filters.constant_velocity()
    >>> fr = ps.KalmanFilter(model).filter(np.array([0.0, 1.1, 1.9, 3.2, 30.0, 5.0]))
    >>> smooth(model, fr).mean[:, 0].round(2)
    array([0.03, 1.04, 2.04, 3.04, 4.05, 5.05])
    """
    if not isinstance(model, LinearGaussianModel):
        raise ValueError(f"model must be a LinearGaussianModel, got {type(model).__name__}")
    if not isinstance(filtered, FilterResult):
        raise ValueError(f"filtered must be a FilterResult, got {type(filtered).__name__}")
    fr = filtered
    f_mean, f_cov = fr.mean, fr._need("covariance")
    p_mean, p_cov = fr._need("predicted_mean"), fr._need("predicted_covariance")
    f_pre, p_pre = fr._information_part(0), fr._information_part(1)
    batch = f_mean.shape[:-2]
    T, n = f_mean.shape[-2:]
    if n != model.state_dim:
        raise ValueError(f"filtered has states of dimension {n}, the model {model.state_dim}")
    model._check_length(T)
    size = int(np.prod(batch))
    compiled = _compiled(engine, AutoCall(("smoother", n), numpy_work(T, size, n)))

    def time_major(a, ev):
        """``a`` (..., T, ·) as a contiguous, writeable float (T, size, ·) array: a view of
        the filter's own time-major storage (the one type the compiled pass is compiled for;
        a copy otherwise)."""
        # swapaxes: moveaxis(·, 1, 0) without its argument checks (a fixed cost per call)
        a = a.reshape((size,) + a.shape[a.ndim - ev:]).swapaxes(0, 1)
        flags = a.flags
        if flags.c_contiguous and flags.writeable and a.dtype == np.float64:
            return a  # the filter's storage: np.require's checks cost more than its work
        return np.require(a, np.float64, ("C", "W"))

    f_mean, f_cov, p_mean, p_cov = (time_major(f_mean, 2), time_major(f_cov, 3),
                                    time_major(p_mean, 2), time_major(p_cov, 3))
    f_pre, p_pre = time_major(f_pre, 3), time_major(p_pre, 3)
    kf = f_pre.shape[0]
    s_mean = np.empty_like(f_mean)
    s_cov = np.empty_like(f_cov)
    s_mean[-1] = f_mean[-1]
    s_cov[-1] = f_cov[-1]
    s_prec = f_pre[-1] if kf == T else None
    transitions = None if compiled is None else _transitions(model)
    # the steps in information form compiled too, for a time-invariant model
    information = None if compiled is None or model.time_varying else _information_kernel()
    t = T - 2
    while t >= 0:
        if t < kf and information is not None:
            prec = np.empty((size, n, n))
            if s_prec is not None:
                prec[...] = s_prec
            tr = model._transition(0)
            t_next = information.backward_information(
                f_mean, f_pre, p_mean, p_pre, s_mean, s_cov, prec, s_prec is None,
                np.ascontiguousarray(tr.F, dtype=float),
                np.ascontiguousarray(tr.G), np.ascontiguousarray(tr.Qg_inv), t,
                information.sizes(n, 1)[0])
            # where it stopped (a step for numpy's fallbacks), numpy resumes from its state
            s_prec = None if t_next == t and s_prec is None else prec
            information, t = None, t_next
            continue
        if t >= kf and compiled is not None:  # the covariance-form steps down to kf
            t = compiled.backward(f_mean, f_cov, p_mean, p_cov, transitions, t, kf,
                                  s_mean, s_cov, compiled.sizes(n))
            if t < kf:
                continue
            # P_{t+1|t} singular by rounding: this step in numpy, with its fallback
        tr = model._transition(t)
        if t >= kf:  # covariance form
            s_mean[t], s_cov[t] = _covariance_step(tr, f_mean[t], f_cov[t], p_mean[t + 1],
                                                   p_cov[t + 1], s_mean[t + 1], s_cov[t + 1])
            t -= 1
            continue
        if s_prec is None:  # smoothed t+1 is in covariance form (proper)
            s_prec = _sym(_inverse(s_cov[t + 1]))
        s_mean[t], s_prec = _information_step(tr, f_mean[t], f_pre[t], p_mean[t + 1],
                                              p_pre[t + 1], s_mean[t + 1], s_prec)
        s_cov[t] = _covariance_or_inf(s_prec)
        t -= 1

    def batch_major(a):
        a = a.swapaxes(0, 1)
        return a.reshape(batch + a.shape[1:])

    return SmootherResult(mean=batch_major(s_mean), covariance=batch_major(s_cov), filtered=fr)


def _compiled(engine: str, call: AutoCall) -> Any:
    """The compiled backward pass's module if ``engine`` selects it for ``call``, else None."""

    def load() -> Any:
        from possibly.filters import smoother_numba

        return smoother_numba

    return compiled_module(engine, load, call=call)


def _information_kernel() -> Any:
    """The compiled information-form steps (``kalman_numba.backward_information``, with the
    pseudo-inverses of the filter's compiled start)."""
    from possibly.filters import kalman_numba  # numba is there: the backward pass loaded

    return kalman_numba


def _transitions(model: LinearGaussianModel) -> np.ndarray:
    """The transition matrices ``(K, n, n)`` of the compiled backward pass: ``F`` of step
    ``t`` to ``t + 1`` is entry ``min(t, K - 1)``."""
    return np.ascontiguousarray(np.stack([tr.F for tr in model._transitions]), dtype=float)


def _covariance_step(tr: _Transition, f_mean: np.ndarray, f_cov: np.ndarray,
                     p_mean: np.ndarray, p_cov: np.ndarray, s_mean: np.ndarray,
                     s_cov: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The smoothed mean and covariance at ``t`` from the filtered ones at ``t`` and the
    predicted and smoothed ones at ``t + 1``, with the RTS gain ``G = P_t Fᵀ P_{t+1|t}⁻¹``."""
    fp = tr.F @ f_cov
    try:
        gain = np.swapaxes(np.linalg.solve(p_cov, fp), -1, -2)
    except np.linalg.LinAlgError:  # a covariance rounded to singular: its limit
        gain = np.swapaxes(_inverse(p_cov) @ fp, -1, -2)
    k = _scale_exponent(s_mean, p_mean)
    if k is None:
        mean = f_mean + _mv(gain, s_mean - p_mean)
    else:  # huge means: the difference in scaled form cannot overflow
        d = np.ldexp(s_mean, -k[..., None]) - np.ldexp(p_mean, -k[..., None])
        mean = f_mean + _unscale(_mv(gain, d), k)
    cov = _sym(f_cov + gain @ (s_cov - p_cov) @ np.swapaxes(gain, -1, -2))
    return mean, cov


def _information_step(tr: _Transition, f_mean: np.ndarray, f_pre: np.ndarray,
                      p_mean: np.ndarray, p_pre: np.ndarray, s_mean: np.ndarray,
                      s_prec: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The smoothed mean and precision at ``t`` in natural parameters (the filtered state at
    ``t`` times the back-propagated ratio of the smoothed and predicted ones at ``t + 1``),
    exact with a singular ``Q`` and a singular precision."""
    lam = s_prec - p_pre
    # the means enter linearly: scaled by a power of two when huge (docs/math.md §2)
    k = _scale_exponent(s_mean, p_mean, f_mean)
    sm, pm, fm = (m if k is None else np.ldexp(m, -k[..., None])
                  for m in (s_mean, p_mean, f_mean))
    h = _mv(s_prec, sm) - _mv(p_pre, pm)
    if tr.G.shape[1]:  # sup over the process noise in range(Q)
        lg = lam @ tr.G
        a = tr.Qg_inv + tr.G.T @ lg
        h = h - _mv(lg, np.linalg.solve(a, (h @ tr.G)[..., None])[..., 0])
        lam = lam - lg @ np.linalg.solve(a, np.swapaxes(lg, -1, -2))
    back = tr.Ft @ lam @ tr.F
    prec = _sym(f_pre + back)
    rhs = _mv(tr.Ft, h) - _mv(back, fm)
    return f_mean + _unscale(_mv(np.linalg.pinv(prec, hermitian=True), rhs), k), prec
