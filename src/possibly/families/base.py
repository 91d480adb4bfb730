"""Generic machinery shared by every possibility family.

A conjugate family only supplies a handful of formulas (docs/math.md §2): its sufficient statistic
``T``, its natural parameters ``eta``, the support function ``S(eta)`` in usual parameters,
the mode, the curvature at the mode, power (``eta -> g * eta``) and the conjugate sum
(``eta_a + eta_b``) in usual parameters. Everything else (possibility, credibility, Bayes,
consistency, robust updates, batching, indexing) is generic.

The conjugate sum is computed in usual parameters rather than by adding natural parameters:
both give the same function, but the natural-parameter route subtracts large numbers
(e.g. ``beta = -eta_2 - eta_3**2 / (2 k)`` for the normal-gamma) and loses digits. Tests
cross-check the two routes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, TypeVar, cast

import numpy as np

from possibly.validation import as_finite, broadcast, check_unit_interval

__all__ = ["Possibility", "ExponentialFamily"]

# "the same family as self": the hooks combine two members of one family into a third
_F = TypeVar("_F", bound="Possibility")
_E = TypeVar("_E", bound="ExponentialFamily")


def xlogy(x, y) -> np.ndarray:
    """``x log y`` with ``0 log y = 0``: ``scipy.special.xlogy``, imported on first use.

    scipy.special is slow to import; deferring it keeps ``import possibly`` fast.
    """
    from scipy.special import xlogy as scipy_xlogy

    return scipy_xlogy(x, y)


def _batch_shape_argument(batch_shape: tuple[int, ...] = ()) -> tuple[int, ...]:
    """The arguments of a scalar family's ``uninformative``."""
    return tuple(batch_shape)


