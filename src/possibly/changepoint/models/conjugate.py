"""A segment model from any conjugate family: the prior's family and one likelihood.

:class:`ConjugateModel` runs the possibilistic Bayes rule of :mod:`possibly.inference` on the
joint ``(r, θ)`` through the algebra's unchecked fast path, so any family of
:mod:`possibly.families` with a likelihood constructor is a segment model without new formulas.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass
from typing import Any, NamedTuple

import numpy as np

from possibly.changepoint.models.segment_model import Runs, SegmentModel, real_scalar
from possibly.families.base import ExponentialFamily, Possibility
from possibly.inference import combine, log_consistency

__all__ = ["ConjugateModel"]

#: hindsight log consistency below which a discounted observation of a ConjugateModel is an
#: outlier: that of a normal value 3 σ from a well-determined mean
OUTLIER_LOG_CONSISTENCY = -4.5

def _mode_value(member: Possibility) -> Any:
    """E* of an unbatched member: a float, or a flat array (tuple modes concatenated)."""
    m = member.mode
    if isinstance(m, tuple):
        return np.concatenate([np.ravel(np.asarray(c, dtype=np.float64)) for c in m])
    m = np.asarray(m, dtype=np.float64)
    return float(m) if m.ndim == 0 else m.copy()


class ConjugateObservation(NamedTuple):
    """:meth:`ConjugateModel.prepare`: the runs as a batched family member and the checked
    information in ``y``."""

    runs: Runs
    y: Any
    member: Possibility
    information: Possibility


@dataclass(frozen=True, eq=False)
class ConjugateModel(SegmentModel):
    """A segment model from any conjugate family: a prior and the information in one observation.

    Given the run length, the segment parameter θ has a possibility function of the prior's
    family. Per observation ``y`` (docs/math.md §2 and §6, generalised):

    * forget: ``f_r ← f_r ** ρ`` (for the normal mean it is ``λ ← ρ λ``), the new run gets
      ``f = prior``;
    * consistency: ``log c = max_r [log w_r + log sup_θ f_r(θ) L(θ | y)]``;
    * update: the possibilistic Bayes rule on the joint ``(r, θ)`` with ``L^γ``:
      ``log w_r += log sup_θ f_r(θ) L(θ | y)^γ`` and ``f_r ← f_r L^γ / sup`` (the conjugate
      sum, :func:`possibly.combine`), then ``log w −= max log w``.

    Parameters
    ----------
    prior : Possibility
        One member (batch shape ``()``) of a conjugate family (:class:`~possibly.Normal`,
        :class:`~possibly.Gamma`, :class:`~possibly.Beta`, :class:`~possibly.NormalGamma`,
        :class:`~possibly.MultivariateNormal`, ...): the possibility of θ at the start of a
        segment, e.g. ``Gamma.uninformative()``.
    likelihood : callable
        Maps one observation ``y[t]`` (a float, or an array for vector observations) to the
        information in its likelihood, a member of the prior's family with batch shape ``()``,
        e.g. :func:`possibly.likelihood.poisson` or
        ``functools.partial(possibly.likelihood.normal, sd=2.0)``. Use a module-level function
        or a ``functools.partial`` (not a lambda) if the detector must be pickled.
    dim : float, optional
        Effective dimension ``d`` of ``(θ, r)`` in ``γ = c^(1/d)``; default
        ``prior.effective_dim + 1`` (2 for a scalar θ, as in the paper).

    Examples
    --------
    >>> import possibly as ps
    >>> model = ConjugateModel(ps.Gamma.uninformative(), ps.likelihood.poisson)
    >>> model.dim
    2.0
    >>> counts = [3, 4, 2, 3, 4, 15, 14, 16, 15, 13]
    >>> res = ps.ChangepointDetector(hazard=0.01, forgetting=1.0, model=model).fit(counts)
    >>> res.changepoints.tolist(), round(float(res.mean[-1]), 2)  # E* of the last rate
    ([5], 14.33)
    >>> res.discount.round(2)  # the first counts after the change were discounted
    array([1.  , 0.96, 0.88, 1.  , 0.95, 0.1 , 0.17, 0.35, 1.  , 0.95])
    """

    prior: Possibility
    likelihood: Callable[[Any], Possibility]
    _: KW_ONLY
    dim: float | None = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        prior = self.prior
        if not isinstance(prior, ExponentialFamily):
            raise ValueError(f"prior must be a member of a conjugate family (Normal, Gamma, Beta, "
                             f"NormalGamma, ...), got {type(prior).__name__}")
        if prior.batch_shape != ():
            raise ValueError(f"prior must be a single possibility function (batch shape ()), "
                             f"got batch shape {prior.batch_shape}")
        if not np.all(prior.bounded):
            raise ValueError("prior is unbounded (its supremum is infinite)")
        if not callable(self.likelihood):
            raise ValueError(f"likelihood must be callable (one observation -> the information "
                             f"in its likelihood), got {self.likelihood!r}")
        if self.dim is None:
            dim = float(prior.effective_dim + 1)
        else:
            dim = real_scalar("dim", self.dim)
            if not dim > 0.0:
                raise ValueError(f"dim must be positive, got {dim!r}")
        object.__setattr__(self, "dim", dim)
        object.__setattr__(self, "estimate_shape", np.shape(_mode_value(prior)))

    def information(self, y: Any) -> Possibility:
        """``likelihood(y)``, checked: the prior's family, batch shape ``()``, bounded."""
        try:
            lik = self.likelihood(y)
        except (TypeError, ValueError) as exc:
            try:
                shown = np.asarray(y, dtype=np.float64).tolist()
            except (TypeError, ValueError):
                shown = y
            raise ValueError(f"likelihood failed on the observation {shown!r}: {exc}") from exc
        if type(lik) is not type(self.prior):
            raise ValueError(f"likelihood must return a {type(self.prior).__name__} (the prior's "
                             f"family), got {type(lik).__name__}")
        if lik.batch_shape != ():
            raise ValueError(f"likelihood must return the information in one observation "
                             f"(batch shape ()), got batch shape {lik.batch_shape}")
        if not np.all(lik.bounded):
            raise ValueError("likelihood returned an unbounded function (infinite supremum): "
                             "it carries no normalised information")
        return lik

    # the runs dict: the family's fields (run axis first) and "seen" (absorbed an observation)
    def _member(self, runs: Runs) -> Possibility:
        return type(self.prior).from_fields({k: v for k, v in runs.items() if k != "seen"})

    def _runs(self, member: Possibility, seen: np.ndarray) -> Runs:
        return {**member.fields(), "seen": seen}

    def new_runs(self, n: int) -> Runs:
        fields = {name: np.repeat(np.asarray(arr)[None], n, axis=0)
                  for name, arr in self.prior.fields().items()}
        return {**fields, "seen": np.zeros(n, dtype=bool)}

    def forget(self, runs: Runs, rho: float) -> Runs:
        if rho == 1.0:
            return runs
        return self._runs(self._member(runs).power(rho, validate=False), runs["seen"])

    def prepare(self, runs: Runs, y: Any) -> ConjugateObservation:
        return ConjugateObservation(runs, y, self._member(runs), self.information(y))

    def log_consistency(self, prepared: ConjugateObservation) -> np.ndarray:
        return log_consistency(prepared.member, prepared.information, validate=False)

    def update(self, prepared: ConjugateObservation, gamma: float
               ) -> tuple[np.ndarray, Runs]:
        lik = prepared.information
        if gamma != 1.0:
            lik = lik.power(gamma, validate=False)
        post = prepared.member
        # Bayes on (r, θ): w_r f_r L^γ = [w_r sup(f_r L^γ)] · [f_r L^γ / sup(f_r L^γ)]
        incr = log_consistency(post, lik, validate=False)
        post = combine(post, lik, validate=False)
        return incr, self._runs(post, np.ones_like(prepared.runs["seen"]))

    def estimate(self, runs: Runs) -> np.ndarray:
        n = len(runs["seen"])
        out = np.full((n, *self.estimate_shape), np.nan)
        post = self._member(runs)
        for i in np.flatnonzero(runs["seen"]):
            out[i] = _mode_value(post[int(i)])
        return out

    def outlying(self, y: np.ndarray, discount: np.ndarray) -> np.ndarray:
        """Consistency with the segment in hindsight below ``exp(-4.5)`` (see the result)."""
        post, liks = self.prior, {}
        for i in range(len(y)):
            if not math.isnan(discount[i]):
                liks[i] = self.information(y[i])
                post = combine(post, liks[i].power(float(discount[i]), validate=False),
                               validate=False)
        out = np.zeros(len(y), dtype=bool)
        for i, lik in liks.items():
            out[i] = float(log_consistency(post, lik, validate=False)) < OUTLIER_LOG_CONSISTENCY
        return out

    def __repr__(self) -> str:
        name = getattr(self.likelihood, "__qualname__", None) or repr(self.likelihood)
        return f"ConjugateModel(prior={self.prior!r}, likelihood={name}, dim={self.dim:g})"
