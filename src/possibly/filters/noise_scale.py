"""Robust Kalman filter with the observation noise known up to a scale learned online.

Model: ``y_t = H θ_t + v_t``, ``v_t ~ N(0, R₀ / λ)`` with ``R₀`` given and the precision scale
``λ`` unknown (``Q`` is not scaled). The state is a normal possibility function of θ and a
gamma possibility ``Ḡ(λ; α, β)`` whose mode ``λ̂ = α / β`` sets the noise ``R₀ / λ̂`` of the
Kalman step. Each observation's consistency with (θ, λ) comes from the ω split on the joint;
θ gets the robust Kalman update and the scale its own discounted ω-split update, made
Fisher-consistent by a factor ``κ`` read from a table over ``log α``; the prior of the scale is
tempered while the data say the noise is smaller; and a start over scale hypotheses
(10⁻⁴ … 10⁴ times the prior's) keeps a prior scale far too small from being read as outliers.
Derivations and checks: docs/math.md §8. :class:`possibly.KalmanFilter` with
``learn_noise_scale=True`` runs this recursion (:class:`NoiseScaleEngine`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, NamedTuple

import numpy as np

from possibly._tree import tree_map, tree_take
from possibly.families.multivariate_normal import MultivariateNormal
from possibly.filters._common import (
    COVERAGE,
    _check_coverage,
    _check_dim_tau,
    _covariance_or_inf,
    _maybe_covariance_form,
    _reference_table,
    _start_state_error,
    kernel_arrays,
)
from possibly.filters.filter_result import FilterResult, warn_if_mostly_discounted
from possibly.filters.kalman_state import KalmanInfo, KalmanState
from possibly.filters.robust_start import (
    MAX_OUTLIERS,
    WINDOW,
    K,
    KalmanStartState,
    start_hypotheses,
    start_init,
    start_step,
    ties,
)
from possibly.filters.smoother import SmootherResult, smooth
from possibly.frames import time_labels
from possibly.inference import discount, inlier_log_consistency, relative_log_consistency
from possibly.validation import (
    as_numbers,
    check_bool,
    check_observations,
    check_positive,
    check_unit_interval,
)

__all__ = ["NoiseScaleEngine", "NoiseScaleResult", "NoiseScaleState", "kappa_direct"]

#: engine="auto" runs this filter's compiled loop for batches up to this size (numpy's batched
#: step wins beyond: benchmarks/bench_noise_scale.py)
_AUTO_NUMBA_MAX_BATCH = 16
#: numpy's steps of this filter cost about this many times the Kalman filter's, per step and
#: per series (the scale's start hypotheses, its κ): the weight of their work for "auto"
_NUMPY_WORK_WEIGHT = 8.0
#: below this ρ λ̂ the observation is dropped (its gain underflows anyway)
_NEGLIGIBLE = 1e-12
#: the scale's prior is tempered until the data's shape parameter is this many times its own
_PRIOR_OUTWEIGHED = 20.0
#: the scale's start hypotheses: the prior's noise scale times these factors, run side by side
#: for the first _SCALE_WINDOW steps (docs/math.md §8); the prior's own first, then the nearest
#: (ties go to the first)
_SCALE_FACTORS = 10.0 ** np.array([0, 1, -1, 2, -2, 3, -3, 4, -4])
_SCALE_WINDOW = 30


class _Forward(NamedTuple):
    """The time-major outputs of a forward pass (each ``(T, B, ...)``), the precisions of its
    first steps while in information form, and its final state."""

    mean: np.ndarray
    covariance: np.ndarray
    log_consistency: np.ndarray
    discount: np.ndarray
    noise_scale: np.ndarray
    information: list[np.ndarray]
    final: Any


class _CompiledRule(NamedTuple):
    """The discount's settings, as the compiled loop takes them
    (:func:`possibly.filters.noise_scale_numba.run`)."""

    robust: bool
    dim: float
    scale_dim: float
    tau: float  # NaN: no threshold
    chi2_p: float
    omega: float


class _KappaTable(NamedTuple):
    """κ over log α (``grid``, ``values``) and the χ² quadrature outside it, for the compiled
    loop."""

    grid: np.ndarray
    values: np.ndarray
    nodes_x: np.ndarray
    nodes_w: np.ndarray


class _CompiledOutputs(NamedTuple):
    """The time-major output arrays ``(T, B, ...)`` the compiled loop writes into."""

    mean: np.ndarray
    covariance: np.ndarray
    log_consistency: np.ndarray
    discount: np.ndarray
    noise_scale: np.ndarray


def _gamma_support(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``S(a, b) = a log(a / b) − a`` of the gamma family (docs/math.md §2), 0 at ``a = 0``."""
    pos = a > 0
    safe_a, safe_b = np.where(pos, a, 1.0), np.where(pos, b, 1.0)
    return np.where(pos, safe_a * np.log(safe_a / safe_b) - safe_a, 0.0)


@dataclass(frozen=True)
class NoiseScaleState:
    """Kalman state of θ (its ``t`` counts the steps) and the gamma ``Ḡ(λ; alpha, beta)`` of
    the noise precision scale."""

    kalman: KalmanState
    alpha: np.ndarray
    beta: np.ndarray
    #: while the scale's prior is tempered: its part of ``(alpha, beta)`` before tempering
    #: and the data's part (``alpha = w prior_alpha + data_alpha``, ``w`` the prior's
    #: discount); None once the data outweigh the prior
    prior_alpha: np.ndarray | None = None
    prior_beta: np.ndarray | None = None
    data_alpha: np.ndarray | None = None
    data_beta: np.ndarray | None = None

    @property
    def mean(self) -> np.ndarray:
        return self.kalman.mean

    @property
    def noise_scale(self) -> np.ndarray:
        """``1 / λ̂``: the learned multiplier of ``R₀`` (mode of the gamma possibility)."""
        return self.beta / self.alpha


