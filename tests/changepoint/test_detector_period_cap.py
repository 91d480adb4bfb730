"""Two edge cases of the detector: an inferred period longer than the anomaly signal's state
can hold, and a peek at a fresh detector."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import possibly as ps
from possibly.changepoint import anomaly
from possibly.changepoint import detector as detector_module


@pytest.mark.parametrize("periods, expected", [
    ((1_728_000.0,), None),                  # a day of 50 ms data: above MAX_PERIOD
    ((float(anomaly.MAX_PERIOD) + 1.0,), None),
    ((24.0, 1_728_000.0), 24),               # the shortest one the signal can hold
    ((float(anomaly.MAX_PERIOD),), anomaly.MAX_PERIOD),
])
def test_a_period_above_max_period_is_left_to_the_seasonal_models(monkeypatch, periods,
                                                                   expected):
    # the real case needs two days of 50 ms data (3.5 million records) to accept the day;
    # here the inference is given its answer
    monkeypatch.setattr(detector_module, "infer_period", lambda values, stamps: periods)
    y = np.random.default_rng(0).normal(size=300)
    det = ps.ChangepointDetector()
    res = det.fit(y)
    assert det.periods_ == periods and det.period_ == expected == res.period
    seasonal = ps.changepoint.model_family(period=periods)  # every period has its members
    assert [getattr(m, "period", None) for m in res.params.models] == [
        getattr(m, "period", None) for m in seasonal]
    assert np.all((res.anomaly >= 0.0) & (res.anomaly <= 1.0))
    ref = ps.ChangepointDetector(model=list(res.params.models), period=expected).fit(y)
    np.testing.assert_array_equal(res.anomaly, ref.anomaly)


@pytest.mark.parametrize("engine", ["numpy", "auto"])
def test_a_peek_at_a_fresh_detector_changes_nothing(engine):
    det = ps.ChangepointDetector(sigma=1.5, hazard=0.01, engine=engine)
    before = pickle.dumps(det)
    peek = det.peek_anomaly(0.7)
    assert det.params_ is None and det.t == 0
    assert pickle.dumps(det) == before
    assert det.update(0.7).anomaly == peek
