"""The window-based streaming score, its alarms and its threshold search, against
hand-computed cases and a brute-force search."""

from __future__ import annotations

import math

import numpy as np
import pytest

from possibly.changepoint.metrics import alarm_indices, best_threshold, streaming_score

NAN = float("nan")


def sigmoid_reward(x: float) -> float:
    """2 / (1 + exp(5 (x - 1))) - 1 written as tanh(5 (1 - x) / 2)."""
    return math.tanh(2.5 * (1.0 - x))


def test_alarms_are_upward_crossings():
    s = [0.9, 0.95, 0.1, 0.8, 0.8, 0.2, 0.85]
    assert alarm_indices(s, 0.8).tolist() == [0, 3, 6]  # >= threshold counts
    assert alarm_indices(s, 0.81).tolist() == [0, 6]
    assert alarm_indices(s, math.inf).tolist() == []
    assert alarm_indices(s, -math.inf).tolist() == [0]
    assert alarm_indices([], 0.5).tolist() == []


def test_a_nan_score_raises_no_alarm_and_counts_as_below():
    assert alarm_indices([NAN, 1.0, 1.0, NAN, 1.0, NAN], 0.5).tolist() == [1, 4]
    assert alarm_indices([NAN, NAN], 0.5).tolist() == []


def test_one_window_linear_and_sigmoid_by_hand():
    # alarms at 2 (outside) and 5 (x = (5 - 4) / 4 in the window [4, 8))
    s = [0, 0, 1, 0, 0, 1, 1, 0, 0, 0]
    r = streaming_score(s, [(4, 8)], 0.5, reward="linear")
    # S = 3/4 - 0.11; S_null = -1; S_perfect = 1
    assert r.raw == pytest.approx(0.64)
    assert r.score == pytest.approx(1.64 / 2)
    assert (r.detected, r.missed, r.false_alarms) == (1, 0, 1)
    assert (r.precision, r.recall, r.threshold) == (0.5, 1.0, 0.5)
    r = streaming_score(s, [(4, 8)], 0.5)
    raw = sigmoid_reward(0.25) - 0.11
    assert r.raw == pytest.approx(raw)
    assert r.score == pytest.approx((raw + 1) / (sigmoid_reward(0.0) + 1))
    assert sigmoid_reward(0.0) == pytest.approx(0.98661, abs=1e-5)


def test_several_alarms_in_a_window_count_once():
    s = [0, 0, 0, 0, 1, 0, 1, 0, 1, 0]
    r = streaming_score(s, [(4, 8)], 0.5, reward="linear")
    # 4 is the first alarm in [4, 8) (x = 0), 6 is ignored, 8 is outside
    assert (r.raw, r.score) == (pytest.approx(1.0 - 0.11), pytest.approx((2.0 - 0.11) / 2.0))
    assert (r.detected, r.false_alarms) == (1, 1)


def test_alarms_at_the_window_edges():
    n = 12
    # at the first record of [4, 8): reward r(0); at the last: r(3/4); at its end 8: outside
    for t, reward, fa, missed in [(4, 1.0, 0, 0), (7, 0.25, 0, 0), (8, 0.0, 1, 1),
                                  (3, 0.0, 1, 1)]:
        s = np.zeros(n)
        s[t] = 1.0
        r = streaming_score(s, [(4, 8)], 1.0, reward="linear")
        assert r.raw == pytest.approx(reward - 0.11 * fa - missed), t
        assert (r.false_alarms, r.missed) == (fa, missed), t
    # windows touching: an alarm at 8 is in the second window [8, 10)
    s = np.zeros(n)
    s[8] = 1.0
    r = streaming_score(s, [(4, 8), (8, 10)], 1.0, reward="linear")
    assert (r.raw, r.detected, r.missed, r.false_alarms) == (pytest.approx(1.0 - 1.0), 1, 1, 0)