@dataclass(frozen=True)
class ScaleStartState:
    """The scale's start hypotheses of a batch (batch shape ``B``), before their collapse.

    Attributes
    ----------
    hypotheses : NoiseScaleState or KalmanStartState
        Batch shape ``B + (J,)``: hypothesis ``j`` starts from the scale prior with its noise
        scale multiplied by ``_SCALE_FACTORS[j]``.
    evidence : ndarray, shape ``B + (J, t + 1, 4)``
        What each observation said for each hypothesis (``NoiseScaleEngine._evidence``).
    t : int
        Number of observations processed.
    """

    hypotheses: Any
    evidence: np.ndarray
    t: int = 0

    @property
    def score(self) -> np.ndarray:
        return _scale_score(self.evidence)

    @property
    def leader(self) -> np.ndarray:
        return _scale_leader(self.score)

    @property
    def current(self) -> NoiseScaleState:
        """The leading hypothesis' state (batch shape ``B``)."""
        lead = tree_take(self.hypotheses, self.leader)
        return lead.current if isinstance(lead, KalmanStartState) else lead

    @property
    def mean(self) -> np.ndarray:
        return self.current.mean


def _scale_score(evidence: np.ndarray) -> np.ndarray:
    """Log possibility of each scale hypothesis, ``evidence`` ``B + (J, t, 4)``: the sup over
    the labellings of the observations with outliers a strict minority of those that count,
    an inlier counting its log density, an outlier the floor (docs/math.md §8); ``-inf``
    when the outliers by force are already too many."""
    density, gain, counts, forced = (evidence[..., i] for i in range(4))
    free = np.floor((counts.sum(-1) - 1) / 2) - forced.sum(-1)  # a strict minority
    best = -np.sort(-gain, axis=-1)
    rank = np.arange(gain.shape[-1])
    score = density.sum(-1) + np.where(rank < free[..., None], best, 0.0).sum(-1)
    return np.where((free >= 0) & ~np.isnan(score), score, -np.inf)


def _scale_leader(score: np.ndarray) -> np.ndarray:
    """The largest score up to rounding, ties going to the first in ``_SCALE_FACTORS`` (the
    prior's own scale, then the nearest): a tie has no evidence to break it."""
    return np.argmax(ties(score), axis=-1)


@dataclass(frozen=True)
class NoiseScaleResult(FilterResult):
    """Output of a Kalman filter with a learned noise scale: a
    :class:`~possibly.filters.filter_result.FilterResult` (time axis ``-2`` / ``-3`` / ``-1``) with
    the scale after each step.

    Attributes
    ----------
    covariance : ndarray, shape (..., T, n, n)
        ``inf`` while a direction is uninformed (``variance`` too).
    noise_scale : ndarray, shape (..., T)
        Learned multiplier of ``R₀`` after each step.

    The other fields are those of :class:`~possibly.filters.filter_result.FilterResult`; the
    predicted means and covariances are kept by ``filter`` (and ``smooth``), not by ``fit``.

    Examples
    --------
    >>> import pandas as pd
    >>> from possibly.filters.kalman import NoiseScaleKalmanFilter
    >>> from possibly.filters.state_space import constant_velocity
    >>> ys = pd.Series([0.0, 1.0, 2.5, 2.9], index=pd.date_range("2024-01-01", periods=4))
    >>> res = NoiseScaleKalmanFilter(constant_velocity()).fit(ys)
    >>> res.to_frame().columns.tolist()[-2:], res.to_xarray()["noise_scale"].dims
    (['discount', 'noise_scale'], ('time',))
    """

    noise_scale: np.ndarray = field(kw_only=True)

    def _extra(self) -> dict[str, np.ndarray]:
        """The learned scale after each step, a column of :meth:`to_frame` and
        :meth:`to_xarray`."""
        return {"noise_scale": self.noise_scale}


def _scaled(state: KalmanState, s: np.ndarray) -> KalmanState:
    """The state with its covariance multiplied by ``s`` (per batch element)."""
    s3 = s[..., None, None]
    if state.precision is not None:  # information form
        return dataclasses.replace(state, precision=state.precision / s3)
    return dataclasses.replace(state, covariance=_covariance(state) * s3)


def _covariance(state: KalmanState) -> np.ndarray:
    if state.covariance is None:
        raise ValueError("a KalmanState needs a covariance or a precision")
    return state.covariance


def _precision(state: KalmanState) -> np.ndarray:
    """The precision of the state (the inverse covariance in covariance form)."""
    return state.precision if state.precision is not None \
        else np.linalg.inv(_covariance(state))