class Possibility:
    """A batch of possibility functions: non-negative functions whose supremum is 1.

    Subclasses are frozen dataclasses whose fields are float arrays with leading batch
    dimensions; ``_event_ndims`` gives the number of trailing (event) dimensions per field.
    """

    _event_ndims: ClassVar[dict[str, int]] = {}
    #: argument check per field (``check(name, value) -> float array``), run by __post_init__
    _checks: ClassVar[dict[str, Callable[[str, Any], np.ndarray]]] = {}

    def __post_init__(self) -> None:
        checked = {name: (check(name, getattr(self, name)), self._event_ndims[name])
                   for name, check in self._checks.items()}
        for name, value in broadcast(**checked).items():
            object.__setattr__(self, name, value)
        self._check_joint()

    def _check_joint(self) -> None:
        """Checks that involve several (broadcast) fields; none by default."""

    @classmethod
    def _zeros(cls, batch_shape: tuple[int, ...], dim: int = 0) -> dict[str, np.ndarray]:
        """All-zero fields: the uninformative member of every family here."""
        return {name: np.zeros(tuple(batch_shape) + (dim,) * ev)
                for name, ev in cls._event_ndims.items()}

    # -- structure ---------------------------------------------------------------------------
    def fields(self) -> dict[str, np.ndarray]:
        """The parameter arrays by name (batch dimensions first, then event dimensions)."""
        # every concrete family is a dataclass (the base class itself is not)
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(cast(Any, self))}

    @property
    def batch_shape(self) -> tuple[int, ...]:
        name, arr = next(iter(self.fields().items()))
        ev = self._event_ndims.get(name, 0)
        return arr.shape[: arr.ndim - ev]

    def __getitem__(self: _F, index) -> _F:
        """Index the batch dimensions, e.g. ``f[3]`` or ``f[:, 0]``."""
        if not isinstance(index, tuple):
            index = (index,)
        out = {}
        for name, arr in self.fields().items():
            ev = self._event_ndims.get(name, 0)
            out[name] = arr[index + (slice(None),) * ev]
        return self.from_fields(out)

    @classmethod
    def stack(cls, items: Sequence[Possibility], axis: int = 0
              ) -> Possibility | tuple[Possibility, ...]:
        """Stack functions of one family along a new batch axis (``axis`` counts batch dims).

        Unbatched functions (on points) return the tuple of the items instead.
        """
        if not items:
            raise ValueError("items must not be empty")
        for it in items:
            items[0]._check_same_family(it, "every item")
        first = items[0]
        if axis < 0:
            axis += len(first.batch_shape) + 1
        out = {}
        for name in first.fields():
            arrs = np.broadcast_arrays(*[getattr(it, name) for it in items])
            out[name] = np.stack(arrs, axis=axis)
        return type(first).from_fields(out)

    def __len__(self) -> int:
        if not self.batch_shape:
            raise TypeError(f"unbatched {type(self).__name__} has no len()")
        return self.batch_shape[0]

    @classmethod
    def from_fields(cls: type[_F], fields: dict[str, np.ndarray]) -> _F:
        """Build from :meth:`fields` without re-validating (the fast path for inner loops).

        The arrays must come from valid members (e.g. sliced or stacked ``fields()``).
        """
        obj = object.__new__(cls)
        for name, value in fields.items():
            object.__setattr__(obj, name, np.asarray(value, dtype=np.float64))
        return obj

    def __repr__(self) -> str:
        parts = []
        for name, arr in self.fields().items():
            text = np.array2string(arr, precision=6, threshold=6, separator=", ")
            parts.append(f"{name}={text}")
        return f"{type(self).__name__}({', '.join(parts)})"

    # -- what a family supplies --------------------------------------------------------------
    @property
    def effective_dim(self) -> int:
        """Number of free scalar parameters: the default ``d`` of ``gamma = c**(1/d)``."""
        raise NotImplementedError

    def log_possibility(self, x) -> np.ndarray:
        raise NotImplementedError

    @property
    def mode(self):
        """E*: the maximiser of the possibility function (a tuple for joint families)."""
        raise NotImplementedError

    @property
    def variance(self):
        """V*: inverse of the Hessian of ``-log f`` at the mode."""
        raise NotImplementedError

    @classmethod
    def uninformative(cls: type[_F], *args: Any, **kwargs: Any) -> _F:
        """The possibility function equal to 1 everywhere, in this family.

        Scalar families take ``uninformative(batch_shape=())``; families of vectors or
        matrices take the dimension first, ``uninformative(dim, batch_shape=())``. The
        signature here is open so that each family can state its own; the default
        implementation is the scalar one.
        """
        return cls(**cls._zeros(_batch_shape_argument(*args, **kwargs)))

    def _scaled(self: _F, g: np.ndarray) -> _F:
        """``f ** g`` for a validated, broadcastable, non-negative ``g``."""
        raise NotImplementedError

    def _add(self: _F, other: _F) -> _F:
        """The renormalised product ``f * g / sup(f * g)`` (same family)."""
        raise NotImplementedError

    def _log_consistency(self: _F, other: _F) -> np.ndarray:
        """``log sup(f * g)``, in ``(-inf, 0]``."""
        raise NotImplementedError

    @property
    def bounded(self) -> np.ndarray:
        """Whether the function has a finite supremum (always, except some likelihoods)."""
        return np.ones(self.batch_shape, dtype=bool)

    # -- generic operations ------------------------------------------------------------------
    def possibility(self, x) -> np.ndarray:
        """``f(x) = exp(log f(x))``, in ``[0, 1]``."""
        return np.exp(self.log_possibility(x))

    def power(self: _F, g, *, validate: bool = True) -> _F:
        """``f ** g`` for ``g >= 0``: the same mode, information scaled by ``g``.

        ``power(0)`` is the uninformative function 1 (except for the Pareto family, whose
        support indicator cannot be discounted). ``validate=False`` skips the checks of ``g``
        (a non-negative float array broadcasting with the batch): the inner-loop fast path.
        """
        if not validate:
            return self._scaled(np.asarray(g, dtype=np.float64))
        g = as_finite("g", g)
        if (g < 0).any():
            raise ValueError(f"g (the power) must be >= 0, got {float(g[g < 0].ravel()[0]):g}")
        try:
            np.broadcast_shapes(g.shape, self.batch_shape)
        except ValueError:
            raise ValueError(
                f"g of shape {g.shape} does not broadcast with batch shape {self.batch_shape}"
            ) from None
        return self._scaled(g)

    def __pow__(self: _F, g) -> _F:
        return self.power(g)

    def split(self: _F, omega, part: str = "all") -> tuple[_F, _F]:
        """Split into independent pieces ``(f ** omega, f ** (1 - omega))`` (paper §4.3).

        Their product is ``f``; the second is lent to an unbounded likelihood by
        :func:`possibly.robust_update`. Families may offer finer ``part`` choices.
        """
        omega = check_unit_interval("omega", omega, low_open=True, high_open=True)
        if part != "all":
            raise ValueError(f"part must be 'all' for {type(self).__name__}, got {part!r}")
        return self.power(omega), self.power(1.0 - omega)

    def credibility(self, lower, upper=None) -> np.ndarray | float:
        """Credibility of ``[lower, upper]``: the sup of ``f`` over the interval.

        Defined for the univariate families, which are all unimodal, so the sup is reached
        at the mode clipped to the interval. (Functions on points also accept a set in
        place of ``lower``, hence ``upper``'s default.)
        """
        if not self._univariate:
            raise TypeError(f"credibility(lower, upper) is for univariate families, "
                            f"not {type(self).__name__}")
        if upper is None:
            raise TypeError(f"credibility of a {type(self).__name__} needs the interval's "
                            "upper bound: credibility(lower, upper)")
        lower = as_finite("lower", lower, allow_inf=True)
        upper = as_finite("upper", upper, allow_inf=True)
        if (lower > upper).any():
            raise ValueError("lower must be <= upper")
        point = np.clip(self.mode, lower, upper)
        return np.exp(self.log_possibility(point))

    _univariate: ClassVar[bool] = False

    def _check_same_family(self, other: Any, name: str = "likelihood") -> None:
        if type(other) is not type(self):
            raise TypeError(
                f"{name} must be a {type(self).__name__} (the prior's family), "
                f"got {type(other).__name__}"
            )

    def _check_bounded(self, name: str) -> None:
        if not np.all(self.bounded):
            raise ValueError(
                f"{name} is unbounded (its supremum is infinite), so it carries no "
                "normalised information; use robust_update(..., omega=...) to lend it part "
                "of the prior (paper §4.3)"
            )


