"""Random members of every family, and maps from unconstrained vectors to their domains.

The maps let the tests find suprema by brute force (scipy.optimize over an unconstrained
vector), independently of the closed forms in the library.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

import possibly as ps


def _spd(rng: np.random.Generator, d: int, scale: float = 1.0) -> np.ndarray:
    a = rng.normal(size=(d, d))
    return scale * (a @ a.T / d + 0.5 * np.eye(d))


def _chol_from(z: np.ndarray, d: int) -> np.ndarray:
    low = np.zeros((d, d))
    rows, cols = np.tril_indices(d)
    low[rows, cols] = z
    low[np.diag_indices(d)] = np.exp(np.diag(low))
    return low @ low.T


@dataclass(frozen=True)
class Case:
    name: str
    make: Callable[[np.random.Generator], ps.Possibility]
    to_point: Callable[[np.ndarray], object]  # unconstrained R^k -> a point of the domain
    k: int  # number of unconstrained coordinates
    scipy_mode: Callable[[ps.Possibility], object] | None = None


D = 2  # matrix families are checked in dimension 2 (3 free entries of Sigma)

CASES = [
    Case("Normal",
         lambda r: ps.Normal(r.normal(0, 3), r.uniform(0.1, 5)),
         lambda z: z[0], 1),
    Case("MultivariateNormal",
         lambda r: ps.MultivariateNormal(r.normal(0, 2, 3), _spd(r, 3)),
         lambda z: z, 3),
    Case("Beta",
         lambda r: ps.Beta(r.uniform(0.3, 20), r.uniform(0.3, 20)),
         lambda z: expit(z[0]), 1),
    Case("Gamma",
         lambda r: ps.Gamma(r.uniform(0.3, 20), r.uniform(0.3, 20)),
         lambda z: np.exp(z[0]), 1),
    Case("InverseGamma",
         lambda r: ps.InverseGamma(r.uniform(0.3, 20), r.uniform(0.3, 20)),
         lambda z: np.exp(z[0]), 1),
    Case("NormalGamma",
         lambda r: ps.NormalGamma(r.normal(0, 2), r.uniform(0.2, 10), r.uniform(0.3, 10),
                                  r.uniform(0.3, 10)),
         lambda z: (z[0], np.exp(z[1])), 2),
    Case("InverseWishart",
         lambda r: ps.InverseWishart(_spd(r, D, r.uniform(0.5, 5)), r.uniform(1, 15)),
         lambda z: _chol_from(z, D), 3),
    Case("NormalInverseWishart",
         lambda r: ps.NormalInverseWishart(r.normal(0, 2, D), r.uniform(0.2, 10),
                                           _spd(r, D, r.uniform(0.5, 5)), r.uniform(1, 15)),
         lambda z: (z[:D], _chol_from(z[D:], D)), D + 3),
    Case("Pareto",
         lambda r: ps.Pareto(r.uniform(0.3, 10), r.uniform(0.5, 5)),
         lambda z: np.exp(z[0]), 1),
]

BY_NAME = {c.name: c for c in CASES}
EXPONENTIAL = [c for c in CASES if c.name != "Pareto"]


def random_points(case: Case, rng: np.random.Generator, n: int, around=None,
                  spread: float = 2.0):
    """``n`` random points of the domain, as unconstrained vectors and points."""
    zs = rng.normal(0.0, spread, size=(n, case.k))
    if around is not None:
        zs = zs + around
    return zs, [case.to_point(z) for z in zs]
