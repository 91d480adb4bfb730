"""sktime interface: the robust change-point detector as sktime detectors.

:class:`PossiblyChangepointDetector` wraps :class:`possibly.ChangepointDetector` on sktime's
detector base class (task ``"change_point_detection"``), so that it runs in sktime pipelines,
grid searches and benchmarks: ``predict`` returns the change points as a data frame of
``iloc`` positions, ``transform`` the segment label of every step, ``transform_scores`` a
change score per step and ``predict_scores`` that score at each detected change point.
:class:`PossiblyAnomalyDetector` is the same detector on sktime's anomaly-detection task: its
``predict`` returns the observations the detector treated as outliers.

Both run the default models of ``ChangepointDetector()`` (levels and trends with an unknown
noise scale; a vector series gets mean-and-covariance segments), with their scale-free
priors learnt by ``fit`` from the training series; ``model="normal"`` runs the paper's
normal-mean model, with σ learnt by ``fit``.

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

from possibly.changepoint import (
    ChangepointDetector,
    ChangepointResult,
    MultivariateNormalSegments,
    NormalMean,
    SegmentModel,
    automatic_prior,
    estimate_sigma,
    model_family,
)

__all__ = ["PossiblyAnomalyDetector", "PossiblyChangepointDetector", "change_score"]


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


class _PossiblyDetector(BaseDetector):
    """What the two detectors share: the parameters, ``fit`` and the run on a series."""

    _tags = {
        "learning_type": "unsupervised",
        "capability:missing_values": True,
        "capability:multivariate": True,
        "fit_is_empty": False,
        "authors": ["possibly developers"],
        "maintainers": ["possibly developers"],
        "python_dependencies": "sktime",
    }

    def __init__(self, model=None, sigma="auto", hazard=2.5e-3, forgetting=None,
                 robust=True, tau=None, outlier_level=None):
        self.model = model
        self.sigma = sigma
        self.hazard = hazard
        self.forgetting = forgetting
        self.robust = robust
        self.tau = tau
        self.outlier_level = outlier_level
        super().__init__()
        if model not in (None, "auto", "normal"):
            raise ValueError(f"model must be None, 'auto' or 'normal' (the segment models are "
                             f"learnt by fit), got {model!r}")
        # bad parameters fail here, at the call site (ChangepointDetector checks them all)
        ChangepointDetector(sigma=sigma, model=model, hazard=hazard, forgetting=forgetting,
                            robust=robust, tau=tau, outlier_level=outlier_level)
        # the paper's model is scalar (_values refuses a multivariate series with a clear error)
        self.set_tags(**{"capability:multivariate": not self._normal()})

    def _normal(self) -> bool:
        """Whether the model is the paper's NormalMean (model="normal" or a given sigma)."""
        return self.model == "normal" or not isinstance(self.sigma, str)

    def _values(self, X) -> np.ndarray:
        values = np.asarray(X, dtype=float).reshape(len(X), -1)
        if values.shape[1] == 1:
            return values[:, 0]
        if self._normal():
            raise ValueError(f"X must be univariate for model='normal' (the paper's model), got "
                             f"{values.shape[1]} columns; model='auto' takes a multivariate "
                             f"series")
        return values

    def _learnt_models(self, values: np.ndarray) -> tuple[SegmentModel, ...]:
        """The segment models with what ``fit`` learns from the training series: σ of the
        paper's model, or the scale-free priors of the default models."""
        if self._normal():
            sigma = estimate_sigma(values) if isinstance(self.sigma, str) else float(self.sigma)
            self.sigma_: float | None = sigma
            return (NormalMean(sigma),)
        if values.ndim == 2:  # the prior and noise level as ChangepointDetector sets them
            return (MultivariateNormalSegments().resolve(values),)
        return tuple(model_family(prior=automatic_prior(values)))

    def _detector(self) -> ChangepointDetector:
        return ChangepointDetector(model=list(self.models_), hazard=self.hazard,
                                   forgetting=self.forgetting, robust=self.robust,
                                   tau=self.tau, outlier_level=self.outlier_level)

    def _fit(self, X, y=None):
        values = self._values(X)
        self.sigma_ = None  # the paper's model's σ: set by _learnt_models
        self.models_ = self._learnt_models(values)
        self.result_ = self._detector().fit(values)
        return self

    def _run(self, X) -> ChangepointResult:
        return self._detector().fit(self._values(X))

    @classmethod
    def get_test_params(cls, parameter_set="default"):
        """Parameter sets for sktime's estimator checks."""
        return [
            {},
            {"hazard": 0.01, "robust": False},
            {"model": "normal"},
            {"sigma": 1.0, "hazard": 0.01, "forgetting": 1.0},
            {"model": "normal", "robust": False, "hazard": 1e-3},
            {"sigma": 0.5, "tau": 0.5},
        ]


