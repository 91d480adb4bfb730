"""Sequential robust estimators of static parameters, on the core algebra.

Each estimator subclasses :class:`possibly.sequential.SequentialEstimator` (pure ``init`` /
``step``, ``fit`` over the time axis, streaming ``update``):

* :class:`~possibly.estimators.location_scale.RobustNormalEstimator`: mean and precision of a
  normal stream (ω split, paper §4.3 and appendix A), with a robust start;
* :class:`~possibly.estimators.covariance.RobustCovarianceEstimator`: mean and covariance
  from batches of vectors (normal-inverse-Wishart, paper §5.1);
* :class:`~possibly.estimators.soft_uniform.SoftUniformEstimator`: the upper end of a uniform
  (soft-uniform likelihood, paper appendix B).

The minimum-MMD estimator that the paper compares with is a non-possibilistic baseline and
lives with the experiments, in :mod:`possibly.experiments.baselines.mmd`.
"""

from possibly.estimators.covariance import RobustCovarianceEstimator
from possibly.estimators.location_scale import RobustNormalEstimator
from possibly.estimators.soft_uniform import SoftUniformEstimator

__all__ = ["RobustCovarianceEstimator", "RobustNormalEstimator", "SoftUniformEstimator"]
