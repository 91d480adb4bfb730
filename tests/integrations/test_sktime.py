"""The sktime detector: sktime's own estimator checks, and agreement with the plain detector."""

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("sktime")

from sktime.utils.estimator_checks import check_estimator  # noqa: E402

import possibly as ps  # noqa: E402
from possibly.changepoint import automatic_prior, automatic_vector_prior, model_family  # noqa: E402
from possibly.integrations.sktime import (  # noqa: E402
    PossiblyAnomalyDetector,
    PossiblyChangepointDetector,
    change_score,
)


@pytest.mark.parametrize("cls", [PossiblyChangepointDetector, PossiblyAnomalyDetector])
def test_sktime_check_estimator_suite(cls):
    # every get_test_params set: the default family, the paper's model, robust or not
    results = check_estimator(cls, raise_exceptions=False)
    failed = {name: str(msg)[:300] for name, msg in results.items() if msg != "PASSED"}
    assert len(results) > 50  # the suite really ran
    assert not failed


@pytest.fixture
def series():
    y, cps, outliers = ps.datasets.piecewise_constant(300, n_changes=2, seed=3)
    return y, cps


def test_predict_is_the_detectors_changepoints(series):
    y, cps = series
    det = PossiblyChangepointDetector(sigma=1.0, hazard=1e-3).fit(y)
    expected = ps.ChangepointDetector(sigma=1.0, hazard=1e-3).fit(y).changepoints
    got = det.predict(y)
    assert list(got.columns) == ["ilocs"]
    assert got["ilocs"].tolist() == expected.tolist() == cps.tolist()


def test_transform_labels_segments_and_keeps_the_index(series):
    y, cps = series
    index = pd.date_range("2024-01-01", periods=y.size, freq="h")
    X = pd.Series(y, index=index)
    labels = PossiblyChangepointDetector(sigma=1.0, hazard=1e-3).fit(X).transform(X)["labels"]
    expected = np.searchsorted(cps, np.arange(y.size), side="right")  # segment number
    assert labels.to_numpy().tolist() == expected.tolist()


def test_scores_follow_the_discount(series):
    y, _ = series
    det = PossiblyChangepointDetector(sigma=1.0, hazard=1e-3).fit(y)
    res = ps.ChangepointDetector(sigma=1.0, hazard=1e-3).fit(y)
    per_step = det.transform_scores(y)["scores"].to_numpy()
    possibility = getattr(res, "change_possibility", None)
    if callable(possibility):
        possibility = possibility()
    if possibility is None:
        np.testing.assert_allclose(per_step, 1.0 - res.discount)
    else:
        np.testing.assert_allclose(per_step, np.asarray(possibility, dtype=float))
    at_cps = det.predict_scores(y)
    np.testing.assert_allclose(at_cps.iloc[:, 0].to_numpy(), per_step[res.changepoints])


def test_change_score_prefers_change_possibility():
    class Result:
        discount = np.array([1.0, 0.2, np.nan])
        change_possibility = np.array([0.0, 0.9, np.nan])

    assert change_score(Result()).tolist() == [0.0, 0.9, 0.0]
    Result.change_possibility = None
    assert change_score(Result()).tolist() == [0.0, 0.8, 0.0]

    class WithMethod(Result):
        def change_possibility(self):
            return np.array([0.1, 0.2, 0.3])

    assert change_score(WithMethod()).tolist() == [0.1, 0.2, 0.3]


def test_sigma_auto_is_learnt_in_fit(series):
    y, _ = series
    det = PossiblyChangepointDetector(model="normal").fit(y)
    assert det.sigma_ == pytest.approx(ps.changepoint.estimate_sigma(y))
    assert det.result_.changepoints.tolist() == det.predict(y)["ilocs"].tolist()


def test_bad_parameters_fail_at_construction():
    with pytest.raises(ValueError, match="hazard"):
        PossiblyChangepointDetector(hazard=2.0)


def nile_like(seed=3):
    """100 annual flows with a level drop of a quarter (log scale) after 28 years, noise
    sd 0.12 in log scale: the Nile's 1871-1970 shape (the Nile is not in the package)."""
    rng = np.random.default_rng(seed)
    level = np.where(np.arange(100) < 28, np.log(1100.0), np.log(850.0))
    return pd.Series(np.exp(level + rng.normal(0.0, 0.12, 100)),
                     index=pd.period_range("1871", periods=100, freq="Y"), name="flow")


def test_default_is_the_default_family_and_finds_the_drop_in_log_scale():
    from sktime.transformations.series.boxcox import LogTransformer

    y = nile_like()
    found = (LogTransformer() * PossiblyChangepointDetector()).fit(y).predict(y)
    assert found["ilocs"].tolist() == [28]
    # the paper's model, a piecewise level tracked with forgetting 0.9, absorbs the drop
    paper = (LogTransformer() * PossiblyChangepointDetector(model="normal")).fit(y).predict(y)
    assert paper["ilocs"].tolist() == []
    assert found["ilocs"].tolist() == ps.ChangepointDetector().fit(np.log(y)).changepoints.tolist()


