"""Possibility functions known by their values at points, and callable log-likelihoods.

Beyond conjugacy a possibility function is represented by its (log) values at a finite set of
points: the nodes of a grid (:class:`GridPossibility`, here) or particles
(:class:`possibly.ParticlePossibility`). Every operation of the algebra is then a pointwise
operation followed by a maximum (docs/math.md §1):

* Bayes (``combine``): ``log f + log L``, minus its maximum;
* consistency: ``log c = max(log f + log L)``;
* robust update: ``log f + rho log L``, minus its maximum, with ``rho`` from ``c``;
* E*: the best point; credibility of a set: the largest value in it.

All maxima are over the points, so they are lower bounds of the suprema over the continuous
space, accurate to the resolution of the points.

The likelihood is either a conjugate possibility function (e.g. ``ps.likelihood.normal``),
evaluated at the points, or a :class:`LogLikelihood` wrapping a user callable
``loglik(theta, y)``. The information in the likelihood is ``L = p(y | θ) / sup p(y | ·)``
with the supremum over the whole parameter space, not over the points: an observation far
from every point must still get a small consistency. The supremum is the closed form
``log_sup`` when given, else a local numerical maximisation (an approximation).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from possibly.families.base import Possibility
from possibly.pointwise._common import normalised
from possibly.validation import as_finite

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = ["GridPossibility", "LogLikelihood", "PointPossibility", "check_log_values", "log_power"]


def check_log_values(name: str, values, n: int) -> np.ndarray:
    """Check what a log-likelihood or log-possibility callable returned for ``n`` points.

    Returns a float array of shape ``(n,)``; raises ValueError naming ``name`` for a wrong
    shape, a non-numeric output, NaN or ``+inf`` (``-inf``, an impossible point, is allowed).
    """
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must return numbers, got {type(values).__name__}") from exc
    if arr.shape != (n,):
        raise ValueError(f"{name} returned an array of shape {arr.shape}, expected ({n},): "
                         "one log-value per point")
    if np.isnan(arr).any():
        raise ValueError(f"{name} returned NaN at {int(np.isnan(arr).sum())} of {n} points")
    if (arr == np.inf).any():
        raise ValueError(f"{name} returned +inf: the likelihood must be bounded")
    return arr


def log_power(power: float, log_values: np.ndarray) -> np.ndarray:
    """``log(f ** power) = power * log f`` with ``0 * (-inf) = 0`` (``f ** 0 = 1`` everywhere).

    Examples
    --------
    >>> import numpy as np
    >>> log_power(0.0, np.array([-np.inf, -1.0])), log_power(0.5, np.array([-np.inf, -1.0]))
    (array([0., 0.]), array([-inf, -0.5]))
    """
    if power == 0.0:
        return np.zeros_like(log_values)
    return power * log_values


@dataclass(frozen=True, eq=False)
class LogLikelihood:
    """The information ``L(θ | y) = exp(loglik(θ, y) - sup_θ' loglik(θ', y))`` of a callable.

    Pass it as the likelihood to :func:`possibly.combine`, :func:`possibly.consistency` and
    :func:`possibly.robust_update` together with a :class:`GridPossibility` or
    :class:`possibly.ParticlePossibility` prior.

    Parameters
    ----------
    loglik : callable
        ``loglik(theta, y)`` with ``theta`` of shape ``(n,)`` (one-dimensional parameter) or
        ``(n, k)``, returning the ``n`` log-likelihoods (``-inf`` allowed, NaN not). Additive
        constants do not matter.
    y : any
        The observation, passed unchanged to ``loglik``.
    log_sup : float or callable, optional
        ``sup_θ loglik(θ, y)`` in closed form (a number, or ``log_sup(y)``). Without it the
        supremum is approximated by a Nelder-Mead search started from the best point: a local
        search, so give the closed form whenever the likelihood may be multimodal.
    power : float
        Exponent applied to ``L`` (set by the robust update; 1 by default).

    Examples
    --------
    >>> import numpy as np, possibly as ps
    >>> lik = ps.LogLikelihood(lambda th, y: -0.5 * (y - th) ** 2, y=2.0, log_sup=0.0)
    >>> prior = ps.GridPossibility(np.linspace(-5, 5, 1001), -0.5 * np.linspace(-5, 5, 1001)**2)
    >>> round(float(ps.consistency(prior, lik)), 6)                 # exp(-2**2 / 4)
    0.367879
    """

    loglik: Callable[[np.ndarray, Any], Any]
    y: Any
    log_sup: float | Callable[[Any], float] | None = None
    power: float = 1.0

    def __post_init__(self) -> None:
        if not callable(self.loglik):
            raise ValueError(f"loglik must be callable loglik(theta, y), got "
                             f"{type(self.loglik).__name__}")
        p = float(as_finite("power", self.power))
        if p < 0:
            raise ValueError(f"power must be >= 0, got {p}")
        object.__setattr__(self, "power", p)

    # what robust_update asks of a likelihood
    batch_shape: ClassVar[tuple[int, ...]] = ()

    def _check_bounded(self, name: str) -> None:
        """Boundedness is checked when the values are computed (``+inf`` is an error)."""

    def _scaled(self, g) -> LogLikelihood:
        g = np.asarray(g, dtype=np.float64)
        if g.size != 1:
            raise ValueError(f"the power of a LogLikelihood must be a scalar, got shape {g.shape}")
        return dataclasses.replace(self, power=self.power * float(g.reshape(())))

    def evaluate(self, points: np.ndarray) -> np.ndarray:
        """``loglik(points, y)``, checked: shape ``(n,)``, no NaN, no ``+inf``."""
        return check_log_values("loglik", self.loglik(points, self.y), len(points))

    def sup(self, points: np.ndarray, values: np.ndarray | None = None) -> float:
        """``sup_θ loglik(θ, y)``: the closed form, or a local search from the best point."""
        if values is None:
            values = self.evaluate(points)
        if self.log_sup is not None:
            s = self.log_sup(self.y) if callable(self.log_sup) else self.log_sup
            s = float(as_finite("log_sup", s))
            top = float(values.max())
            if top > s + 1e-9 * max(1.0, abs(s)):
                raise ValueError(f"log_sup = {s} is below loglik = {top} at one of the points: "
                                 "it is not the supremum")
            return s
        best = int(np.argmax(values))
        top = float(values[best])
        if top == -np.inf:
            raise ValueError("loglik is -inf at every point, so its supremum cannot be searched "
                             "from them; pass log_sup")
        return max(top, _local_max(self.loglik, self.y, points, best))

    def log_information(self, points: np.ndarray) -> np.ndarray:
        """``power * (loglik - sup)`` at ``points``: log of ``L ** power``."""
        values = self.evaluate(points)
        return log_power(self.power, np.minimum(values - self.sup(points, values), 0.0))


def _local_max(loglik, y, points: np.ndarray, best: int) -> float:
    """Nelder-Mead from ``points[best]``, with a first simplex scaled to the points' spread."""
    start = np.atleast_1d(points[best]).astype(np.float64)
    flat = points.reshape(len(points), -1)
    spread = flat.std(axis=0) if len(points) > 1 else np.ones(start.shape)
    step = np.where(spread > 0, 0.1 * spread, 0.1)
    simplex = np.vstack([start, start + np.diag(step)])
    one_d = points.ndim == 1

    def objective(theta: np.ndarray) -> float:
        arg = theta[None, 0] if one_d else theta[None, :]
        val = np.asarray(loglik(arg, y), dtype=np.float64).reshape(-1)
        if val.shape != (1,) or np.isnan(val[0]):
            return np.inf  # checked properly at the points; here just steer away
        return -float(val[0])

    from scipy import optimize  # deferred: scipy.optimize costs ~0.2 s at import

    res = optimize.minimize(objective, start, method="Nelder-Mead",
                            options={"initial_simplex": simplex, "xatol": 1e-10,
                                     "fatol": 1e-12, "maxiter": 2000 * start.size})
    if res.fun == -np.inf:
        raise ValueError("loglik returned +inf during the search for its supremum: the "
                         "likelihood must be bounded")
    return -float(res.fun) if np.isfinite(res.fun) else -np.inf