class NoiseScaleEngine:
    """The recursion of a Kalman filter whose ``R`` is known up to a scale learned online (see
    the module docstring), run by :class:`possibly.filters.kalman.KalmanFilter` with
    ``learn_noise_scale=True`` (the class to use; its docstring lists the arguments).

    ``standard`` is the standard (not robust) Kalman filter of the model, from ``prior``: its
    ``init``, ``predict``, ``step`` and engine choice serve for θ (the discount is this
    class's: it involves the scale).
    """

    def __init__(self, standard: Any, *, robust: bool = True, tau=None, dim=None,
                 scale_prior=(1.0, 1.0), omega: float = 0.99,
                 prior: MultivariateNormal | None = None, robust_start: bool = True,
                 scale_dim: float = 2.0, coverage: float | None = COVERAGE) -> None:
        self._kf = standard
        self.model = standard.model
        try:
            a0, b0 = scale_prior
        except (TypeError, ValueError):
            raise ValueError(f"scale_prior must be a pair (alpha, beta) of positive numbers, "
                             f"got {scale_prior!r}") from None
        self.scale_prior = (float(check_positive("scale_prior alpha", a0)),
                            float(check_positive("scale_prior beta", b0)))
        self.omega = float(check_unit_interval("omega", omega, low_open=True, high_open=True))
        self.robust = bool(robust)
        if tau is not None and not self.robust:
            raise ValueError("tau only applies to the robust filter (robust=True)")
        self.dim, self.tau = _check_dim_tau(dim, tau, self._kf.state_dim + 1)
        self.prior = prior
        self.robust_start = check_bool("robust_start", robust_start)
        self.scale_dim = float(check_positive("scale_dim", scale_dim))
        self.coverage = _check_coverage(coverage) if self.robust else None
        # χ²_k(coverage) for k = 0..m residual dof (zeros: the paper's discount)
        levels = _reference_table(self.coverage, self._kf.obs_dim)
        self._chi2 = np.zeros(self._kf.obs_dim + 1) if levels is None else -2.0 * levels
        # directions of y that θ explains: the residual's degrees of freedom once informed
        self._rank_h = int(np.linalg.matrix_rank(self.model.H))
        self._floor = inlier_log_consistency(max(self._rank_h, 1), 0.999)

    def init(self, batch_shape: tuple[int, ...] = ()
             ) -> NoiseScaleState | KalmanStartState | ScaleStartState:
        """The state before any observation; with the robust start (from any prior), the
        scale's start hypotheses (a ScaleStartState), each the mixture of the robust start's
        hypotheses (a KalmanStartState of NoiseScaleStates)."""
        batch_shape = tuple(batch_shape)
        start = self.robust and self.robust_start
        if start:  # one more batch axis: the scale's start hypotheses
            batch_shape += (len(_SCALE_FACTORS),)
        ks = self._kf.init(batch_shape)
        assert isinstance(ks, KalmanState)  # self._kf is the standard filter: no robust start
        a0, b0 = self.scale_prior
        a = np.full(batch_shape, a0)
        b = np.broadcast_to(b0 * _SCALE_FACTORS if start else b0, batch_shape).copy()
        zero = np.zeros(batch_shape)
        state = (NoiseScaleState(ks, a, b, a.copy(), b.copy(), zero, zero.copy()) if self.robust
                 else NoiseScaleState(ks, a, b))
        if start:
            # the prior is one more observation-like term: a hypothesis that moves its scale
            # labels it an outlier and pays the floor (it does not count towards the cap)
            prior_term = np.zeros(batch_shape + (1, 4))
            prior_term[..., 1:, 0, 0] = self._floor
            return ScaleStartState(start_init(state, batch_shape), prior_term, 0)
        return state

    def step(self, state: NoiseScaleState | KalmanStartState | ScaleStartState,
             y: Any) -> tuple[NoiseScaleState | KalmanStartState | ScaleStartState, KalmanInfo]:
        """Predict (except before the first observation), then the robust update of θ and λ;
        a row with a NaN is missing (predict only)."""
        y = as_numbers("y", y)
        if self._kf.obs_dim == 1 and y.shape[-1:] != (1,):
            y = y[..., None]
        if isinstance(state, ScaleStartState):
            return self._scale_start_step(state, y)
        new, info, _ = self._evidence_step(state, y)
        return new, info

    def _scale_start_step(self, state: ScaleStartState, y: np.ndarray, *,
                          window: float = WINDOW, scale_window: float = _SCALE_WINDOW
                          ) -> tuple[Any, KalmanInfo]:
        """One step of every scale hypothesis; each one's score adds the log evidence of the
        observation for it; the leader's info is reported, and after ``_SCALE_WINDOW`` steps
        the hypotheses collapse to it (docs/math.md §8). ``window``: the robust start's
        (:func:`~possibly.filters.robust_start.start_step`), ``scale_window`` this one's
        (``np.inf``: never collapse)."""
        yh = np.repeat(np.expand_dims(y, -2), len(_SCALE_FACTORS), axis=-2)
        new, info, evidence = self._evidence_step(state.hypotheses, yh, window)
        # a missing y says nothing for any hypothesis (the robust start's drops do); nor a y
        # that some hypothesis cannot judge yet (a direction of its state uninformed)
        judged = ~np.isnan(y).any(-1) & (evidence[..., 4] > 0).all(-1)
        evidence = np.where(judged[..., None, None], evidence[..., :4], 0.0)
        evidence = np.concatenate([state.evidence, evidence[..., None, :]], -2)
        lead = _scale_leader(_scale_score(evidence))
        lead_info = tree_take(info, lead)
        if state.t + 1 >= scale_window:
            return tree_take(new, lead), lead_info
        return ScaleStartState(new, evidence, state.t + 1), lead_info

    def _evidence_step(self, state: Any, y: np.ndarray,
                       window: float = WINDOW) -> tuple[Any, KalmanInfo, np.ndarray]:
        """``(new, info, log evidence)`` of one step, with the robust start's mixture while
        ``state`` is one (its leader's evidence)."""
        if isinstance(state, KalmanStartState):
            new, info, evidence, _ = start_step(state, y, self._plain_step, self._kf.obs_dim,
                                                window=window)
            return new, info, evidence
        if not isinstance(state, NoiseScaleState):
            raise ValueError(f"state must be a NoiseScaleState, got {type(state).__name__}")
        evidence, info, new = self._plain_step(state, y)
        return new, info, evidence

    def _plain_step(self, state: NoiseScaleState,
                    y: np.ndarray) -> tuple[np.ndarray, KalmanInfo, NoiseScaleState]:
        """``(log evidence, info, new)``: one step without the robust start (``y`` shape
        (..., m)). The log evidence (:meth:`_evidence`) scores the scale's start hypotheses
        (docs/math.md §8); it takes the robust start's slot of the predicted state, which
        this filter does not keep."""
        kf, omega = self._kf, self.omega
        ks = kf.predict(state.kalman) if state.kalman.t else state.kalman
        t = ks.t
        ks = dataclasses.replace(ks, t=0)  # kf.step at t = 0 updates without predicting
        a, b = state.alpha, state.beta
        missing = np.isnan(y).any(-1)
        y0 = np.where(missing[..., None], 0.0, y)
        lam = a / b
        m = kf.obs_dim
        H, R0 = kf.model.H, kf.model.R
        # q = vᵀ (λ̂ H P Hᵀ + R₀)⁻¹ v: the standard filter's consistency at prior covariance λ̂ P
        if ks.covariance is not None and self._rank_h == m:  # directly (H onto)
            v = y0 - ks.mean @ H.T
            s_pred = lam[..., None, None] * (H @ ks.covariance @ H.T) + R0
            with np.errstate(over="ignore"):  # a gross outlier gives inf (clipped below)
                q = (v * np.linalg.solve(s_pred, v[..., None])[..., 0]).sum(-1)
        else:  # information form or H not onto: the Kalman step's consistency
            _, probe = kf.step(_scaled(ks, lam), y0)
            q = -2.0 * probe.log_consistency
        q = np.minimum(q, 1e300)  # a gross outlier gives inf
        dof = _residual_dof(ks, H, R0, self._rank_h)
        # q = 0 exactly: y fitted exactly, nothing on λ (k = 0); the information form's probe
        # gives it at an extreme λ̂, where it would put the data's scale at 0. A y the robust
        # start drops keeps its k: it is not used, and the scale's hypotheses count it as an
        # outlier by force (_evidence), whatever its stand-in's q
        dof = np.where((q > 0) | missing, dof, 0)
        log_c = self._log_consistency(a, b, q, dof)
        # θ's relative discount: log c₀ is log c at the coverage quantile of an inlier's q
        # (λ̂ q ~ χ²_k), i.e. q / 2β = χ²_k(p) / 2α (docs/math.md §7, §8); 0 with coverage=None
        log_c0 = -(a + 0.5 * dof) * np.log1p(self._chi2[dof] / (2.0 * a))
        rho = discount(relative_log_consistency(log_c, log_c0), self.dim, self.tau,
                       self.robust, validate=False)
        rho = np.where(missing, 0.0, rho)
        # the update with noise R₀ / s equals the update with R₀ of the covariance scaled by s
        s = rho * lam
        keep = s > _NEGLIGIBLE
        s_safe = np.where(keep, s, 1.0)
        upd, _ = kf.step(_scaled(ks, s_safe), y0)
        upd = _scaled(upd, 1.0 / s_safe)
        new_ks = dataclasses.replace(_select(keep, upd, ks), t=t + 1)
        kappa = self._kappa(a, b, dof)
        # the scale's own discount (docs/math.md §8): one scalar, bounded influence of q
        rl = np.where(missing, 0.0, discount(log_c, self.scale_dim, self.tau, self.robust,
                                             validate=False))
        # α ← ωα + ρ((1 − ω)α + κk/2): the whole of (α, β) shrinks by f, the data add to it
        shrink = np.where(keep, omega + rl * (1.0 - omega), 1.0)
        add_a = np.where(keep, rl * 0.5 * dof * kappa, 0.0)
        add_b = np.where(keep, rl * 0.5 * q, 0.0)
        nan = np.where(missing, np.nan, 0.0)
        evidence = self._evidence(ks, lam, q, dof, missing)
        info = KalmanInfo(log_consistency=log_c + nan, discount=rho + nan,
                          gamma=discount(log_c, self.dim, validate=False) + nan)
        if state.prior_alpha is None:
            return evidence, info, NoiseScaleState(new_ks, shrink * a + add_a,
                                                   shrink * b + add_b)
        return evidence, info, self._tempered(new_ks, state, shrink, add_a, add_b)

    def _evidence(self, ks: KalmanState, lam: np.ndarray, q: np.ndarray, dof: np.ndarray,
                  missing: np.ndarray) -> np.ndarray:
        """What ``y`` says for the scale's start hypothesis that ``λ̂`` is (docs/math.md §8),
        ``(..., 5)``: the log predictive density of ``y`` at noise ``R₀ / λ̂`` relative to
        ``N(0, R₀)``'s, ``−½ log det(λ̂ H P Hᵀ R₀⁻¹ + I) + (k/2) log λ̂ − ½ λ̂ q``; the gain of
        labelling ``y`` an outlier, ``max(log ε + ½ λ̂ q, 0)`` (``log ε`` the robust start's
        floor); 1 (it counts); 0 (not an outlier by force); 1 (judged). A missing ``y`` (as
        the robust start's hypotheses see the observations they drop) is an outlier by
        force: ``(density at q = 0 + log ε, 0, 1, 1, 1)``. All 0 while a direction of the
        observation is uninformed (nothing judged)."""
        H, R0 = self.model.H, self.model.R
        informed = dof == self._rank_h
        counts = ~missing & informed
        # in information form the observed directions are informed where y counts: the
        # pseudo-inverse gives H P Hᵀ there (other directions of θ may be uninformed)
        cov = _covariance(ks) if ks.covariance is not None else np.linalg.pinv(
            _precision(ks), hermitian=True)
        s_pred = lam[..., None, None] * (H @ cov @ H.T) + R0
        log_det = np.linalg.slogdet(s_pred)[1] - np.linalg.slogdet(R0)[1]
        fit = -0.5 * lam * q
        best = -0.5 * log_det + 0.5 * dof * np.log(lam)  # the density at q = 0
        density = best + fit
        gain = np.maximum(self._floor - fit, 0.0)
        one, zero = np.ones_like(q), np.zeros_like(q)
        out = np.where(counts[..., None], np.stack([density, gain, one, zero, one], -1),
                       np.stack([best + self._floor, zero, one, one, one], -1))
        return np.where(informed[..., None], out, 0.0)

    def _tempered(self, ks: KalmanState, state: NoiseScaleState, shrink: np.ndarray,
                  add_a: np.ndarray, add_b: np.ndarray) -> NoiseScaleState:
        """The scale's prior as one more observation-like term, discounted by its conflict
        with what the data say about the scale (docs/math.md §8): ``w = c_p^(1/scale_dim)``,
        ``log c_p = S(p + d) − S(p) − S(d)`` for the gamma parts ``p`` (prior) and ``d``
        (data), when the data's precision mode is the larger (residuals smaller than the
        prior expects: no outlier can cause that); ``w = 1`` otherwise (large residuals may
        be outliers: the prior stands, and the robust update decides). Once the data
        outweigh the prior (``data_alpha ≥ 20 prior_alpha``) its part is folded in and the
        plain recursion goes on."""
        pa, pb = shrink * state.prior_alpha, shrink * state.prior_beta
        da, db = shrink * state.data_alpha + add_a, shrink * state.data_beta + add_b
        log_cp = _gamma_support(pa + da, pb + db) - _gamma_support(pa, pb) \
            - _gamma_support(da, db)
        smaller = da * pb > pa * db  # the data's mode α/β above the prior's
        w = discount(np.where(smaller, np.minimum(log_cp, 0.0), 0.0), self.scale_dim,
                     validate=False)
        alpha, beta = w * pa + da, w * pb + db
        done = da >= _PRIOR_OUTWEIGHED * pa
        if done.all():
            return NoiseScaleState(ks, alpha, beta)
        # folded elements keep a prior part of 0 (then w no longer matters)
        return NoiseScaleState(ks, alpha, beta, np.where(done, 0.0, pa), np.where(done, 0.0, pb),
                               np.where(done, alpha, da), np.where(done, beta, db))

    def _log_consistency(self, a, b, q, dof):
        """Consistency of the observation with (θ, λ), relative to an observation at the
        prediction (docs/math.md §8): ``S(α + k/2, β + q/2) - S(α + k/2, β)``, ``k`` = dof,
        in the form ``-(α + k/2) log(1 + q / 2β)`` (no difference of large numbers)."""
        log_c = -(a + 0.5 * dof) * np.log1p(0.5 * q / b)
        return np.where(dof > 0, np.minimum(log_c, 0.0), 0.0)

    def _kappa(self, a, b, dof):
        """Fisher-consistency factor of the scale's update (module docstring), per batch
        element: a function of α (and the dof) only, read from a table."""
        if not self.robust:
            return 1.0
        dof = np.broadcast_to(dof, np.shape(a))
        kappa = np.ones(np.shape(a))
        for d in np.unique(dof):
            if d == 0:
                continue
            sel = dof == d
            if self.tau is None:
                kappa[sel] = _kappa_table(int(d), self.scale_dim)(a[sel])
            else:  # κ jumps where ρ reaches τ: no table (nor an accurate quadrature)
                kappa[sel] = kappa_direct(a[sel], int(d), self.scale_dim, self.tau)
        return kappa

    def fit(self, y, *, engine: str = "auto", predicted: bool = False,
            stacklevel: int = 3) -> NoiseScaleResult:
        """Filter one or a batch of series ``(..., T, m)`` (or ``(T,)`` when m = 1).

        ``engine``: ``"numba"`` runs the steps after the start (the robust start and the scale's
        start hypotheses) in a compiled loop
        (:mod:`possibly.filters.noise_scale_numba`; needs numba, a time-invariant model and
        ``H`` of full row rank), ``"numpy"`` the batched numpy step throughout, ``"auto"``
        (default) as :meth:`possibly.KalmanFilter.filter` chooses (its numpy work weighted
        by this filter's costlier steps), and numpy beyond 16 series. Both give the same
        numbers to ~1e-12. ``predicted``: also keep the
        predicted means and covariances (and the precisions of the steps in information
        form), what the smoother needs. ``stacklevel``: that of the
        :class:`~possibly.filters.filter_result.MostlyDiscountedWarning` (the caller's frame).
        """
        index = time_labels(y, 0)
        ys, batch = self._observations(y)
        run = self._forward(ys, engine)
        warn_if_mostly_discounted(run.discount.T, stacklevel)
        return self._result(run, batch, index, predicted)

    def smooth(self, y, *, engine: str = "auto", stacklevel: int = 3) -> SmootherResult:
        """The RTS smoother over the forward pass (:func:`possibly.filters.smoother.smooth`),
        which keeps each step's noise: the exact smoother of the model whose observation noise
        at step ``t`` is ``R₀ s_{t-1} / ρ_t`` (``s_{t-1}`` the scale learned before ``y_t``,
        ``ρ_t`` its discount), i.e. of the filter as it ran.

        With the robust start, looking back the start has settled on one hypothesis (a scale
        factor and the observations it drops): the smoother of that hypothesis' plain
        recursion, its outliers missing. Those rejected observations are reported as observed
        and discounted: discount 0 and their log consistency ``-½ vᵀ S⁻¹ v`` with the
        smoothed state at their step (``S = H P Hᵀ + R₀ s``, ``s`` the scale then; 0 where
        that state is not informed)."""
        if not (self.robust and self.robust_start):
            return smooth(self.model, self.fit(y, engine=engine, predicted=True,
                                               stacklevel=stacklevel + 1), engine=engine)
        index = time_labels(y, 0)
        ys, batch = self._observations(y)
        masked, factor = self._settled_start(ys)
        run = self._forward(masked, engine, self._hypothesis_init(factor))
        warn_if_mostly_discounted(run.discount.T, stacklevel)
        res = smooth(self.model, self._result(run, batch, index, True), engine=engine)
        return self._report_rejected(res, ys, masked, batch)

    def _settled_start(self, ys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(masked, factor)``: ``ys`` (T, B, m) with the observations that the start
        settles on as outliers missing, and the index in ``_SCALE_FACTORS`` of the scale
        hypothesis it settles on (B,). The filter's start steps, with each mixture kept until
        the step where the filter collapses it, to read the leader there."""
        T, size, _ = ys.shape
        state = self.init((size,))
        assert isinstance(state, ScaleStartState)  # self.robust and self.robust_start
        lead = np.zeros((size, len(_SCALE_FACTORS)), dtype=int)
        steps = min(T, _SCALE_WINDOW)
        for t in range(steps):
            state, _ = self._scale_start_step(state, ys[t], window=np.inf, scale_window=np.inf)
            assert isinstance(state, ScaleStartState)
            hyp = state.hypotheses
            if isinstance(hyp, KalmanStartState) and (t + 1 >= K + WINDOW or t + 1 == steps):
                lead = hyp.leader  # each scale hypothesis' robust start collapses here
                state = dataclasses.replace(state, hypotheses=hyp.current)
        factor = state.leader
        drop = start_hypotheses(K, MAX_OUTLIERS)[lead[np.arange(size), factor]]  # (B, K)
        masked = ys.copy()
        cols = min(K, T)
        masked[:cols][drop[:, :cols].T] = np.nan
        return masked, factor

    def _hypothesis_init(self, factor: np.ndarray) -> NoiseScaleState:
        """The initial state of scale hypothesis ``factor`` (B,) (as :meth:`init` makes it,
        without the start)."""
        size = len(factor)
        ks = self._kf.init((size,))
        a0, b0 = self.scale_prior
        a = np.full((size,), a0)
        b = (b0 * _SCALE_FACTORS)[factor]
        zero = np.zeros((size,))
        return NoiseScaleState(ks, a, b, a.copy(), b.copy(), zero, zero.copy())

    def _report_rejected(self, res: SmootherResult, ys: np.ndarray, masked: np.ndarray,
                         batch: tuple[int, ...]) -> SmootherResult:
        """``res`` with the observations that the start rejected (observed in ``ys``, missing
        in ``masked``, both (T, B, m)) reported as observed and discounted (:meth:`smooth`)."""
        rejected = ~np.isnan(ys).all(-1) & np.isnan(masked).all(-1)
        if not rejected.any():
            return res
        fr = res.filtered
        assert isinstance(fr, NoiseScaleResult)
        lc, disc = fr.log_consistency.copy(), fr.discount.copy()
        flat = (-1,) + lc.shape[len(batch):]
        lc_f, disc_f = lc.reshape(flat), disc.reshape(flat)
        mean = res.mean.reshape(flat + res.mean.shape[-1:])
        cov = res.covariance.reshape(flat + res.covariance.shape[-2:])
        scale = fr.noise_scale.reshape(flat)
        H, R0 = self.model.H, self.model.R
        for t, b in zip(*np.nonzero(rejected), strict=True):
            y = ys[t, b]
            obs = ~np.isnan(y)
            log_c = 0.0
            if np.isfinite(cov[b, t]).all():
                Ho = H[obs]
                v = y[obs] - Ho @ mean[b, t]
                S = Ho @ cov[b, t] @ Ho.T + R0[np.ix_(obs, obs)] * scale[b, t]
                log_c = min(-0.5 * float(v @ np.linalg.solve(S, v)), 0.0)
            lc_f[b, t], disc_f[b, t] = log_c, 0.0
        return dataclasses.replace(res, filtered=dataclasses.replace(fr, log_consistency=lc,
                                                                     discount=disc))

    def predict(self, state: NoiseScaleState) -> NoiseScaleState:
        """One predict step of θ (the scale is unchanged), as
        :meth:`possibly.filters.kalman.KalmanFilter.predict` (the start's states are refused:
        ``predict(state.current)`` predicts the leading hypothesis)."""
        if isinstance(state, (KalmanStartState, ScaleStartState)):
            raise _start_state_error(state)
        if not isinstance(state, NoiseScaleState):
            raise ValueError(f"state must be a NoiseScaleState, got {type(state).__name__}")
        return dataclasses.replace(state, kalman=self._kf.predict(state.kalman))

    def _observations(self, y) -> tuple[np.ndarray, tuple[int, ...]]:
        """``(ys, batch)``: the checked series time-major ``(T, B, m)`` and its batch shape."""
        y = check_observations("y", y, max_abs=1e300)
        m = self._kf.obs_dim
        if m == 1 and (y.ndim == 1 or y.shape[-1] != 1):
            y = y[..., None]
        if y.ndim < 2 or y.shape[-1] != m:
            raise ValueError(f"y must have shape (..., T, {m}), got {y.shape}")
        batch, T = y.shape[:-2], y.shape[-2]
        return np.moveaxis(y.reshape((-1, T, m)), 1, 0), batch

    def _forward(self, ys: np.ndarray, engine: str,
                 initial: NoiseScaleState | None = None) -> _Forward:
        """Every step of the time-major ``ys`` (T, B, m), numpy then (where it applies) the
        compiled loop, from ``initial`` (default: :meth:`init`)."""
        T, size, _ = ys.shape
        n = self._kf.state_dim
        compiled = self._compiled(engine, size, T)
        run = _Forward(np.empty((T, size, n)), np.empty((T, size, n, n)), np.empty((T, size)),
                       np.empty((T, size)), np.empty((T, size)), [], None)
        state: Any = self.init((size,)) if initial is None else initial
        for t in range(T):
            if compiled is not None and isinstance(state, NoiseScaleState) \
                    and state.kalman.covariance is not None and state.prior_alpha is None:
                final = self._run_compiled(compiled, ys, t, state, run)
                if final is not None:
                    return run._replace(final=final)
                compiled = None  # singular by rounding: numpy's fallbacks
            state, info = self.step(state, ys[t])
            current: NoiseScaleState = (state.current if isinstance(
                state, (KalmanStartState, ScaleStartState)) else state)
            ks = current.kalman
            run.mean[t] = ks.mean
            run.covariance[t] = ks.covariance if ks.covariance is not None else np.inf
            if ks.precision is not None:
                run.information.append(ks.precision)
            run.noise_scale[t] = current.noise_scale
            run.log_consistency[t], run.discount[t] = info.log_consistency, info.discount
        return run._replace(final=state)

    def _result(self, run: _Forward, batch: tuple[int, ...], index: Any,
                predicted: bool) -> NoiseScaleResult:
        """The result of a forward pass, batch-major, with the predicted states if asked."""
        def shaped(a: np.ndarray) -> np.ndarray:
            a = np.moveaxis(a, 0, 1)
            return a.reshape(batch + a.shape[1:])

        cov = shaped(run.covariance)
        size, n = run.mean.shape[1:]
        f_pre = np.stack(run.information) if run.information else np.empty((0, size, n, n))
        p_mean = p_cov = p_pre = None
        if predicted:
            p_mean, p_cov, p_pre = (shaped(a) for a in self._predicted(run))
        information = (shaped(f_pre), p_pre)
        final = tree_map(run.final, lambda a: a.reshape(batch + a.shape[1:]))
        return NoiseScaleResult(mean=shaped(run.mean), variance=np.diagonal(cov, 0, -2, -1),
                                covariance=cov, log_consistency=shaped(run.log_consistency),
                                discount=shaped(run.discount), predicted_mean=p_mean,
                                predicted_covariance=p_cov, state_names=self.model.names,
                                dim=self.dim, index=index, final=final,
                                _information=information, noise_scale=shaped(run.noise_scale))

    def _predicted(self, run: _Forward) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(mean, covariance, precisions)`` (time-major) of the predictions from each
        recorded filtered state (the prior at step 0); the precisions are those of the steps
        in information form, whose covariances are ``inf`` off the diagonal (as
        :meth:`possibly.filters.kalman.KalmanFilter.filter` reports them)."""
        T, size, n = run.mean.shape
        p_mean, p_cov = np.empty_like(run.mean), np.empty_like(run.covariance)
        f_pre, p_pre = run.information, []
        # with one transition, the predictions of the filtered states in covariance form (all
        # after the first len(f_pre)) are one batched predict, time as a batch axis
        stepwise = T if self.model.time_varying else min(T, len(f_pre) + 1)
        if stepwise < T:
            later = self._kf.predict(KalmanState(run.mean[stepwise - 1:T - 1],
                                                 run.covariance[stepwise - 1:T - 1], None,
                                                 stepwise))
            p_mean[stepwise:], p_cov[stepwise:] = later.mean, later.covariance
        state = self._kf.init((size,))
        for t in range(stepwise):
            if t:
                k = t - 1
                state = self._kf.predict(KalmanState(
                    run.mean[k], run.covariance[k] if k >= len(f_pre) else None,
                    f_pre[k] if k < len(f_pre) else None, t))
            p_mean[t] = state.mean
            if state.precision is not None:
                p_pre.append(state.precision)
                p_cov[t] = _covariance_or_inf(state.precision)
            else:
                p_cov[t] = state.covariance

        return p_mean, p_cov, np.stack(p_pre) if p_pre else np.empty((0, size, n, n))

    def _compiled(self, engine: str, size: int, steps: int) -> Any:
        """The compiled loop's module if ``engine`` selects it for this call of ``size``
        series of ``steps`` steps, else None: the Kalman filter's rule on the same model (the
        engine's name, a time-invariant model with ``H`` onto, numba installed, and for
        ``"auto"`` the process's history), with the same errors, and with ``"auto"`` only up
        to ``_AUTO_NUMBA_MAX_BATCH`` series."""
        if engine == "auto" and size > _AUTO_NUMBA_MAX_BATCH:
            return None
        call = self._kf._auto_call("noise scale", size, steps, _NUMPY_WORK_WEIGHT)
        if self._kf._compiled(engine, call) is None:
            return None
        from possibly.filters import noise_scale_numba

        return noise_scale_numba

    def _run_compiled(self, compiled: Any, ys: np.ndarray, t: int, state: NoiseScaleState,
                      run: _Forward) -> NoiseScaleState | None:
        """Steps ``t..T-1`` in the compiled loop, from ``state`` (covariance form), written
        into the time-major outputs of ``run``; the final state, or None if a matrix was
        singular by rounding."""
        m = self._kf.obs_dim
        tau = np.nan if self.tau is None else self.tau
        if self.robust and self.tau is None:
            grid = np.linspace(*_TABLE_LOG_ALPHA, _TABLE_NODES)
            values = _kappa_table(m, self.scale_dim).values
        else:  # κ by quadrature (the threshold's jumps), or κ = 1 (standard filter)
            grid, values = np.array([1.0, 0.0]), np.zeros(2)
        nodes_x, nodes_w = _chi2_nodes(m)
        ks = state.kalman
        model = self.model
        args = [ks.mean.copy(), np.array(ks.covariance, copy=True),
                np.array(state.alpha, dtype=float), np.array(state.beta, dtype=float)]
        rule = _CompiledRule(self.robust, self.dim, self.scale_dim, tau, self._chi2[m],
                             self.omega)
        out = _CompiledOutputs(run.mean, run.covariance, run.log_consistency, run.discount,
                               run.noise_scale)
        try:
            # contiguous: numba would compile the loop again for a batch's strided view
            compiled.run(np.ascontiguousarray(ys), t, *args,
                         kernel_arrays(model.F, model.Q, model.H, model.R), rule,
                         _KappaTable(grid, values, nodes_x, nodes_w), out,
                         True if m == self._kf.state_dim and m > 1 else None)
        except np.linalg.LinAlgError:
            return None
        mean, cov, alpha, beta = args
        return NoiseScaleState(KalmanState(mean, cov, None, ys.shape[0]), alpha, beta)


@lru_cache(maxsize=16)
def _chi2_nodes(m: int, n: int = 48) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and normalised weights of ``E[g(X)]``, ``X ~ χ²_m`` (Gauss-Laguerre in ``X/2``)."""
    from scipy.special import roots_genlaguerre  # deferred: keeps `import possibly` light

    t, w = roots_genlaguerre(n, 0.5 * m - 1.0)
    return 2.0 * t, w / w.sum()


def kappa_direct(alpha, dof: int, scale_dim: float, tau: float | None = None) -> np.ndarray:
    """Fisher-consistency factor of the learned scale's update, by quadrature.

    ``κ(α) = E[ρ(X) X] / (k E[ρ(X)])`` with ``X ~ χ²_k`` (``k = dof``) and ``ρ`` the scale's
    discount of an inlier when ``λ̂`` is right, ``log c = -(α + k/2) log(1 + X / (2α))``
    (docs/math.md §8; ``β`` cancels); a 48-node Gauss-Laguerre quadrature.

    Parameters
    ----------
    alpha : array_like, > 0
        Shape of the gamma possibility of the precision scale.
    dof : int >= 1
        Degrees of freedom of the residual.
    scale_dim : float > 0
        Effective dimension of the scale's discount.
    tau : float in (0, 1], optional
        Threshold of the discount (the paper's alternative).

    Returns
    -------
    ndarray, the shape of ``alpha``

    Examples
    --------
    >>> from possibly.filters.noise_scale import kappa_direct
    >>> round(float(kappa_direct(1e12, 2, 2.0)), 6)   # α → ∞: ρ = exp(-X/4), κ = 2/3
    0.666667
    """
    x, w = _chi2_nodes(dof)
    a = np.asarray(alpha, dtype=float)[..., None]
    log_c = -(a + 0.5 * dof) * np.log1p(x / (2.0 * a))
    rho = discount(log_c, scale_dim, tau, True, validate=False)
    return (w * rho * x).sum(-1) / (dof * (w * rho).sum(-1))


#: the table of κ over log α: its range and number of nodes (linear interpolation; the
#: relative error is below 1e-8, checked in the tests against ``kappa_direct``)
_TABLE_LOG_ALPHA, _TABLE_NODES = (np.log(1e-6), np.log(1e10)), 40001


@lru_cache(maxsize=16)
def _kappa_table(dof: int, scale_dim: float):
    """``κ(α)`` (:func:`kappa_direct`, no threshold) read from a table over ``log α``, direct
    outside it."""
    grid = np.linspace(*_TABLE_LOG_ALPHA, _TABLE_NODES)
    values = kappa_direct(np.exp(grid), dof, scale_dim)
    lo, hi = _TABLE_LOG_ALPHA

    def kappa(alpha: np.ndarray) -> np.ndarray:
        u = np.log(alpha)
        out = np.interp(u, grid, values)
        outside = (u < lo) | (u > hi)
        if outside.any():
            out = np.where(outside, kappa_direct(np.where(outside, alpha, 1.0), dof, scale_dim),
                           out)
        return out

    kappa.values = values  # type: ignore[attr-defined]  # for the compiled loop
    return kappa


def _residual_dof(state: KalmanState, H: np.ndarray, R: np.ndarray, rank_h: int) -> np.ndarray:
    """Degrees of freedom of the residual ``q``: the rank of ``H`` (the directions of ``y``
    that θ explains; the consistency leaves out the rest) less those the predicted state
    leaves uninformed (the observation fits them exactly: ``q`` holds no information on λ
    there). Only the information form has such directions."""
    if not state.information_form:
        return np.full(state.mean.shape[:-1], rank_h)
    Y = _precision(state)
    j = H.T @ np.linalg.solve(R, H)
    rank = np.linalg.matrix_rank
    return rank_h - (rank(Y + j, hermitian=True) - rank(Y, hermitian=True))


def _select(keep: np.ndarray, a: KalmanState, b: KalmanState) -> KalmanState:
    """``a`` where ``keep``, else ``b`` (per batch element; ``t = 0``).

    In covariance form when both are. Otherwise the selection is made in information form and,
    as after :func:`possibly.filters.kalman._update`, switched to covariance form when every
    precision is well conditioned: the update may have switched while the state it is
    selected against (the prediction) has not, and without the switch the state would stay in
    information form for good (its covariance reported as ``inf`` at every step).
    """
    mean = np.where(keep[..., None], a.mean, b.mean)
    k3 = keep[..., None, None]
    if a.covariance is not None and b.covariance is not None:
        return KalmanState(mean, np.where(k3, a.covariance, b.covariance))
    return _maybe_covariance_form(KalmanState(mean, None,
                                              np.where(k3, _precision(a), _precision(b))))
