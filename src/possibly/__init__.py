"""possibly: robust Bayesian inference with possibility theory.

Possibility functions (maxitive, ``sup f = 1``) of conjugate families, possibilistic Bayes,
the consistency ``c(y)`` of an observation with a prior, and the robust update that raises the
likelihood to ``gamma = c ** (1 / d)`` (Houssineau & Nott, "Robust Bayesian inference in
complex models with possibility theory").

Examples
--------
>>> import possibly as ps
>>> prior = ps.Normal(0.0, 1.0)
>>> res = ps.robust_update(prior, ps.likelihood.normal(0.5, sd=1.0))
>>> round(float(res.consistency), 4), round(float(res.posterior.mean), 4)
(0.9394, 0.2422)
"""

from possibly import changepoint, datasets, estimators, filters, likelihood
from possibly.changepoint import (
    ChangepointDetector,
    ConjugateModel,
    MultivariateNormalSegments,
    NormalMean,
    NormalMeanVariance,
    PolynomialTrend,
    SegmentModel,
    model_family,
)
from possibly.estimators.covariance import RobustCovarianceEstimator
from possibly.estimators.location_scale import RobustNormalEstimator
from possibly.estimators.soft_uniform import SoftUniformEstimator
from possibly.families import (
    Beta,
    ExponentialFamily,
    Gamma,
    InverseGamma,
    InverseWishart,
    MultivariateNormal,
    Normal,
    NormalGamma,
    NormalInverseWishart,
    Pareto,
    Possibility,
)
from possibly.filters import (
    ExtendedKalmanFilter,
    GaussianNoise,
    KalmanFilter,
    LinearGaussianModel,
    MostlyDiscountedWarning,
    NonlinearModel,
    ParticleFilter,
    UnscentedKalmanFilter,
)
from possibly.inference import (
    RobustUpdate,
    SequentialResult,
    combine,
    consistency,
    discount,
    log_consistency,
    robust_update,
    update_sequence,
)
from possibly.pointwise.grid import GridPossibility, LogLikelihood
from possibly.pointwise.particles import ParticlePossibility
from possibly.sequential import ConcurrentUseError, Info, SequentialEstimator

__version__ = "0.1.0"

__all__ = [
    "Beta",
    "ChangepointDetector",
    "ConcurrentUseError",
    "ConjugateModel",
    "ExponentialFamily",
    "ExtendedKalmanFilter",
    "Gamma",
    "GaussianNoise",
    "GridPossibility",
    "Info",
    "InverseGamma",
    "InverseWishart",
    "KalmanFilter",
    "LinearGaussianModel",
    "LogLikelihood",
    "MostlyDiscountedWarning",
    "MultivariateNormal",
    "MultivariateNormalSegments",
    "NonlinearModel",
    "Normal",
    "NormalGamma",
    "NormalInverseWishart",
    "NormalMean",
    "NormalMeanVariance",
    "Pareto",
    "ParticleFilter",
    "ParticlePossibility",
    "PolynomialTrend",
    "Possibility",
    "RobustCovarianceEstimator",
    "RobustNormalEstimator",
    "RobustUpdate",
    "SegmentModel",
    "SequentialEstimator",
    "SequentialResult",
    "SoftUniformEstimator",
    "UnscentedKalmanFilter",
    "changepoint",
    "combine",
    "consistency",
    "datasets",
    "discount",
    "estimators",
    "filters",
    "likelihood",
    "log_consistency",
    "model_family",
    "robust_update",
    "update_sequence",
]