class PointPossibility(Possibility):
    """Shared machinery of possibility functions known by their values at points.

    Subclasses supply ``_flat_points`` (``(n,)`` or ``(n, k)``), ``_flat_log_values``
    (``(n,)``) and ``_with_log_values(flat)``.
    """

    # -- what subclasses supply --------------------------------------------------------------
    def _flat_points(self) -> np.ndarray:
        raise NotImplementedError

    def _flat_log_values(self) -> np.ndarray:
        raise NotImplementedError

    def _with_log_values(self, flat: np.ndarray) -> PointPossibility:
        raise NotImplementedError

    @property
    def _param_dim(self) -> int:
        pts = self._flat_points()
        return 1 if pts.ndim == 1 else pts.shape[1]

    # -- structure ---------------------------------------------------------------------------
    @property
    def batch_shape(self) -> tuple[int, ...]:
        return ()

    def __getitem__(self, index):
        raise TypeError(f"{type(self).__name__} is not batched")

    @classmethod
    def stack(cls, items: Sequence[Possibility], axis: int = 0) -> tuple[Possibility, ...]:
        """Functions on points are not batched: the "stack" is the tuple of the functions.

        So ``update_sequence(prior, likelihoods).trajectory[t]`` is still the posterior after
        observation ``t``.
        """
        if not items:
            raise ValueError("items must not be empty")
        for it in items:
            if not isinstance(it, PointPossibility):
                raise TypeError(f"every item must be a function on points, got "
                                f"{type(it).__name__}")
        return tuple(items)

    @property
    def effective_dim(self) -> int:
        """The number of coordinates of θ (the default ``d`` of ``gamma = c ** (1/d)``)."""
        return self._param_dim

    @property
    def mode(self) -> np.ndarray:
        """E*: the point with the largest value (to the resolution of the points)."""
        return self._flat_points()[int(np.argmax(self._flat_log_values()))]

    def credibility(self, region, upper=None) -> float:
        """Credibility ``sup_{θ ∈ A} f(θ)`` of a set ``A``, over the points in it.

        Parameters
        ----------
        region : array of bool, callable or array_like
            A boolean mask over the points (the shape of ``log_values``); a predicate
            ``region(theta) -> bool array`` called with the points as ``loglik`` is; or,
            with ``upper``, the lower corner of an interval (box in k dimensions).
        upper : array_like, optional
            Upper corner of the interval or box ``[region, upper]``.

        Returns
        -------
        float
            In ``[0, 1]``; 0 when no point lies in the set (``sup ∅ = 0``).
        """
        pts = self._flat_points()
        n = len(pts)
        if upper is not None:
            k = self._param_dim
            lo = as_finite("lower", region, allow_inf=True)
            hi = as_finite("upper", upper, allow_inf=True)
            if lo.size != k or hi.size != k:
                raise ValueError(f"lower and upper must have {k} coordinate(s), got "
                                 f"{lo.size} and {hi.size}")
            if (lo > hi).any():
                raise ValueError("lower must be <= upper")
            p2 = pts.reshape(n, k)
            mask = ((p2 >= lo.reshape(k)) & (p2 <= hi.reshape(k))).all(axis=1)
        elif callable(region):
            mask = np.asarray(region(pts))
            if mask.dtype != bool or mask.shape != (n,):
                raise ValueError(f"region(theta) must return a boolean array of shape ({n},), "
                                 f"got dtype {mask.dtype} and shape {mask.shape}")
        else:
            mask = np.asarray(region)
            if mask.dtype != bool:
                raise ValueError("region must be a boolean mask, a predicate, or the lower end "
                                 "of an interval given with upper")
            mask = self._flat_mask(mask)
        vals = self._flat_log_values()[mask]
        return float(np.exp(vals.max())) if vals.size else 0.0

    def _flat_mask(self, mask: np.ndarray) -> np.ndarray:
        n = len(self._flat_points())
        if mask.shape != (n,):
            raise ValueError(f"region mask must have shape ({n},), got {mask.shape}")
        return mask

    # -- the algebra -------------------------------------------------------------------------
    def _check_same_family(self, other: Any, name: str = "likelihood") -> None:
        if isinstance(other, LogLikelihood):
            return
        if isinstance(other, PointPossibility):
            if type(other) is not type(self) or not self._same_points(other):
                raise TypeError(f"{name} must be defined on the same points as the prior")
            return
        if isinstance(other, Possibility):
            if other.batch_shape:
                raise ValueError(f"{name} must not be batched to be evaluated at the points, "
                                 f"got batch shape {other.batch_shape}")
            return
        raise TypeError(f"{name} must be a LogLikelihood or a possibility function, got "
                        f"{type(other).__name__}")

    def _same_points(self, other: PointPossibility) -> bool:
        a, b = self._flat_points(), other._flat_points()
        return a.shape == b.shape and bool(np.array_equal(a, b))

    def _log_information(self, other) -> np.ndarray:
        """Log values of ``other`` (a likelihood) at the points."""
        self._check_same_family(other)
        pts = self._flat_points()
        if isinstance(other, LogLikelihood):
            return other.log_information(pts)
        if isinstance(other, PointPossibility):
            return other._flat_log_values()
        vals = np.asarray(other.log_possibility(pts), dtype=np.float64)
        if vals.shape != (len(pts),):
            raise ValueError(f"likelihood {type(other).__name__} does not have the dimension "
                             f"of the points (values of shape {vals.shape})")
        return vals

    def _joint(self, other) -> np.ndarray:
        with np.errstate(invalid="ignore"):
            return self._flat_log_values() + self._log_information(other)

    def _log_consistency(self, other) -> np.ndarray:
        return np.asarray(min(float(self._joint(other).max()), 0.0))

    def _add(self, other) -> PointPossibility:
        joint = self._joint(other)
        top = joint.max()
        if top == -np.inf:
            raise ValueError("prior and likelihood are both zero at every point (consistency "
                             "0): the posterior is undefined; use robust_update, which keeps "
                             "the prior")
        return self._with_log_values(joint - top)

    def _scaled(self, g) -> PointPossibility:
        g = np.asarray(g, dtype=np.float64)
        if g.size != 1:
            raise ValueError(f"the power must be a scalar, got shape {g.shape}")
        return self._with_log_values(log_power(float(g.reshape(())), self._flat_log_values()))

    def split(self, omega, part: str = "all"):
        raise ValueError(f"omega (lending part of the prior to an unbounded likelihood) is not "
                         f"supported for {type(self).__name__}: give a bounded likelihood")