def test_a_score_high_since_before_the_window_does_not_detect_it():
    # one crossing at 2, before the window; the score stays high through [4, 8)
    s = [0, 0, 1, 1, 1, 1, 1, 1, 0, 0]
    r = streaming_score(s, [(4, 8)], 0.5, reward="linear")
    assert (r.detected, r.missed, r.false_alarms) == (0, 1, 1)
    assert r.raw == pytest.approx(-1.11)
    assert r.score == pytest.approx(-0.11 / 2)


def test_no_window():
    s = [0, 1, 0, 1, 0]
    r = streaming_score(s, [], 0.5)
    assert r.score is None  # undefined without a window
    assert (r.raw, r.precision, r.recall, r.false_alarms) == (pytest.approx(-0.22), 0.0, 1.0, 2)
    r = streaming_score(s, np.zeros((0, 2), int), 2.0)
    assert (r.raw, r.precision, r.recall, r.false_alarms) == (0.0, 1.0, 1.0, 0)


def test_no_alarm_scores_zero_and_a_perfect_detector_one():
    s = np.zeros(20)
    assert streaming_score(s, [(5, 9)], 0.5).score == 0.0
    s[[5, 12]] = 1.0
    assert streaming_score(s, [(5, 9), (12, 20)], 0.5).score == pytest.approx(1.0)


def test_several_streams_share_the_threshold_and_the_normalisation():
    # stream 0: window [2, 6) detected at 3 (x = 1/4); stream 1: no window, one false alarm;
    # stream 2: window [0, 2) missed
    scores = [[0, 0, 0, 1, 0, 0], [0, 0, 1], [0, 0, 0, 0]]
    windows = [[(2, 6)], [], [(0, 2)]]
    r = streaming_score(scores, windows, 0.5, reward="linear", fp_weight=0.2, fn_weight=0.5)
    raw = 0.75 - 0.2 - 0.5
    assert r.raw == pytest.approx(raw)
    assert r.score == pytest.approx((raw + 2 * 0.5) / (2 * 1.0 + 2 * 0.5))
    assert (r.detected, r.missed, r.false_alarms) == (1, 1, 1)
    assert (r.precision, r.recall) == (0.5, 0.5)


def test_nan_scores_in_windows():
    s = [NAN, NAN, 1.0, NAN, 1.0, NAN, NAN, NAN]
    r = streaming_score(s, [(1, 3), (3, 6)], 0.5, reward="linear")
    # alarms at 2 (x = 1/2 in [1, 3)) and 4 (x = 1/3 in [3, 6)); NaN never alarms
    assert r.raw == pytest.approx(0.5 + 2.0 / 3.0)
    assert streaming_score([NAN] * 5, [(1, 3)], 0.5).missed == 1


def test_best_threshold_by_hand():
    s = [[0.1, 0.2, 0.9, 0.3], [0.2, 0.7, 0.1, 0.1]]
    r = best_threshold(s, [[(2, 4)], []])
    assert (r.threshold, r.detected, r.false_alarms) == (0.9, 1, 0)
    # a false alarm cheaper than what an earlier window detection earns is worth it
    s = [[0.0, 0.5, 0.9, 0.0, 0.0]]
    r = best_threshold(s, [[(1, 5)]], reward="linear")
    assert r.threshold == 0.5 and r.raw == pytest.approx(1.0)
    # nothing to find: no alarm is best, at threshold inf
    r = best_threshold([[0.3, 0.1]], [[]])
    assert (r.threshold, r.false_alarms, r.score) == (math.inf, 0, None)


def _brute_force(scores, windows, **kw):
    values = sorted({v for s in scores for v in s if np.isfinite(v)}) + [math.inf]
    results = [streaming_score(scores, windows, v, **kw) for v in values]
    best = max(r.raw for r in results)
    return [r for r in results if r.raw >= best - 1e-12][-1]


