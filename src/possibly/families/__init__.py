"""Conjugate possibility families, each a few formulas on top of :mod:`.base`."""

from possibly.families.base import ExponentialFamily, Possibility
from possibly.families.beta import Beta
from possibly.families.gamma import Gamma, InverseGamma
from possibly.families.inverse_wishart import InverseWishart, NormalInverseWishart
from possibly.families.multivariate_normal import MultivariateNormal
from possibly.families.normal import Normal
from possibly.families.normal_gamma import NormalGamma
from possibly.families.pareto import Pareto

__all__ = [
    "Beta",
    "ExponentialFamily",
    "Gamma",
    "InverseGamma",
    "InverseWishart",
    "MultivariateNormal",
    "Normal",
    "NormalGamma",
    "NormalInverseWishart",
    "Pareto",
    "Possibility",
]
