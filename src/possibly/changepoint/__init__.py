"""Robust online change-point detection: the possibilistic BOCPD of the paper's §5.3.

The package separates what a segment is from how segmentations are searched:

* :mod:`~possibly.changepoint.models`: the interface a segment model implements
  (:class:`SegmentModel`) and the models, each with its compiled kernel if it has one:
  :class:`NormalMean` (the paper's), levels and trends with an unknown noise precision
  (:func:`model_family`, the default of ``ChangepointDetector()``),
  :class:`SeasonalTrend` (a level or trend with a cycle),
  :class:`MultivariateNormalSegments` (the default for a vector series) and
  :class:`ConjugateModel` (any conjugate family);
* :mod:`~possibly.changepoint.periods`: the periods of a series' cycles
  (:func:`infer_period`) and the models to run on it (:func:`models_for_series`);
* :mod:`~possibly.changepoint.compiled_engine`: the one compiled loop that runs any model's
  kernel;
* :mod:`~possibly.changepoint.recursion`: the run-length recursion (one state type, pure
  ``init``/``step``, the exact MAP backtracking, the bounded-cost pruning and merging);
* :mod:`~possibly.changepoint.outliers`: the outlier rule;
* :mod:`~possibly.changepoint.result`: :class:`ChangepointResult`;
* :mod:`~possibly.changepoint.detector`: :class:`ChangepointDetector`, the streaming class;
* :mod:`~possibly.changepoint.bank`: :class:`DetectorBank`, many streams advanced together.

How to choose ``model``, ``hazard``, ``forgetting`` and ``sigma``: docs/choosing.md.
"""

from __future__ import annotations

from possibly.changepoint.bank import BankInfo, DetectorBank
from possibly.changepoint.detector import ChangepointDetector, numba_available
from possibly.changepoint.models import (
    CompiledKernel,
    ConjugateModel,
    KernelFunctions,
    LogTrend,
    MultivariateNormalSegments,
    NormalMean,
    NormalMeanVariance,
    PoissonLevel,
    PolynomialTrend,
    SeasonalTrend,
    SegmentModel,
    SegmentPrior,
    automatic_prior,
    automatic_vector_prior,
    estimate_sigma,
    model_family,
    quantisation_step,
)
from possibly.changepoint.periods import (
    calendar_periods,
    infer_period,
    models_for_series,
    warm_up_length,
)
from possibly.changepoint.recursion import (
    ChangepointInfo,
    ChangepointParams,
    RunState,
    backtrack,
    init,
    step,
)
from possibly.changepoint.result import ChangepointResult

__all__ = [
    "BankInfo",
    "ChangepointDetector",
    "ChangepointInfo",
    "ChangepointParams",
    "ChangepointResult",
    "CompiledKernel",
    "ConjugateModel",
    "DetectorBank",
    "KernelFunctions",
    "LogTrend",
    "MultivariateNormalSegments",
    "NormalMean",
    "NormalMeanVariance",
    "PoissonLevel",
    "PolynomialTrend",
    "RunState",
    "SeasonalTrend",
    "SegmentModel",
    "SegmentPrior",
    "automatic_prior",
    "automatic_vector_prior",
    "backtrack",
    "calendar_periods",
    "estimate_sigma",
    "infer_period",
    "init",
    "model_family",
    "models_for_series",
    "numba_available",
    "quantisation_step",
    "step",
    "warm_up_length",
]