class ExponentialFamily(Possibility):
    """Maxitive exponential family ``f(x) = exp(<eta, T(x)> - S(eta))`` (docs/math.md §2)."""

    #: number of event dimensions of each component of ``eta`` (and of ``T``)
    _natural_ndims: ClassVar[tuple[int, ...]] = ()

    def natural(self) -> tuple[np.ndarray, ...]:
        """Natural parameters ``eta`` (one array per component of ``T``)."""
        raise NotImplementedError

    @classmethod
    def from_natural(cls: type[_E], eta: tuple[np.ndarray, ...]) -> _E:
        raise NotImplementedError

    def sufficient(self, x) -> tuple[np.ndarray, ...]:
        """The sufficient statistic ``T(x)``, one array per component of ``eta``."""
        raise NotImplementedError

    def log_support(self) -> np.ndarray:
        """``S(eta) = sup_x <eta, T(x)>``, from usual parameters (``+inf`` when unbounded)."""
        raise NotImplementedError

    def _log_consistency(self: _E, other: _E) -> np.ndarray:
        # log c = S(eta_a + eta_b) - S(eta_a) - S(eta_b); clip the rounding above 0.
        post = self._add(other)
        val = post.log_support() - self.log_support() - other.log_support()
        return np.minimum(val, 0.0)

    def log_possibility_natural(self, x) -> np.ndarray:
        """``<eta, T(x)> - S(eta)``: the generic route, used to cross-check families."""
        eta = self.natural()
        t = self.sufficient(x)
        total = -self.log_support()
        for e, s, ev in zip(eta, t, self._natural_ndims, strict=True):
            prod = e * s
            if ev:
                prod = prod.sum(axis=tuple(range(-ev, 0)))
            total = total + prod
        return total
