"""Robust online change-point detection: the possibilistic BOCPD of the paper's §5.3.

The package separates what a segment is from how segmentations are searched:

* :mod:`~possibly.changepoint.models`: the interface a segment model implements
  (:class:`SegmentModel`) and the models, each with its compiled kernel if it has one:
  :class:`NormalMean` (the paper's), levels and trends with an unknown noise precision
  (:func:`model_family`, the default of ``ChangepointDetector()``),
  :class:`MultivariateNormalSegments` (the default for a vector series) and
  :class:`ConjugateModel` (any conjugate family);
* :mod:`~possibly.changepoint.compiled_engine`: the one compiled loop that runs any model's
  kernel;
* :mod:`~possibly.changepoint.recursion`: the run-length recursion (one state type, pure
  ``init``/``step``, the exact MAP backtracking, the bounded-cost pruning and merging);
* :mod:`~possibly.changepoint.outliers`: the outlier rule;
* :mod:`~possibly.changepoint.result`: :class:`ChangepointResult`;
* :mod:`~possibly.changepoint.detector`: :class:`ChangepointDetector`, the streaming class.

Choosing the parameters
-----------------------
``model``
    ``ChangepointDetector()`` runs :func:`model_family` (constant level, linear or quadratic
    trend per segment, unknown noise, scale-free priors, forgetting 1, ``tol = 0.4 hazard``):
    for a series of unknown shape. ``ChangepointDetector(sigma=...)`` (or ``model="normal"``)
    runs the paper's :class:`NormalMean` (forgetting 0.9, ``tol = 1e-12``): for piecewise-
    constant levels with a known noise scale, streaming from the first value, or the paper.
``sigma``
    Noise scale within a segment of the paper's model. ``"auto"`` (with ``model="normal"``)
    uses :func:`estimate_sigma` (MAD of first differences / √2), which is insensitive to both
    the jumps and the outliers.
``hazard``
    Possibility of a change at any step: roughly the largest probability of a change per
    observation that you consider plausible (``2.5e-3``: at most one change in 400 points).
    Lower values need stronger evidence before a change is called.
``forgetting``
    ``ρ`` in ``(0, 1]``: the precision of the segment mean is multiplied by ``ρ`` at each step,
    so the level is learnt from about ``1 / (1 − ρ)`` recent observations (10 for 0.9). Values
    below 1 absorb slow drifts within a segment; 1 is the constant-mean model. Default: 1 for
    the unknown-variance models, 0.9 otherwise.
"""

from __future__ import annotations

from possibly.changepoint.detector import ChangepointDetector, numba_available
from possibly.changepoint.models import (
    CompiledKernel,
    ConjugateModel,
    KernelFunctions,
    MultivariateNormalSegments,
    NormalMean,
    NormalMeanVariance,
    PolynomialTrend,
    SegmentModel,
    SegmentPrior,
    automatic_prior,
    automatic_vector_prior,
    estimate_sigma,
    model_family,
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
    "ChangepointDetector",
    "ChangepointInfo",
    "ChangepointParams",
    "ChangepointResult",
    "CompiledKernel",
    "ConjugateModel",
    "KernelFunctions",
    "MultivariateNormalSegments",
    "NormalMean",
    "NormalMeanVariance",
    "PolynomialTrend",
    "RunState",
    "SegmentModel",
    "SegmentPrior",
    "automatic_prior",
    "automatic_vector_prior",
    "backtrack",
    "estimate_sigma",
    "init",
    "model_family",
    "numba_available",
    "step",
]
