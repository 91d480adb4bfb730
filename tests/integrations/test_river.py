"""The river detectors: river's own estimator checks, scoring without learning, agreement with
the plain detector's online flags, and the errors for bad records."""

import math

import numpy as np
import pytest

pytest.importorskip("river")

import river.checks  # noqa: E402

import possibly as ps  # noqa: E402
from possibly.changepoint import automatic_prior, model_family  # noqa: E402
from possibly.integrations.river import (  # noqa: E402
    PossiblyAnomalyDetector,
    PossiblyDriftDetector,
)


def _labelled_stream(feature, scale: int = 1):
    """A generated stream of ``(record, is_anomaly)``: a level with unit noise and spikes of 8
    to 12 sd after the first 100 records; ``feature=None`` gives one-feature records, a name
    gives that feature among four others."""
    rng = np.random.default_rng(7)
    n = 600 * scale
    y = 10.0 + rng.normal(size=n)
    spikes = np.zeros(n, dtype=bool)
    spikes[rng.choice(np.arange(100, n), size=n // 50, replace=False)] = True
    y[spikes] += rng.choice([-1.0, 1.0], spikes.sum()) * rng.uniform(8.0, 12.0, spikes.sum())
    others = rng.normal(size=(n, 4))
    for t in range(n):
        if feature is None:
            x = {"value": float(y[t])}
        else:
            x = {feature: float(y[t]), **{f"other_{k}": float(others[t, k]) for k in range(4)}}
        yield x, bool(spikes[t])


@pytest.fixture
def generated_datasets(monkeypatch):
    """river's dataset-driven checks run on a generated stream: for anomaly detectors river
    takes the remote CreditCard collection (a public annotated anomaly collection, which the
    project does not fetch); drift detectors get no dataset from river."""
    def datasets(model, scale: int = 1):
        if isinstance(model, PossiblyAnomalyDetector):
            yield list(_labelled_stream(model.feature, scale))

    monkeypatch.setattr(river.checks, "_yield_datasets", datasets)


def _run_river_checks(model) -> list[str]:
    """What river's check_estimator does, returning the names of the checks that ran."""
    ran = []
    for check in river.checks.yield_checks(model):
        if check.__name__ in model._unit_test_skips():
            continue
        check(model.clone())
        ran.append(check.__name__)
    return ran


@pytest.mark.parametrize("params", list(PossiblyAnomalyDetector._unit_test_params()),
                         ids=str)
def test_anomaly_detector_passes_river_checks(params, generated_datasets):
    ran = _run_river_checks(PossiblyAnomalyDetector(**params))
    # the dataset checks really ran, the ranking of the labelled spikes among them
    assert {"check_roc_auc", "check_predict_one_pure", "check_bounded_memory_growth",
            "check_emerging_features", "check_shuffle_features_no_impact"} <= set(ran)
    assert len(ran) > 25


def _failed_river_checks(model) -> tuple[set[str], int]:
    """The checks of river's yield_checks that ``model`` fails, and how many ran."""
    failed, n = set(), 0
    for check in river.checks.yield_checks(model):
        n += 1
        try:
            check(model.clone())
        except Exception:
            failed.add(check.__name__)
    return failed, n


@pytest.mark.parametrize("params", list(PossiblyDriftDetector._unit_test_params()), ids=str)
def test_drift_detector_passes_the_river_checks_that_rivers_own_pass(params):
    """A river drift detector is no river Estimator: river's check_estimator cannot run on it
    (it asks an Estimator for the checks it skips, and check_tags for an Estimator's tags).
    The checks that yield_checks gives for a drift detector: ours passes every one that
    river's own ADWIN passes."""
    from river import drift

    adwin_failed, n = _failed_river_checks(drift.ADWIN())
    assert adwin_failed == {"check_tags"} and n >= 14  # no Estimator tags on a drift detector
    failed, n_ours = _failed_river_checks(PossiblyDriftDetector(**params))
    assert n_ours == n and failed <= adwin_failed


def _stream(seed=3):
    """Two changes of level (at 180 and 300) and two spikes (at 150 and 260), noise sd 4."""
    rng = np.random.default_rng(seed)
    y = np.r_[np.full(180, 50.0), np.full(120, 62.0), np.full(100, 44.0)]
    y += 4.0 * rng.normal(size=y.size)
    y[[150, 260]] += [40.0, -35.0]
    return y


ENGINES = ["numpy", pytest.param("numba", marks=pytest.mark.skipif(
    not ps.changepoint.numba_available(), reason="numba is not installed"))]


@pytest.mark.parametrize("engine", ENGINES)
def test_score_one_does_not_change_later_results(engine):
    y = _stream()
    plain = PossiblyAnomalyDetector(warm_up=80, engine=engine)
    probed = PossiblyAnomalyDetector(warm_up=80, engine=engine)
    rng = np.random.default_rng(0)
    plain_scores, probed_scores = [], []
    for value in y:
        x = {"value": float(value)}
        plain_scores.append(plain.score_one(x))
        # probe the second detector with wild values (and the value itself, twice)
        for probe in (1e6, -3e3, float(value), float(rng.normal()), float("nan")):
            probed.score_one({"value": probe})
        probed_scores.append(probed.score_one(x))
        plain.learn_one(x)
        probed.learn_one(x)
    assert plain_scores == probed_scores  # exactly: the probes left no trace
    assert plain.detector.changepoints.tolist() == probed.detector.changepoints.tolist()
    assert plain.detector.t == probed.detector.t == y.size
    assert max(plain_scores) > 0.5  # the scores are not trivially equal


@pytest.mark.parametrize("period", [None, 24])
@pytest.mark.parametrize("engine", ENGINES)
def test_score_is_the_anomaly_of_the_next_update(engine, period):
    # independent of the adapter: a plain detector with the priors of the warm-up, streamed
    y = _stream(seed=5)
    y[[120, 121, 300]] = np.nan
    y += 6.0 * np.sin(2 * np.pi * np.arange(y.size) / 24)
    warm = 80
    reference = ps.ChangepointDetector(model=model_family(prior=automatic_prior(y[:warm])),
                                       engine=engine, period=period)
    det = PossiblyAnomalyDetector(warm_up=warm, engine=engine, period=period)
    scores = []
    for t, value in enumerate(y):
        score = det.score_one({"value": value})
        det.learn_one({"value": value})
        info = reference.update(value)
        scores.append(score)
        assert score == (0.0 if t < warm else info.anomaly), t  # exactly
    assert max(scores) > 0.99 and len(set(scores)) > 100  # not trivially equal


def test_scores_rank_the_spikes_and_shifts_first():
    y = _stream()
    det = PossiblyAnomalyDetector(feature="cpu", warm_up=80)
    scores = []
    for value in y:
        scores.append(det.score_one({"cpu": value, "host": 1.0}))
        det.learn_one({"cpu": value, "host": 1.0})
    scores = np.asarray(scores)
    assert ((scores >= 0) & (scores <= 1)).all()
    assert int(np.argmax(scores)) == 150  # the first spike tops everything before it
    # the second spike ties the first (rank 2 of n + 1, three p-values: 1 - 6 / 261) and the
    # two changes of level raise the sum over the last records: all in the top 3%
    top = np.quantile(scores[80:], 0.97)
    assert scores[260] >= top and scores[180:184].max() >= top
    assert scores[300:304].max() >= top


def _flags_of_plain_detector(y, **kwargs):
    det = ps.ChangepointDetector(**kwargs)
    return [det.update(v).change_detected for v in y]


@pytest.mark.parametrize("engine", ENGINES)
def test_drift_flags_are_the_detectors_change_detected(engine):
    y = _stream()
    warm = 80
    drift = PossiblyDriftDetector(warm_up=warm, engine=engine)
    flags = []
    for value in y:
        drift.update(value)
        flags.append(drift.drift_detected)
    expected = _flags_of_plain_detector(
        y, model=model_family(prior=automatic_prior(y[:warm])), engine=engine)
    assert not any(flags[:warm])  # nothing is flagged during the warm-up
    assert flags[warm:] == expected[warm:]
    # the two changes of the stream, a few records after each (the test can fail)
    assert [t for t, f in enumerate(flags) if f] == [t for t, f in enumerate(expected) if f]
    assert sum(flags) == 2
    np.testing.assert_allclose(drift.detector.changepoints, [180, 300], atol=2)


@pytest.mark.parametrize("engine", ENGINES)
def test_drift_flags_of_the_papers_model_start_at_the_first_value(engine):
    y = _stream(seed=8)
    drift = PossiblyDriftDetector(sigma=4.0, hazard=1e-3, engine=engine)
    flags = []
    for value in y:
        drift.update(float(value))
        flags.append(drift.drift_detected)
    assert flags == _flags_of_plain_detector(y, sigma=4.0, hazard=1e-3, engine=engine)
    assert sum(flags) >= 2


def test_missing_values_are_predict_only_steps():
    y = _stream()
    y_missing = y.copy()
    y_missing[[100, 101, 300]] = np.nan
    det = PossiblyAnomalyDetector(feature="v", warm_up=80)
    drift = PossiblyDriftDetector(warm_up=80)
    for t, value in enumerate(y_missing):
        # a missing value: the feature absent, None, or NaN
        x = {} if t == 100 else {"v": None} if t == 101 else {"v": value}
        if t in (100, 101, 300):
            assert det.score_one(x) == 0.0
        det.learn_one(x)
        drift.update(None if t == 101 else value)
    expected = ps.ChangepointDetector(
        model=model_family(prior=automatic_prior(y_missing[:80]))).fit(y_missing)
    assert det.detector.t == drift.detector.t == y.size
    assert det.detector.changepoints.tolist() == expected.changepoints.tolist()
    assert drift.detector.changepoints.tolist() == expected.changepoints.tolist()


def test_missing_values_before_the_first_observation_do_not_start_the_warm_up():
    det = PossiblyAnomalyDetector(warm_up=5)
    for _ in range(10):
        det.learn_one({})
    assert det.detector is None
    for v in [1.0, 2.0, 1.5, 1.2, 1.8]:
        det.learn_one({"y": v})
    assert det.detector is not None and det.detector.t == 5


def test_constant_warm_up_gives_a_working_detector():
    det = PossiblyAnomalyDetector(warm_up=20)
    for _ in range(20):
        det.learn_one({"cpu": 0.0})
    score = det.score_one({"cpu": 5.0})
    assert 0.0 < score <= 1.0 and math.isfinite(score)


@pytest.mark.parametrize("x, match", [
    ({"value": "3.5"}, r"x\['value'\] must be a real number"),
    ({"value": True}, r"x\['value'\] must be a real number"),
    ({"value": 1 + 2j}, r"x\['value'\] must be a real number"),
    ({"value": float("inf")}, r"x\['value'\] must be at most 1e\+150"),
    ({"value": 1e200}, r"x\['value'\] must be at most 1e\+150"),
    ({"a": 1.0, "b": 2.0}, r"x has 2 features \('a', 'b'\): name the one to monitor with "
                           r"feature="),
    ([1.0], r"x must be a dict of features"),
    (3.0, r"x must be a dict of features"),
])
def test_bad_records_are_refused(x, match):
    det = PossiblyAnomalyDetector(sigma=1.0)
    with pytest.raises(ValueError, match=match):
        det.learn_one(x)
    with pytest.raises(ValueError, match=match):
        det.score_one(x)


def test_named_feature_with_a_bad_value_names_the_feature():
    det = PossiblyAnomalyDetector(feature="latency")
    with pytest.raises(ValueError, match=r"x\['latency'\] must be a real number.*'slow'"):
        det.learn_one({"latency": "slow", "host": 1})


@pytest.mark.parametrize("x", ["1.0", True, [1.0], 2j, float("-inf")])
def test_drift_detector_refuses_non_numbers(x):
    drift = PossiblyDriftDetector()
    with pytest.raises(ValueError, match=r"^x must be"):
        drift.update(x)


@pytest.mark.parametrize("cls", [PossiblyAnomalyDetector, PossiblyDriftDetector])
@pytest.mark.parametrize("params, match", [
    ({"warm_up": 1}, "warm_up"),
    ({"warm_up": 2.5}, "warm_up"),
    ({"hazard": 1.5}, "hazard"),
    ({"model": "trend"}, "model must be None, 'auto' or 'normal'"),
    ({"sigma": -1.0}, "sigma"),
    ({"engine": "fast"}, "engine"),
])
def test_bad_parameters_are_refused(cls, params, match):
    with pytest.raises(ValueError, match=match):
        cls(**params)


def test_importing_possibly_does_not_import_river():
    import subprocess
    import sys

    code = "import sys, possibly; print('river' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


def test_a_warm_up_that_cannot_set_sigma_says_so_and_slides_on():
    det = PossiblyAnomalyDetector(model="normal", warm_up=5)
    for _ in range(4):
        det.learn_one({"v": 3.0})
    with pytest.raises(ValueError, match=r"^the warm-up of the last 5 records could not set "
                                         r"the model: sigma='auto'"):
        det.learn_one({"v": 3.0})
    assert det.detector is None
    with pytest.raises(ValueError, match="could not set the model"):
        det.learn_one({"v": 4.0})  # the last five: 3, 3, 3, 3, 4 (differences 0, 0, 0, 1)
    det.learn_one({"v": 2.5})  # 3, 3, 3, 4, 2.5: the differences' MAD is 0.5
    assert det.detector is not None and det.detector.t == 5


@pytest.mark.parametrize("a, b", [(1000.0, -50.0), (1e-3, 7.0), (-2.0, 0.0)])
def test_scores_and_drifts_do_not_depend_on_the_units(a, b):
    y = _stream(seed=4)

    def run(values):
        det, drift = PossiblyAnomalyDetector(warm_up=80), PossiblyDriftDetector(warm_up=80)
        scores, flags = [], []
        for v in values:
            scores.append(det.score_one({"value": v}))
            det.learn_one({"value": v})
            drift.update(v)
            flags.append(drift.drift_detected)
        return np.asarray(scores), flags, det.detector.changepoints.tolist()

    scores, flags, cps = run(y)
    scores_ab, flags_ab, cps_ab = run(a * y + b)
    np.testing.assert_allclose(scores_ab, scores, atol=1e-6)
    assert flags_ab == flags and cps_ab == cps and sum(flags) >= 2


@pytest.mark.parametrize("cut", [50, 200])  # during the warm-up, and after it
def test_a_pickled_detector_resumes_where_it_stopped(cut):
    import pickle

    y = _stream(seed=6)
    det, drift = PossiblyAnomalyDetector(warm_up=80), PossiblyDriftDetector(warm_up=80)
    for v in y[:cut]:
        det.learn_one({"value": v})
        drift.update(v)
    det2, drift2 = pickle.loads(pickle.dumps(det)), pickle.loads(pickle.dumps(drift))
    for v in y[cut:]:
        x = {"value": v}
        assert det2.score_one(x) == det.score_one(x)
        det.learn_one(x)
        det2.learn_one(x)
        drift.update(v)
        drift2.update(v)
        assert drift2.drift_detected == drift.drift_detected
    assert det2.detector.changepoints.tolist() == det.detector.changepoints.tolist()
    assert drift2.detector.changepoints.tolist() == drift.detector.changepoints.tolist()


def _daily_cycle(n=24 * 20, seed=7):
    """Hourly records with a daily cycle of amplitude 10 (noise sd 1) and no anomaly."""
    rng = np.random.default_rng(seed)
    return 10.0 * np.sin(2 * np.pi * np.arange(n) / 24) + rng.normal(size=n)


@pytest.mark.parametrize("engine", ENGINES)
def test_default_period_is_the_warm_ups_cycle(engine):
    # independent of the adapter: a plain detector given the warm-up's cycle by hand
    y = _daily_cycle()
    warm = 24 * 4
    reference = ps.ChangepointDetector(
        model=model_family(prior=automatic_prior(y[:warm]), period=(24.0,)), engine=engine,
        period=24)
    det = PossiblyAnomalyDetector(warm_up=warm, engine=engine)
    drift = PossiblyDriftDetector(warm_up=warm, engine=engine)
    plain = PossiblyDriftDetector(warm_up=warm, engine=engine, period=None)
    drifts = plain_drifts = 0
    for t, value in enumerate(y):
        score = det.score_one({"value": value})
        det.learn_one({"value": value})
        drift.update(value)
        plain.update(value)
        drifts += drift.drift_detected
        plain_drifts += plain.drift_detected
        info = reference.update(value)
        assert score == (0.0 if t < warm else info.anomaly), t  # exactly
    assert det.detector.period_ == 24 == drift.detector.period_
    assert plain.detector.period_ is None
    # the cycle is no drift
    assert drifts == 0 < plain_drifts
