"""The sktime detector: sktime's own estimator checks, and agreement with the plain detector."""

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("sktime")

from sktime.utils.estimator_checks import check_estimator  # noqa: E402

import possibly as ps  # noqa: E402
from possibly.integrations.sktime import PossiblyChangepointDetector, change_score  # noqa: E402


def test_sktime_check_estimator_suite():
    results = check_estimator(PossiblyChangepointDetector, raise_exceptions=False)
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
    det = PossiblyChangepointDetector().fit(y)
    assert det.sigma_ == pytest.approx(ps.changepoint.estimate_sigma(y))
    assert det.result_.changepoints.tolist() == det.predict(y)["ilocs"].tolist()


def test_bad_parameters_fail_at_construction():
    with pytest.raises(ValueError, match="hazard"):
        PossiblyChangepointDetector(hazard=2.0)