class PossiblyChangepointDetector(_PossiblyDetector):
    """Robust online change-point detection (possibly's BOCPD) as an sktime detector.

    ``predict`` gives the change points (``iloc`` positions), ``transform`` the segment label
    of every step, ``transform_scores`` the possibility that a segment starts at each step.

    Parameters
    ----------
    model : {None, "auto", "normal"}
        None (default): ``"normal"`` when ``sigma`` is a number, else ``"auto"``.
        ``"auto"``: the default models of ``ChangepointDetector()``, constant level,
        linear and quadratic trend segments with an unknown noise scale (a multivariate series:
        :class:`~possibly.changepoint.MultivariateNormalSegments`), their scale-free priors
        (median, MAD and length of the series) learnt by :meth:`fit`; ``"normal"``: the paper's
        normal-mean model (piecewise-constant level, known noise scale ``sigma``, univariate).
    sigma : "auto" or float
        Noise scale of the paper's model; a number selects that model. ``"auto"`` with
        ``model="normal"`` estimates it in :meth:`fit` from the training series
        (:func:`possibly.changepoint.estimate_sigma`), the value used is ``sigma_``.
    hazard : float
        Possibility of a change at each step, in (0, 1).
    forgetting : float, optional
        Forgetting factor in (0, 1]; None: 1 for the default models, the paper's 0.9 for
        ``model="normal"``.
    robust : bool
        Discount inconsistent observations (True) or run the standard recursion (False).
    tau : float, optional
        Threshold variant: keep observations whole unless their discount is ``≤ tau``.
    outlier_level : float, optional
        Discount below which an observation counts as discounted (the paper's model's outlier
        rule; the default models judge outliers in hindsight).

    Attributes
    ----------
    models_ : tuple of SegmentModel
        The segment models used by :meth:`predict`, with what :meth:`fit` learnt (priors or σ).
    sigma_ : float or None
        σ of the paper's model (None with the default models).
    result_ : ChangepointResult
        The detector's result on the training series (its ``changepoints``, ``outliers``,
        ``segment_model_names``, ...).

    Examples
    --------
    >>> import numpy as np
    >>> from possibly.integrations.sktime import PossiblyChangepointDetector
    >>> rng = np.random.default_rng(0)
    >>> X = np.r_[rng.normal(0, 1, 100), rng.normal(6, 1, 100)]
    >>> X[50] = 10.0                                      # an outlier, not a change
    >>> det = PossiblyChangepointDetector().fit(X)
    >>> det.predict(X)["ilocs"].tolist()
    [100]
    >>> det.transform(X)["labels"].iloc[[0, 99, 100, 199]].tolist()
    [0, 0, 1, 1]
    >>> det.result_.segment_model_names
    ['level', 'level']
    """

    _tags = {"task": "change_point_detection"}

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
        return pd.DataFrame({"scores": change_score(res)[res.changepoints]})


class PossiblyAnomalyDetector(_PossiblyDetector):
    """The robust change-point detector's outliers on sktime's anomaly-detection task.

    The same detector as :class:`PossiblyChangepointDetector`: ``predict`` gives the
    observations it treated as outliers (``result.outliers``: discounted and far from their
    segment, change points excluded), ``transform`` a 0/1 label per step (1: outlier),
    ``transform_scores`` the outlier score ``1 − discount`` of every step (0 at missing
    values) and ``predict_scores`` that score at each outlier. Changes of level or trend are
    not anomalies: the segment model follows them.

    Parameters and attributes: as :class:`PossiblyChangepointDetector`.

    Examples
    --------
    >>> import numpy as np
    >>> from possibly.integrations.sktime import PossiblyAnomalyDetector
    >>> t = np.arange(200.0)
    >>> X = np.where(t < 120, 0.05 * t, 20.0 - 0.1 * t) + np.random.default_rng(1).normal(size=200)
    >>> X[[40, 160]] += [8.0, -9.0]                     # two spikes on a trend that turns
    >>> det = PossiblyAnomalyDetector().fit(X)
    >>> det.predict(X)["ilocs"].tolist()               # the spikes, not the turn at 120
    [40, 160]
    >>> det.transform(X)["labels"].iloc[[39, 40, 120]].tolist()
    [0, 1, 0]
    """

    _tags = {"task": "anomaly_detection"}

    @staticmethod
    def _scores(res: ChangepointResult) -> np.ndarray:
        return np.nan_to_num(np.asarray(res.outlier_score, dtype=float), nan=0.0)

    def _predict(self, X):
        outliers = self._run(X).outliers
        return pd.DataFrame({"ilocs": pd.array(outliers.astype(np.int64), dtype="int64")})

    def _transform_scores(self, X):
        return pd.DataFrame({"scores": self._scores(self._run(X))}, index=X.index)

    def _predict_scores(self, X):
        res = self._run(X)
        return pd.DataFrame({"scores": self._scores(res)[res.outliers]})

