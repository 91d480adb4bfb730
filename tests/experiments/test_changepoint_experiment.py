"""The §5.3 reproduction in quick mode, and its plots."""

from __future__ import annotations

import json

import pytest

from possibly.experiments import changepoint_study as experiment


@pytest.fixture(scope="module")
def result():
    return experiment.run(quick=True)


def test_quick_run_is_json_and_reports_what_the_issue_asks(result):
    json.dumps(result)
    assert result["n"] == 4050 and result["quick"]
    assert len(result["robust"]["changepoints"]) < len(result["standard"]["changepoints"])
    # the paper's four rapid events: the robust version calls each a change point
    assert [e["t"] for e in result["rapid_events"]] == [1212, 1426, 2772, 3943]
    assert all(e["robust_calls_change"] for e in result["rapid_events"])
    # isolated spikes the standard version calls change points are outliers for the robust one
    absorbed = result["standard_changepoints_robust_treats_as_outliers"]
    assert len(absorbed) >= 5
    versions = {(t["engine"], t["version"]) for t in result["timings"]}
    assert ("numpy", "robust") in versions and ("numpy", "standard") in versions
    assert all(t["ms_per_obs"] > 0 for t in result["timings"])
    assert "summary" not in result
    assert "robust" in experiment.report_text(result)
    rows = experiment.summary(result)
    assert {r["quantity"] for r in rows} >= {f"rapid event t ≈ {t}" for t in (1212, 1426, 2772,
                                                                           3943)}


def test_plots(result, tmp_path):
    paths = experiment.plot(result, tmp_path)
    assert len(paths) == 3
    for p in paths:
        with open(p, "rb") as fh:
            assert fh.read(4) == b"\x89PNG"


def test_bad_repeats():
    with pytest.raises(ValueError, match="repeats must be an integer >= 1"):
        experiment.run(repeats=0, quick=True)
