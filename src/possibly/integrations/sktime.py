"""sktime interface: the robust change-point detector as an sktime detector.

:class:`PossiblyChangepointDetector` wraps :class:`possibly.ChangepointDetector` on sktime's
detector base class, so that it runs in sktime pipelines, grid searches and benchmarks:
``predict`` returns the change points as a data frame of ``iloc`` positions, ``transform``
the segment label of every step, ``transform_scores`` a change score per step and
``predict_scores`` that score at each detected change point.

Needs sktime (``pip install 'possibly[sktime]'``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

try:
    from sktime.detection.base import BaseDetector
except ImportError:  # sktime < 0.34 named the base class differently
    try:
        from sktime.annotation.base import BaseSeriesAnnotator as BaseDetector
    except ImportError:
        raise ImportError("possibly.integrations.sktime needs sktime: "
                          "pip install 'possibly[sktime]'") from None

from possibly.changepoint import ChangepointDetector, estimate_sigma

__all__ = ["PossiblyChangepointDetector", "change_score"]


def change_score(result) -> np.ndarray:
    """Per-step change score in [0, 1] of a :class:`~possibly.ChangepointResult`.

    The result's ``change_possibility`` when it has one (the possibility that a segment
    starts at each step); otherwise ``1 − γ_t``, one minus the discount: 0 for an observation
    fully consistent with the current segment, close to 1 for one that the detector could not
    explain (a change or an outlier). Missing observations score 0.

    Examples
    --------
    >>> import possibly as ps
    >>> res = ps.ChangepointDetector(sigma=1.0, hazard=0.01).fit([0.0, 0.1, -0.1, 8.0, 8.1])
    >>> score = change_score(res)
    >>> int(np.argmax(score[1:])) + 1                  # after the start, the jump scores highest
    3
    """
    possibility = getattr(result, "change_possibility", None)
    if callable(possibility):  # a method rather than a property: same values
        possibility = possibility()
    if possibility is not None:
        score = np.asarray(possibility, dtype=float)
    else:
        score = 1.0 - np.asarray(result.discount, dtype=float)
    return np.nan_to_num(score, nan=0.0)


class PossiblyChangepointDetector(BaseDetector):
    """Robust online change-point detection (possibly's BOCPD) as an sktime detector.

    It runs the paper's normal-mean model (``ChangepointDetector(model="normal")``), whose
    noise scale is learnt in :meth:`fit` and reused by :meth:`predict`, not the default model
    family of ``ps.ChangepointDetector()``: σ is what sktime's ``fit`` learns from a training
    series and ``predict`` applies to others (``sigma_``); for the default family use
    :class:`possibly.ChangepointDetector` directly.

    Parameters
    ----------
    sigma : "auto" or float
        Noise scale within a segment; ``"auto"`` estimates it in :meth:`fit` from the training
        series (:func:`possibly.changepoint.estimate_sigma`), the value used is ``sigma_``.
    hazard : float
        Possibility of a change at each step, in (0, 1).
    forgetting : float
        Precision forgetting factor in (0, 1].
    robust : bool
        Discount inconsistent observations (True) or run the standard recursion (False).
    tau : float, optional
        Threshold variant: keep observations whole unless their discount is ``≤ tau``.
    outlier_level : float, optional
        Discount below which an observation counts as discounted (default ``2 √hazard``).

    Attributes
    ----------
    sigma_ : float
        Noise scale used by :meth:`predict`.
    result_ : ChangepointResult
        The detector's result on the training series (its ``outliers``, ``mean``,
        ``discount``, ...).

    Examples
    --------
    >>> import numpy as np
    >>> from possibly.integrations.sktime import PossiblyChangepointDetector
    >>> rng = np.random.default_rng(0)
    >>> X = np.r_[rng.normal(0, 1, 100), rng.normal(6, 1, 100)]
    >>> X[50] = 10.0                                      # an outlier, not a change
    >>> det = PossiblyChangepointDetector(hazard=1e-3).fit(X)
    >>> det.predict(X)["ilocs"].tolist()
    [100]
    >>> det.transform(X)["labels"].iloc[[0, 99, 100, 199]].tolist()
    [0, 0, 1, 1]
    """

    _tags = {
        "task": "change_point_detection",
        "learning_type": "unsupervised",
        "capability:missing_values": True,
        "capability:multivariate": False,
        "fit_is_empty": False,
        "authors": ["possibly developers"],
        "maintainers": ["possibly developers"],
        "python_dependencies": "sktime",
    }

    def __init__(self, sigma="auto", hazard=2.5e-3, forgetting=0.9, robust=True, tau=None,
                 outlier_level=None):
        self.sigma = sigma
        self.hazard = hazard
        self.forgetting = forgetting
        self.robust = robust
        self.tau = tau
        self.outlier_level = outlier_level
        super().__init__()
        self._detector()  # bad parameters fail here, at the call site

    def _detector(self, sigma=None) -> ChangepointDetector:
        # the paper's normal-mean model (sigma learnt in fit, reused by predict), not the
        # default model family of ChangepointDetector()
        return ChangepointDetector(sigma=self.sigma if sigma is None else sigma,
                                   hazard=self.hazard, forgetting=self.forgetting,
                                   robust=self.robust, tau=self.tau,
                                   outlier_level=self.outlier_level, model="normal")

    @staticmethod
    def _values(X) -> np.ndarray:
        return np.asarray(X, dtype=float).reshape(len(X), -1)[:, 0]

    def _fit(self, X, y=None):
        values = self._values(X)
        self.sigma_ = (estimate_sigma(values) if isinstance(self.sigma, str)
                       else float(self.sigma))
        self.result_ = self._detector(self.sigma_).fit(values)
        return self

    def _run(self, X):
        return self._detector(self.sigma_).fit(self._values(X))

    def _predict(self, X):
        cps = self._run(X).changepoints
        return pd.DataFrame({"ilocs": pd.array(cps.astype(np.int64), dtype="int64")})

    def transform(self, X):
        """Segment label of every step: 0 for the first segment, then 1, 2, ... after each
        change point (sktime documents this for change-point detectors; its base class gives a
        0/1 change-point indicator instead). Indexed like ``X`` when ``X`` is pandas.

        Parameters
        ----------
        X : pd.Series, pd.DataFrame or np.ndarray
            The series.

        Returns
        -------
        pd.DataFrame
            One integer column ``"labels"``.
        """
        indicator = super().transform(X)
        labels = indicator.cumsum().astype("int64")
        if isinstance(X, pd.Series | pd.DataFrame):
            labels.index = X.index
        return labels

    def _transform_scores(self, X):
        return pd.DataFrame({"scores": change_score(self._run(X))}, index=X.index)

    def _predict_scores(self, X):
        res = self._run(X)
        cps = res.changepoints
        return pd.DataFrame({"scores": change_score(res)[cps]})

    @classmethod
    def get_test_params(cls, parameter_set="default"):
        """Parameter sets for sktime's estimator checks."""
        return [
            {},
            {"sigma": 1.0, "hazard": 0.01, "forgetting": 1.0},
            {"robust": False, "hazard": 1e-3},
            {"sigma": 0.5, "tau": 0.5},
        ]
