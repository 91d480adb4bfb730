"""Linear-Gaussian state-space models, shared by every filter of :mod:`possibly.filters`.

A model is ``θ_t = F_t θ_{t-1} + u_t``, ``u_t ~ N(0, Q_t)`` and ``y_t = H θ_t + v_t``,
``v_t ~ N(0, R)`` (docs/math.md §2). :class:`LinearGaussianModel` holds it once, validated,
and is what :class:`possibly.KalmanFilter`, :meth:`possibly.ParticleFilter.from_model` and
:func:`possibly.integrations.scaleout.kalman_many` take. It unpacks like the tuple
``(F, Q, H, R)`` it replaces, so ``F, Q, H, R = constant_velocity()`` and
``KalmanFilter(*constant_velocity())`` keep working.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from possibly.filters._common import (
    _checked_observation,
    _checked_transition,
    _Observation,
    _prepare_observation,
    _prepare_transition,
    _Transition,
)

__all__ = ["LinearGaussianModel", "constant_velocity", "constant_velocity_noise"]


@dataclass(frozen=True, eq=False)
class LinearGaussianModel:
    """A linear-Gaussian state-space model ``(F, Q, H, R)``, validated once.

    Parameters
    ----------
    F : array_like, shape (n, n) or (K, n, n)
        Transition matrix; with a leading time axis, ``F[k]`` maps the state of step ``k`` to
        step ``k + 1`` (a series of ``T`` steps needs ``K >= T - 1``).
    Q : array_like, shape (n, n) or (K, n, n)
        Process noise covariance (positive semi-definite, may be singular, e.g. the rank-one
        ``Q`` of :func:`constant_velocity`); optionally per step like ``F``.
    H : array_like, shape (m, n)
        Observation matrix.
    R : array_like, shape (m, m)
        Observation noise covariance (positive definite).
    state_names : sequence of str, optional
        Names of the ``n`` state components (used by ``FilterResult.to_frame``); ``x0, x1, ...``
        by default.

    Notes
    -----
    Numeric range: entries of ``F, Q, H, R`` have magnitudes in ``[1e-100, 1e100]`` (or are 0),
    so that the filters' scaled quadratic forms cannot overflow for observations up to 1e300.
    The object is immutable and can be shared by threads and pickled.

    Examples
    --------
    >>> import numpy as np, possibly as ps
    >>> model = ps.LinearGaussianModel(F=[[1.0]], Q=[[0.1]], H=[[1.0]], R=[[1.0]])
    >>> model.state_dim, model.obs_dim, model.time_varying
    (1, 1, False)
    >>> F, Q, H, R = ps.filters.constant_velocity()                # unpacks like a tuple
    >>> ps.filters.constant_velocity().state_names
    ('position', 'velocity')
    >>> steps = ps.LinearGaussianModel(F=np.stack([np.eye(1)] * 9), Q=[[0.1]], H=[[1.0]],
    ...                                R=[[1.0]])
    >>> steps.time_varying, steps.n_transitions
    (True, 9)
    """

    F: Any
    Q: Any
    H: Any
    R: Any
    state_names: Sequence[str] | None = None
    # prepared once in __post_init__ for the filters (not arguments)
    _transitions: tuple[_Transition, ...] = field(init=False, repr=False, compare=False)
    _observation: _Observation = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        F, Q = _checked_transition(self.F, self.Q)
        n = F.shape[-1]
        H, R = _checked_observation(self.H, self.R, n)
        names = self.state_names
        if names is not None:
            if isinstance(names, str):
                raise ValueError(f"state_names must be a sequence of {n} names, got {names!r}")
            names = tuple(str(s) for s in names)
            if len(names) != n or len(set(names)) != n:
                raise ValueError(f"state_names must be {n} distinct names, got {names}")
        for key, value in (("F", F), ("Q", Q), ("H", H), ("R", R), ("state_names", names)):
            object.__setattr__(self, key, value)
        k = max(F.shape[0] if F.ndim == 3 else 0, Q.shape[0] if Q.ndim == 3 else 0)
        if F.ndim == 3 or Q.ndim == 3:
            trs = tuple(_prepare_transition(F[i] if F.ndim == 3 else F,
                                            Q[i] if Q.ndim == 3 else Q) for i in range(k))
        else:
            trs = (_prepare_transition(F, Q),)
        object.__setattr__(self, "_transitions", trs)
        object.__setattr__(self, "_observation", _prepare_observation(H, R))

    @classmethod
    def of(cls, model: Any) -> LinearGaussianModel:
        """``model`` itself, or a model from a tuple ``(F, Q, H, R)``."""
        if isinstance(model, LinearGaussianModel):
            return model
        try:
            F, Q, H, R = model
        except (TypeError, ValueError):
            raise ValueError("model must be a LinearGaussianModel or a tuple (F, Q, H, R), got "
                             f"{type(model).__name__}") from None
        return cls(F, Q, H, R)

    def __iter__(self) -> Iterator[np.ndarray]:
        return iter((self.F, self.Q, self.H, self.R))

    def __getitem__(self, i: int) -> np.ndarray:
        # like the tuple (F, Q, H, R) this object replaces
        return (self.F, self.Q, self.H, self.R)[i]

    def __repr__(self) -> str:
        steps = f", {self.n_transitions} transitions" if self.time_varying else ""
        names = "" if self.state_names is None else f", state_names={self.state_names}"
        return f"LinearGaussianModel(n={self.state_dim}, m={self.obs_dim}{steps}{names})"

    @property
    def state_dim(self) -> int:
        """``n``, the dimension of the state."""
        return int(self.F.shape[-1])

    @property
    def obs_dim(self) -> int:
        """``m``, the dimension of one observation."""
        return int(self.H.shape[0])

    @property
    def time_varying(self) -> bool:
        """Whether ``F`` or ``Q`` is given per step."""
        return self.F.ndim == 3 or self.Q.ndim == 3

    @property
    def compiles(self) -> bool:
        """Whether the compiled Kalman loops run this model (``engine="numba"``): it is
        time-invariant and ``H`` has full row rank (else numpy runs it).

        Examples
        --------
        >>> import numpy as np
        >>> cv = LinearGaussianModel(F=[[1.0, 1.0], [0.0, 1.0]], Q=0.1 * np.eye(2),
        ...                          H=[[1.0, 0.0]], R=[[1.0]])
        >>> twice = LinearGaussianModel(F=[[1.0]], Q=[[0.1]], H=[[1.0], [1.0]], R=np.eye(2))
        >>> cv.compiles, twice.compiles
        (True, False)
        """
        return not self.time_varying and self._observation.resid is None

    @property
    def n_transitions(self) -> int | None:
        """Number of per-step transitions (None if time-invariant)."""
        return len(self._transitions) if self.time_varying else None

    @property
    def names(self) -> tuple[str, ...]:
        """The state names, ``x0, x1, ...`` if none were given."""
        if self.state_names:
            return tuple(self.state_names)
        return tuple(f"x{j}" for j in range(self.state_dim))

    def _transition(self, k: int) -> _Transition:
        """The prepared transition from step ``k`` to step ``k + 1``."""
        trs = self._transitions
        if len(trs) == 1 and not self.time_varying:
            return trs[0]
        if k >= len(trs):
            raise ValueError(f"the model has {len(trs)} transitions (F or Q per step), enough "
                             f"for {len(trs) + 1} observations; step {k + 2} needs more")
        return trs[k]

    def _check_length(self, T: int) -> None:
        if self.time_varying and T - 1 > len(self._transitions):
            raise ValueError(f"ys has {T} steps but the model has only {len(self._transitions)} "
                             f"transitions (F or Q per step; {T - 1} needed)")


def _check_scale(name: str, value: Any, low: float, high: float) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a real number in [{low:g}, {high:g}], got "
                         f"{value!r}") from None
    if isinstance(value, bool) or not low <= x <= high:
        raise ValueError(f"{name} must be in [{low:g}, {high:g}], got {value!r}")
    return x


def constant_velocity(dt: float = 1.0, accel_sd: float = 0.05, obs_sd: float = 1.0,
                      ndim: int = 1) -> LinearGaussianModel:
    """Nearly-constant-velocity model (paper §5.2): position observed, velocity a random walk.

    The acceleration is white noise held constant over each step of duration ``dt``, so the
    process noise ``Q = accel_sd² g gᵀ`` with ``g = (dt²/2, dt)`` has rank one per axis (the
    filter handles the singular ``Q`` exactly).

    Parameters
    ----------
    dt : float in [1e-20, 1e20]
        Time step Δ.
    accel_sd : float in [1e-20, 1e20]
        Standard deviation σ_a of the acceleration noise (with ``accel_sd · dt`` and
        ``accel_sd · dt²`` also in ``[1e-40, 1e40]``).
    obs_sd : float in [1e-50, 1e50]
        Standard deviation of the position measurement noise.
    ndim : int >= 1
        Number of spatial axes; the state is ``(position, velocity)`` per axis, axes in turn.

    Returns
    -------
    LinearGaussianModel
        With ``F`` and ``Q`` of shape ``(2 ndim, 2 ndim)``, ``H`` of shape ``(ndim, 2 ndim)``,
        ``R`` of shape ``(ndim, ndim)`` and state names ``position, velocity`` (suffixed by the
        axis when ``ndim > 1``); it unpacks as ``F, Q, H, R``.

    Examples
    --------
    >>> import possibly as ps
    >>> F, Q, H, R = ps.filters.constant_velocity(dt=1.0, accel_sd=0.05, obs_sd=1.0)
    >>> F
    array([[1., 1.],
           [0., 1.]])
    >>> Q / 0.05**2
    array([[0.25, 0.5 ],
           [0.5 , 1.  ]])
    >>> H, R
    (array([[1., 0.]]), array([[1.]]))
    """
    dt = _check_scale("dt", dt, 1e-20, 1e20)
    accel_sd = _check_scale("accel_sd", accel_sd, 1e-20, 1e20)
    obs_sd = _check_scale("obs_sd", obs_sd, 1e-50, 1e50)
    for what, value in (("accel_sd * dt", accel_sd * dt), ("accel_sd * dt**2", accel_sd * dt**2)):
        if not 1e-40 <= value <= 1e40:  # the scales of Q's entries
            raise ValueError(f"{what} must be in [1e-40, 1e40] (a process noise scale), got "
                             f"accel_sd={accel_sd:g}, dt={dt:g}")
    if isinstance(ndim, bool) or not isinstance(ndim, int | np.integer) or ndim < 1:
        raise ValueError(f"ndim must be an integer >= 1, got {ndim!r}")
    f1 = np.array([[1.0, dt], [0.0, 1.0]])
    g = np.array([dt**2 / 2.0, dt])
    q1 = accel_sd**2 * np.outer(g, g)
    eye = np.eye(ndim)
    F = np.kron(eye, f1)
    Q = np.kron(eye, q1)
    H = np.kron(eye, np.array([[1.0, 0.0]]))
    R = obs_sd**2 * eye
    names = ("position", "velocity") if ndim == 1 else tuple(
        f"{s}_{i}" for i in range(ndim) for s in ("position", "velocity"))
    return LinearGaussianModel(F, Q, H, R, state_names=names)


#: 1 / Φ⁻¹(3/4): ``1.4826 · median |x|`` is consistent for the sd of a centred normal ``x``
_MAD_NORMAL = 1.482602218505602


def _lags(n: int) -> list[int]:
    """Lags of the second differences: 1, then about ×1.5, up to a quarter of the series."""
    lags, k = [1], 2
    while 4 * k <= n - 1:
        lags.append(k)
        k = max(k + 1, round(1.5 * k))
    return lags


def _robust_square(d: np.ndarray) -> float:
    """``(1.4826 · median |d|)²``, or the mean square where more than half of ``d`` is 0
    (ties); 0 for fewer than 3 values."""
    if d.size < 3:
        return 0.0
    v = (_MAD_NORMAL * float(np.median(np.abs(d)))) ** 2
    return v if v > 0 else float(np.mean(d * d))


def _positions(ys: Any) -> np.ndarray:
    """``ys`` as checked positions of shape (T, ndim) (NaN = missing)."""
    try:
        y = np.asarray(ys, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"ys must be numeric positions (NaN = missing), got {ys!r}") from None
    if y.ndim == 1:
        y = y[:, None]
    if y.ndim != 2:
        raise ValueError(f"ys must have shape (T,) or (T, ndim), got {y.shape}")
    if np.isinf(y).any():
        raise ValueError("ys must be finite or NaN (missing), got an infinite value")
    return y


def _lag_variances(z: np.ndarray) -> list[tuple[int, float, int, float]] | None:
    """``(k, c_k, n_k, V_k)`` of each lag ``k`` of :func:`constant_velocity_noise` with a
    nonzero robust variance ``V_k`` of the second differences (``n_k`` of them), up to the
    first lag with fewer than 3; None if lag 1 has fewer than 3 (too short to tell)."""
    used = []
    for k in _lags(z.shape[0]):
        diffs = z[2 * k:] - 2.0 * z[k:-k] + z[:-2 * k]
        count = int(np.sum(~np.isnan(diffs)))
        if k == 1 and count < 3:
            return None
        if count < 3:
            break
        # each axis on its own scale, then the mean over the axes that move: pooling the
        # differences would let a quiet axis (a constant coordinate) pull the median to 0
        per_axis = [(v, d.size) for v, d in
                    ((_robust_square(d), d) for d in (c[~np.isnan(c)] for c in diffs.T))
                    if v > 0]
        if per_axis:
            v_k = float(np.mean([v for v, _ in per_axis]))
            used.append((k, k * (4.0 * k * k - 1.0) / 6.0, sum(n for _, n in per_axis), v_k))
    return used


def constant_velocity_noise(ys: Any, dt: float = 1.0, *, accel_sd: float | None = None,
                            obs_sd: float | None = None) -> tuple[float, float]:
    """Robust estimates of the noise scales of :func:`constant_velocity` from a track.

    Under the model the second difference at lag ``k``, ``D_k y_t = y_t − 2 y_{t−k} +
    y_{t−2k}``, removes the position and velocity and is a centred normal of variance

        ``V_k = 6 obs_sd² + c_k dt⁴ accel_sd²``,   ``c_k = k (4k² − 1) / 6``

    (the measurement noise enters with weights 1, −2, 1; the acceleration ``a_s``, held over
    each step, enters the position as ``dt² Σ_s (t − s + ½) a_s``, which leaves weights
    ``u + ½`` and ``2k − u − ½`` for ``u = t − s < 2k``). ``V_k`` is estimated robustly at lags
    ``k = 1, 2, 3, 4, 6, 9, ...`` (up to a quarter of the series) by ``(1.4826 · median
    |D_k y|)²``, and ``(obs_sd², dt⁴ accel_sd²) ≥ 0`` by least squares of those estimates on
    ``(6, c_k)``, each weighted by ``√(n_k / k) / V_k`` (its relative precision: ``n_k``
    differences, overlapping over ``k`` steps). An acceleration below what the longest lag can
    resolve (its contribution there under the sampling error ``√(2k / n_k)`` of that lag's
    estimate) is raised to that level, so that a filter never assumes an exactly constant
    velocity the data cannot support; the measurement noise is kept above 1% of the lag-1
    scale ``√(V_1 / 6)``. Median-based, the estimates ignore a minority of outliers (each
    outlier spoils three differences per lag); they are equivariant: ``y → a y + b`` gives
    ``|a|`` times the scales, so a filter set up with them gives ``a m + b`` for the mean ``m``
    and the same discounts.

    Parameters
    ----------
    ys : array_like, shape (T,) or (T, ndim)
        Observed positions (NaN = missing). The model's noise is the same on every axis:
        each lag's variance is the mean of the axes' robust variances, over the axes that
        move (a constant coordinate says nothing of the noise of the others).
    dt : float > 0
        Time step.
    accel_sd, obs_sd : float > 0, optional
        A scale that is known: only the other one is estimated.

    Returns
    -------
    (accel_sd, obs_sd) : tuple of float
        For :func:`constant_velocity`. Scales that cannot be estimated are set relative to
        the track's spread ``s`` (``max |y − median y|``; its magnitude if it is constant, 1
        if all zero): a track without noise (every second difference 0) gets ``obs_sd =
        10⁻³ s`` and ``accel_sd = 10⁻³ s / dt²``; a track too short to tell (fewer than 3
        second differences at lag 1, i.e. 5 consecutive observed positions) gets ``obs_sd =
        10⁻³ s`` and ``accel_sd = s / dt²``: the filter follows the observations.

    Examples
    --------
    >>> import numpy as np
    >>> from possibly.filters.state_space import constant_velocity_noise
    >>> rng = np.random.default_rng(0)
    >>> accel = 0.5 * rng.standard_normal(5000)
    >>> velocity = np.cumsum(accel)
    >>> ys = np.cumsum(velocity - accel / 2) + 3.0 * rng.standard_normal(5000)
    >>> accel_sd, obs_sd = constant_velocity_noise(ys)
    >>> round(accel_sd, 1), round(obs_sd, 1)                       # truth (0.5, 3)
    (0.5, 3.0)
    >>> bool(np.allclose(constant_velocity_noise(1000 * ys + 7), (1000 * accel_sd,
    ...                                                            1000 * obs_sd)))
    True
    """
    y = _positions(ys)
    dt = _check_scale("dt", dt, 1e-20, 1e20)
    known = {name: None if v is None else _check_scale(name, v, 1e-100, 1e100)
             for name, v in (("accel_sd", accel_sd), ("obs_sd", obs_sd))}
    if known["accel_sd"] is not None and known["obs_sd"] is not None:
        return known["accel_sd"], known["obs_sd"]
    observed = y[~np.isnan(y)]
    if observed.size == 0:
        raise ValueError("ys holds no observed position: give accel_sd and obs_sd")
    # in units of a power of two near the spread: exact, and the squares cannot overflow
    spread = float(np.max(np.abs(observed - np.median(observed))))
    base = spread or float(np.max(np.abs(observed))) or 1.0
    unit = float(np.ldexp(1.0, int(np.frexp(base)[1])))
    z = y / unit
    a_known, s_known = known["accel_sd"], known["obs_sd"]
    used = _lag_variances(z)
    if used is None:  # too short to tell: follow the observations
        return a_known or base / dt**2, s_known or 1e-3 * base
    if not used:  # no noise at all: an exact line
        small = 1e-3 * base
        return a_known or small / dt**2, s_known or small
    lag, c_k, n_k, var_k = (np.array(col, dtype=float) for col in zip(*used, strict=True))
    w = np.sqrt(n_k / lag) / var_k
    A = np.stack([6.0 * w, c_k * w], axis=1)
    b = var_k * w
    if s_known is not None:
        s2 = (s_known / unit) ** 2
        acc2 = max(float(A[:, 1] @ (b - s2 * A[:, 0]) / (A[:, 1] @ A[:, 1])), 0.0)
    elif a_known is not None:
        acc2 = (a_known * dt**2 / unit) ** 2
        s2 = max(float(A[:, 0] @ (b - acc2 * A[:, 1]) / (A[:, 0] @ A[:, 0])), 0.0)
    else:
        from scipy.optimize import nnls  # deferred: keeps `import possibly` light

        s2, acc2 = (float(x) for x in nnls(A, b)[0])
    if s_known is None:
        s2 = max(s2, 1e-4 * var_k[0] / 6.0)
    if a_known is None:
        # the smallest acceleration the longest lag resolves
        acc2 = max(acc2, 6.0 * s2 * float(np.sqrt(2.0 * lag[-1] / n_k[-1])) / c_k[-1])
    return (a_known or float(np.sqrt(acc2)) * unit / dt**2,
            s_known or float(np.sqrt(s2)) * unit)