@pytest.mark.parametrize("reward", ["sigmoid", "linear"])
def test_best_threshold_matches_a_brute_force_search(reward):
    rng = np.random.default_rng(0)
    for _ in range(40):
        scores, windows = [], []
        for _ in range(int(rng.integers(1, 4))):
            n = int(rng.integers(5, 40))
            s = np.round(rng.random(n), 1)  # ties between records on purpose
            s[rng.random(n) < 0.1] = np.nan
            cuts = np.sort(rng.choice(np.arange(n + 1), size=2 * int(rng.integers(0, 3)),
                                      replace=False))
            windows.append(cuts.reshape(-1, 2))
            scores.append(s)
        kw = dict(reward=reward, fp_weight=float(rng.uniform(0.0, 0.5)))
        got = best_threshold(scores, windows, **kw)
        want = _brute_force(scores, windows, **kw)
        assert got.threshold == want.threshold
        assert got.raw == pytest.approx(want.raw)
        assert got == streaming_score(scores, windows, got.threshold, **kw)._replace(
            raw=got.raw, score=got.score)


def test_best_threshold_with_few_candidates_tries_the_top_scores():
    rng = np.random.default_rng(1)
    s = rng.random(500)
    s[[100, 300]] = [2.0, 3.0]
    r = best_threshold([s], [[(100, 110), (300, 310)]], max_candidates=10)
    assert r.threshold == 2.0 and r.detected == 2 and r.false_alarms == 0
    assert best_threshold([s], [[(100, 110), (300, 310)]], max_candidates=1).threshold == 3.0


@pytest.mark.parametrize(("args", "kw", "match"), [
    (([0, 1], [(1, 3)], 0.5), {}, r"windows must satisfy 0 <= start < end <= n = 2"),
    (([0, 1, 2], [(2, 1)], 0.5), {}, r"windows must satisfy 0 <= start < end"),
    (([0] * 9, [(4, 8), (2, 5)], 0.5), {}, "windows must be sorted and not overlap"),
    (([0] * 9, [(1.5, 3)], 0.5), {}, r"windows must be pairs of integer indices"),
    (([0] * 9, [1, 2, 3], 0.5), {}, r"windows must be pairs of integer indices"),
    (([0, math.inf], [], 0.5), {}, r"scores must be finite numbers or NaN .* index 1"),
    ((np.zeros((3, 3)), [], 0.5), {}, r"windows must be a list of one window array per stream"),
    ((np.zeros((2, 3, 3)), [[], []], 0.5), {}, r"scores\[0\] must be a 1-d sequence"),
    (([0, 1], [], NAN), {}, r"threshold must be a number \(inf: no alarm\)"),
    (([0, 1], [], 0.5), {"reward": "step"}, "reward must be one of sigmoid, linear"),
    (([0, 1], [], 0.5), {"fp_weight": -1}, "fp_weight must be a finite number >= 0"),
    (([0, 1], [], 0.5), {"tp_weight": 0, "fn_weight": 0}, "must not both be 0"),
    (([[0, 1], [1, 0]], [[]], 0.5), {}, r"windows must be a list of one window array per "
                                        r"stream \(2 streams\)"),
    (([[0, 1], [1, 0]], [[], [(0, 5)]], 0.5), {}, r"windows\[1\] must satisfy .* n = 2"),
    (([[0, 1], ["a"]], [[], []], 0.5), {}, r"scores\[1\] must be a 1-d sequence"),
])
def test_bad_arguments(args, kw, match):
    with pytest.raises(ValueError, match=match):
        streaming_score(*args, **kw)
    if not isinstance(args[2], float) or not math.isnan(args[2]):
        with pytest.raises(ValueError, match=match):
            best_threshold(args[0], args[1], **kw)


def test_best_threshold_bad_max_candidates():
    with pytest.raises(ValueError, match="max_candidates must be an integer >= 1"):
        best_threshold([0.0, 1.0], [], max_candidates=0)
