"""The outlier rule of the change-point detector (one rule for every segment model).

An observation is an outlier when

1. online, its discount fell below ``outlier_level`` (it was at most about ``outlier_level^d``
   consistent with what came before), and
2. in hindsight, its segment's model says it lies far from the segment
   (:meth:`~possibly.changepoint.models.SegmentModel.outlying`: more than ``3 σ`` from the
   segment median for :class:`~possibly.changepoint.NormalMean`; a consistency with the
   segment's possibility function below ``exp(-4.5)`` for a
   :class:`~possibly.changepoint.ConjugateModel`), and
3. it does not start a segment.

Models with ``hindsight_outliers = True`` (:class:`~possibly.changepoint.PolynomialTrend`,
:class:`~possibly.changepoint.MultivariateNormalSegments`) skip the first condition: their
``outlying`` judges each observation against the segment's fit from the other observations of
the segment, discounted as the robust update discounts them
(:func:`~possibly.changepoint.models.trend.hindsight_log_consistency`), so that an outlier among
the first points of a segment, where the online predictive is still wide, is found too.

The second condition separates isolated spikes from the first few observations after a real
change, which are discounted too: online they look like outliers until the change is
confirmed. The standard recursion discounts nothing, so it has no outliers.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from possibly.changepoint.models.segment_model import SegmentModel

__all__ = ["find_outliers"]


def find_outliers(y: np.ndarray, discount: np.ndarray, segments: Sequence[tuple[int, int]],
                  segment_models: Sequence[int], models: Sequence[SegmentModel],
                  outlier_level: float, compiled: bool | None = None) -> np.ndarray:
    """Indices of the outliers (see the module docstring), increasing; ``compiled``: passed
    to each model's :meth:`~possibly.changepoint.models.SegmentModel.outlying_segments`
    (False: numpy's steps only; None: the compiled hindsight where numba is installed).

    Examples
    --------
    >>> from possibly.changepoint import NormalMean
    >>> y = np.array([0.0, 0.1, 9.0, -0.1, 0.0])
    >>> disc = np.array([1.0, 1.0, 0.01, 0.9, 1.0])
    >>> find_outliers(y, disc, [(0, 5)], [0], [NormalMean(1.0)], 0.1).tolist()
    [2]
    """
    bounds = np.asarray(segments, dtype=np.int64).reshape(-1, 2)
    which = np.asarray(segment_models, dtype=np.int64)
    order = np.argsort(bounds[:, 0], kind="stable")  # the models take increasing segments
    bounds, which = bounds[order], which[order]
    lengths = bounds[:, 1] - bounds[:, 0]
    # per observation: its segment's model (-1 outside the segments), and whether it may be
    # an outlier at all (a segment start is a change)
    model_of = np.full(len(y), -1, dtype=np.int64)
    model_of[np.repeat(bounds[:, 0] - np.cumsum(lengths) + lengths, lengths)
             + np.arange(int(lengths.sum()))] = np.repeat(which, lengths)
    eligible = model_of >= 0
    eligible[bounds[:, 0]] = False
    flagged = eligible & (discount < outlier_level)  # NaN (missing) compares False
    found = np.zeros(len(y), dtype=bool)
    for k in np.unique(which).tolist():
        model = models[k]
        if model.hindsight_outliers:
            # the model's hindsight rule decides (SegmentModel.outlying): the second value
            # of a burst is well predicted online by the run the first one started
            candidates = eligible & (model_of == k)
            judged = bounds[which == k]
        else:
            candidates = flagged & (model_of == k)
            # only the segments with a candidate are judged
            count = np.r_[0, np.cumsum(candidates)]
            judged = bounds[(which == k) & (count[bounds[:, 1]] > count[bounds[:, 0]])]
        if judged.size:
            # compiled passed only when chosen: a model of an earlier release may override
            # outlying_segments without it
            extra = {} if compiled is None else {"compiled": compiled}
            found |= candidates & model.outlying_segments(y, discount, judged, **extra)
    return np.flatnonzero(found).astype(np.int64)