@dataclass(frozen=True, eq=False, repr=False)
class GridPossibility(PointPossibility):
    """A possibility function given by its values on a 1-D or 2-D grid.

    Parameters
    ----------
    points : array_like or tuple of array_like
        The grid: a strictly increasing 1-D array, or a tuple ``(x, y)`` of such arrays (the
        axes of a 2-D grid; more axes work the same way).
    log_values : array_like, shape ``(len(x),)`` or ``(len(x), len(y))``
        Log possibility at the nodes (``-inf`` for 0), normalised here so that the maximum
        is 0.

    Notes
    -----
    E* is the best node, V* a finite-difference Hessian of ``-log f`` there (exact for a
    quadratic ``log f``), consistency the maximum over the nodes: all accurate to the grid
    spacing. Off the nodes :meth:`log_possibility` interpolates the possibility linearly.

    Examples
    --------
    >>> import numpy as np, possibly as ps
    >>> theta = np.linspace(-4.0, 4.0, 801)
    >>> prior = ps.GridPossibility(theta, ps.Normal(0.0, 1.0).log_possibility(theta))
    >>> post = ps.combine(prior, ps.likelihood.normal(2.0, sd=1.0))
    >>> float(post.mode), round(float(post.variance), 6)        # N̄(1, 2) in closed form
    (1.0, 0.5)
    >>> round(post.credibility(2.0, np.inf), 6)                 # exp(-2 (2 - 1)**2 / 2)
    0.367879
    """

    points: Any
    log_values: np.ndarray

    if TYPE_CHECKING:  # log_values is an array; the constructor takes an array-like
        def __init__(self, points: Any, log_values: ArrayLike) -> None: ...

    def __post_init__(self) -> None:
        pts = self.points
        axes_in = (pts if isinstance(pts, tuple | list) and len(pts) and np.ndim(pts[0]) == 1
                   else (pts,))
        axes = []
        for i, ax in enumerate(axes_in):
            a = as_finite(f"points[{i}]" if len(axes_in) > 1 else "points", ax)
            if a.ndim != 1 or a.size < 2:
                raise ValueError(f"each grid axis must be a 1-D array of at least 2 values, got "
                                 f"shape {a.shape}")
            if not (np.diff(a) > 0).all():
                raise ValueError("each grid axis must be strictly increasing")
            axes.append(a)
        shape = tuple(a.size for a in axes)
        lv = as_finite("log_values", self.log_values, allow_inf=True)
        if lv.shape != shape:
            raise ValueError(f"log_values must have the grid's shape {shape}, got {lv.shape}")
        object.__setattr__(self, "points", axes[0] if len(axes) == 1 else tuple(axes))
        object.__setattr__(self, "log_values", normalised("log_values", lv))

    _univariate: ClassVar[bool] = False

    @property
    def axes(self) -> tuple[np.ndarray, ...]:
        """The grid axes (a 1-tuple for a 1-D grid)."""
        return self.points if isinstance(self.points, tuple) else (self.points,)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.log_values.shape

    def grid_points(self) -> np.ndarray:
        """The nodes: shape ``(n,)`` for a 1-D grid, ``(nx, ny, 2)`` for a 2-D one."""
        if len(self.axes) == 1:
            return self.axes[0]
        return np.stack(np.meshgrid(*self.axes, indexing="ij"), axis=-1)

    def __repr__(self) -> str:
        return f"GridPossibility(shape={self.shape}, mode={self.mode!r})"

    def _flat_points(self) -> np.ndarray:
        g = self.grid_points()
        return g if g.ndim == 1 else g.reshape(-1, len(self.axes))

    def _flat_log_values(self) -> np.ndarray:
        return self.log_values.reshape(-1)

    def _flat_mask(self, mask: np.ndarray) -> np.ndarray:
        if mask.shape != self.shape:
            raise ValueError(f"region mask must have the grid's shape {self.shape}, got "
                             f"{mask.shape}")
        return mask.reshape(-1)

    def _with_log_values(self, flat: np.ndarray) -> GridPossibility:
        return GridPossibility(self.points, flat.reshape(self.shape))

    def _same_points(self, other: PointPossibility) -> bool:
        return isinstance(other, GridPossibility) and len(self.axes) == len(other.axes) and all(
            a.shape == b.shape and np.array_equal(a, b) for a, b in zip(self.axes, other.axes,
                                                                        strict=True))

    @classmethod
    def from_function(cls, points, log_f: Callable[[np.ndarray], Any]) -> GridPossibility:
        """Tabulate ``log_f`` (called with the nodes as ``loglik`` is) on a grid.

        Examples
        --------
        >>> import numpy as np, possibly as ps
        >>> beta = ps.Beta(3, 7)
        >>> f = ps.GridPossibility.from_function(np.linspace(0, 1, 11), beta.log_possibility)
        >>> float(f.mode)
        0.3
        """
        shell = cls(points, np.zeros(tuple(np.size(a) for a in (
            points if isinstance(points, tuple | list) and np.ndim(points[0]) == 1
            else (points,)))))
        pts = shell._flat_points()
        vals = check_log_values("log_f", log_f(pts), len(pts))
        return cls(shell.points, vals.reshape(shell.shape))

    def log_possibility(self, x) -> np.ndarray:
        """``log f(x)`` by linear interpolation of ``f`` between nodes, ``-inf`` outside the grid.

        ``x`` has shape ``(...,)`` for a 1-D grid and ``(..., k)`` for a k-D one.
        """
        x = as_finite("x", x, allow_inf=True)
        vals = np.exp(self.log_values)
        with np.errstate(divide="ignore"):
            if len(self.axes) == 1:
                ax = self.axes[0]
                out = np.interp(x, ax, vals, left=0.0, right=0.0)
                inside = (x >= ax[0]) & (x <= ax[-1])
                return np.where(inside, np.log(out), -np.inf)
            from scipy.interpolate import RegularGridInterpolator

            k = len(self.axes)
            if x.shape[-1:] != (k,):
                raise ValueError(f"x must have shape (..., {k}), got {x.shape}")
            interp = RegularGridInterpolator(self.axes, vals, bounds_error=False, fill_value=0.0)
            return np.log(interp(x.reshape(-1, k)).reshape(x.shape[:-1]))

    @property
    def variance(self) -> np.ndarray:
        """V*: inverse Hessian of ``-log f`` at the best node, by finite differences.

        A scalar for a 1-D grid, a ``(k, k)`` matrix otherwise. Needs the best node to have a
        neighbour on each side with a finite value.
        """
        idx = np.unravel_index(int(np.argmax(self.log_values)), self.shape)
        k = len(self.axes)
        if any(i == 0 or i == n - 1 for i, n in zip(idx, self.shape, strict=True)):
            raise ValueError("the mode lies on the edge of the grid: V* needs a node on each "
                             "side; extend the grid")
        lv = self.log_values
        hess = np.empty((k, k))
        for a in range(k):
            ax = self.axes[a]
            i = idx[a]
            hm, hp = ax[i] - ax[i - 1], ax[i + 1] - ax[i]
            lo, hi = list(idx), list(idx)
            lo[a] -= 1
            hi[a] += 1
            # three-point second derivative on a possibly non-uniform axis
            hess[a, a] = 2.0 * (hm * lv[tuple(hi)] + hp * lv[tuple(lo)] - (hm + hp) * lv[idx]) \
                / (hm * hp * (hm + hp))
            for b in range(a):
                bx = self.axes[b]
                j = idx[b]
                corners = []
                for da in (1, -1):
                    for db in (1, -1):
                        c = list(idx)
                        c[a] += da
                        c[b] += db
                        corners.append(lv[tuple(c)])
                hess[a, b] = hess[b, a] = (corners[0] - corners[1] - corners[2] + corners[3]) \
                    / ((ax[i + 1] - ax[i - 1]) * (bx[j + 1] - bx[j - 1]))
        if not np.isfinite(hess).all():
            raise ValueError("log f is -inf next to the mode: V* is undefined on this grid")
        neg = -hess
        if k == 1:
            if neg[0, 0] <= 0:
                raise ValueError("log f is not curved down at the mode: V* is undefined")
            return np.asarray(1.0 / neg[0, 0])
        if (np.linalg.eigvalsh(neg) <= 0).any():
            raise ValueError("log f is not curved down at the mode: V* is undefined")
        return np.linalg.inv(neg)