def test_default_family_finds_the_drop_more_often_than_the_papers_model():
    # not one lucky draw: over 20 draws, the change found within a year
    hits = {"auto": 0, "normal": 0}
    for seed in range(20):
        y = np.log(nile_like(seed))
        for model in hits:
            found = PossiblyChangepointDetector(model=model).fit(y).predict(y)["ilocs"].tolist()
            hits[model] += len(found) == 1 and abs(found[0] - 28) <= 1
    assert hits["auto"] >= 14 and hits["auto"] - hits["normal"] >= 6, hits  # 16 and 8


def test_default_family_priors_are_learnt_in_fit():
    rng = np.random.default_rng(1)
    t = np.arange(300.0)
    train = np.where(t < 150, 0.02 * t, 3.0 - 0.03 * (t - 150)) + 0.2 * rng.normal(size=300)
    det = PossiblyChangepointDetector().fit(train)
    plain = ps.ChangepointDetector().fit(train)
    assert det.sigma_ is None
    assert det.models_ == tuple(model_family(prior=automatic_prior(train)))
    got = det.predict(train)["ilocs"].tolist()
    assert got == plain.changepoints.tolist() and len(got) == 1
    assert det.result_.segment_model_names == plain.segment_model_names
    # predict applies the training series' priors to another series
    other = train[:200] + 1.0
    expected = ps.ChangepointDetector(model=model_family(prior=automatic_prior(train))).fit(other)
    assert det.predict(other)["ilocs"].tolist() == expected.changepoints.tolist()


def test_default_family_is_unchanged_by_the_units():
    y = nile_like(seed=3).to_numpy()
    base = PossiblyChangepointDetector().fit(y).predict(y)["ilocs"].tolist()
    scaled = 35.3 * y - 700.0
    assert PossiblyChangepointDetector().fit(scaled).predict(scaled)["ilocs"].tolist() == base


def test_multivariate_series_get_mean_and_covariance_segments():
    y, truth = ps.datasets.multivariate_shifts(200, n_changes=1, dim=2, seed=0)
    X = pd.DataFrame(y, columns=["a", "b"])
    det = PossiblyChangepointDetector().fit(X)
    assert det.models_[0].prior[0].tolist() == automatic_vector_prior(y)[0].tolist()
    # the same model, prior and noise level as the library's detector sets from the series
    assert det.models_[0] == ps.ChangepointDetector().fit(y).params.models[0]
    got = det.predict(X)["ilocs"].tolist()
    assert got == ps.ChangepointDetector().fit(y).changepoints.tolist()
    assert got == truth.changepoints.tolist()
    assert det.transform(X)["labels"].iloc[[0, -1]].tolist() == [0, 1]


def test_a_model_object_is_refused_not_ignored():
    from possibly.changepoint import PolynomialTrend

    with pytest.raises(ValueError, match="model must be None, 'auto' or 'normal'"):
        PossiblyChangepointDetector(model=PolynomialTrend(1))


def test_a_given_sigma_selects_the_papers_model():
    det = PossiblyChangepointDetector(sigma=1.0).fit(np.r_[np.zeros(50), np.full(50, 5.0)])
    assert det.sigma_ == 1.0 and type(det.models_[0]).__name__ == "NormalMean"


def test_the_papers_model_refuses_a_multivariate_series():
    X = pd.DataFrame(np.zeros((20, 2)), columns=["a", "b"])
    assert not PossiblyChangepointDetector(model="normal").get_tag("capability:multivariate")
    with pytest.raises(ValueError, match="univariate for model='normal'"):
        PossiblyChangepointDetector(model="normal").fit(X)


def test_anomaly_detector_returns_the_outliers_not_the_changes():
    rng = np.random.default_rng(0)
    y = np.r_[rng.normal(0.0, 1.0, 100), rng.normal(6.0, 1.0, 100)]
    y[[30, 150]] += [9.0, -10.0]
    det = PossiblyAnomalyDetector().fit(y)
    got = det.predict(y)["ilocs"].tolist()
    assert got == [30, 150]
    assert got == ps.ChangepointDetector().fit(y).outliers.tolist()
    labels = det.transform(y)["labels"].to_numpy()
    assert labels.sum() == 2 and labels[30] == labels[150] == 1
    scores = det.transform_scores(y)["scores"].to_numpy()
    np.testing.assert_allclose(scores, 1.0 - det.result_.discount)
    np.testing.assert_allclose(det.predict_scores(y)["scores"].to_numpy(), scores[[30, 150]])
    # the paper's model flags the same spikes
    assert PossiblyAnomalyDetector(model="normal").fit(y).predict(y)["ilocs"].tolist() == got


def test_bad_model_fails_at_construction():
    with pytest.raises(ValueError, match="model"):
        PossiblyAnomalyDetector(model="gaussian")
