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
    ChangepointResult,
    ConjugateModel,
    DetectorBank,
    MultivariateNormalSegments,
    NormalMean,
    PolynomialTrend,
    model_family,
)
from possibly.estimators.covariance import CovarianceFit, RobustCovarianceEstimator
from possibly.estimators.location_scale import LocationScaleFit, RobustNormalEstimator
from possibly.estimators.soft_uniform import SoftUniformEstimator, SoftUniformFit
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
    FilterResult,
    KalmanFilter,
    LinearGaussianModel,
    MostlyDiscountedWarning,
    NoiseScaleKalmanFilter,
    NoiseScaleResult,
    NonlinearModel,
    ParticleFilter,
    ParticleFilterResult,
    ParticleSmootherResult,
    SmootherResult,
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
from possibly.pointwise import GridPossibility, LogLikelihood, ParticlePossibility
from possibly.sequential import ConcurrentUseError

__version__ = "0.1.0"

#: What users need, one path each: the estimators and their results, the models, the families,
#: the algebra's functions, and the subpackages. Protocol and change-point internals stay in
#: their modules (``possibly.sequential``, ``possibly.changepoint``).
__all__ = [
    # estimators
    "ChangepointDetector",
    "DetectorBank",
    "ExtendedKalmanFilter",
    "KalmanFilter",
    "NoiseScaleKalmanFilter",
    "ParticleFilter",
    "RobustCovarianceEstimator",
    "RobustNormalEstimator",
    "SoftUniformEstimator",
    "UnscentedKalmanFilter",
    # their results
    "ChangepointResult",
    "CovarianceFit",
    "FilterResult",
    "LocationScaleFit",
    "NoiseScaleResult",
    "ParticleFilterResult",
    "ParticleSmootherResult",
    "SmootherResult",
    "SoftUniformFit",
    # models
    "ConjugateModel",
    "LinearGaussianModel",
    "MultivariateNormalSegments",
    "NonlinearModel",
    "NormalMean",
    "PolynomialTrend",
    "model_family",
    # families and point possibility functions
    "Beta",
    "ExponentialFamily",
    "Gamma",
    "GridPossibility",
    "InverseGamma",
    "InverseWishart",
    "LogLikelihood",
    "MultivariateNormal",
    "Normal",
    "NormalGamma",
    "NormalInverseWishart",
    "Pareto",
    "ParticlePossibility",
    "Possibility",
    # the algebra
    "RobustUpdate",
    "SequentialResult",
    "combine",
    "consistency",
    "discount",
    "log_consistency",
    "robust_update",
    "update_sequence",
    # warnings and errors
    "ConcurrentUseError",
    "MostlyDiscountedWarning",
    # subpackages
    "changepoint",
    "datasets",
    "estimators",
    "filters",
    "likelihood",
]
