"""Segment models of the change-point recursion: what a segment's parameter θ is, given its run.

* :mod:`~possibly.changepoint.models.segment_model`: the interface, :class:`SegmentModel`
  (six methods on one path) and its optional compiled kernel (:class:`CompiledKernel`);
* :mod:`~possibly.changepoint.models.normal_mean`: :class:`NormalMean`, the paper's model;
* :mod:`~possibly.changepoint.models.trend`: :class:`PolynomialTrend` (levels and trends with
  unknown noise, the default family :func:`model_family`);
* :mod:`~possibly.changepoint.models.seasonal`: :class:`SeasonalTrend` (a level or trend with
  a cycle; :func:`model_family` with a ``period`` adds it to the default family);
* :mod:`~possibly.changepoint.models.vector`: :class:`MultivariateNormalSegments`;
* :mod:`~possibly.changepoint.models.conjugate`: :class:`ConjugateModel`, any conjugate family;
* :mod:`~possibly.changepoint.models.log_scale`: :class:`LogTrend`, segments of ``log y`` for
  positive heavy-tailed metrics, in one family with the models on ``y``;
* :mod:`~possibly.changepoint.models.counts`: :class:`PoissonLevel`, segments of counts;
* :mod:`~possibly.changepoint.models.quantisation`: :func:`quantisation_step`, the resolution
  of a rounded series, below which no model's noise scale goes.

Each model's compiled kernel lives in its module, next to the numpy methods it mirrors.
"""

from possibly.changepoint.models.conjugate import ConjugateModel
from possibly.changepoint.models.counts import PoissonLevel
from possibly.changepoint.models.log_scale import LogTrend
from possibly.changepoint.models.normal_mean import NormalMean, estimate_sigma
from possibly.changepoint.models.quantisation import quantisation_step
from possibly.changepoint.models.seasonal import SeasonalTrend, model_family
from possibly.changepoint.models.segment_model import (
    CompiledKernel,
    KernelFunctions,
    Observation,
    SegmentModel,
)
from possibly.changepoint.models.trend import (
    NormalMeanVariance,
    PolynomialTrend,
    SegmentPrior,
    automatic_prior,
)
from possibly.changepoint.models.vector import (
    MultivariateNormalSegments,
    automatic_vector_noise,
    automatic_vector_prior,
    outlier_cost_in_dimension,
)

__all__ = [
    "CompiledKernel",
    "ConjugateModel",
    "KernelFunctions",
    "LogTrend",
    "MultivariateNormalSegments",
    "NormalMean",
    "NormalMeanVariance",
    "Observation",
    "PoissonLevel",
    "PolynomialTrend",
    "SeasonalTrend",
    "SegmentModel",
    "SegmentPrior",
    "automatic_prior",
    "automatic_vector_noise",
    "automatic_vector_prior",
    "estimate_sigma",
    "model_family",
    "outlier_cost_in_dimension",
    "quantisation_step",
]
