"""F1 with a margin and segmentation covering (van den Burg & Williams, 2020), against
hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest

from possibly.changepoint.metrics import covering, f1_score, precision_recall


def test_f1_hand_computed():
    # truth {0, 50, 120}; predictions {0, 48, 90, 125}: 0-0, 50-48 (2 steps), 120-125 (5 steps,
    # on the margin) match, 90 does not: P = 3/4, R = 3/3, F1 = 2 (3/4) / (7/4) = 6/7
    assert precision_recall([50, 120], [48, 90, 125]) == (0.75, 1.0)
    assert f1_score([50, 120], [48, 90, 125]) == pytest.approx(6 / 7)
    # 6 steps is outside the default margin of 5, inside a margin of 6
    assert precision_recall([50], [56]) == (0.5, 0.5)
    assert precision_recall([50], [56], margin=6) == (1.0, 1.0)


def test_f1_matching_is_one_to_one():
    # two predictions near one true point: only one matches. P = 2/3, R = 2/2
    assert precision_recall([50], [49, 51]) == (pytest.approx(2 / 3), 1.0)
    # two true points near one prediction: only one is recalled. P = 2/2, R = 2/3
    assert precision_recall([50, 53], [51]) == (1.0, pytest.approx(2 / 3))
    # the closest prediction is taken: truth 10 takes 12 (not 7), so truth 5 can take 7
    assert precision_recall([5, 10], [7, 12], margin=3) == (1.0, 1.0)


def test_f1_empty_sets_count_the_first_point():
    assert f1_score([], []) == 1.0
    # no prediction on a series with two changes: P = 1/1, R = 1/3 -> F1 = 2 (1/3) / (4/3) = 1/2
    assert f1_score([30, 60], []) == pytest.approx(0.5)
    # three false alarms on a series without change: P = 1/4, R = 1 -> F1 = 0.4
    assert f1_score([], [10, 20, 30]) == pytest.approx(0.4)


def test_f1_several_annotators():
    # annotators {0, 50} and {0, 50, 100}; prediction {0, 50}: precision against the union
    # {0, 50, 100} is 2/2, recall is the mean of 2/2 and 2/3 = 5/6
    p, r = precision_recall([[50], [50, 100]], [50])
    assert (p, r) == (1.0, pytest.approx(5 / 6))
    assert f1_score([[50], [50, 100]], [50]) == pytest.approx(2 * (5 / 6) / (1 + 5 / 6))


def test_covering_hand_computed():
    # truth [0, 50) [50, 100); prediction [0, 40) [40, 100):
    # (50 * 40/50 + 50 * 50/60) / 100 = 0.4 + 5/12
    assert covering([50], [40], n_obs=100) == pytest.approx(0.4 + 5 / 12)
    assert covering([50], [50], n_obs=100) == 1.0
    # no prediction: the whole series covers each true segment with overlap |A| / 100
    assert covering([25], [], n_obs=100) == pytest.approx((25 * 0.25 + 75 * 0.75) / 100)
    # over-segmentation of a series without change: best overlap 50/100 of the one segment
    assert covering([], [20, 50], n_obs=100) == pytest.approx(0.5)
    # index 0 as a change point changes nothing
    assert covering([0, 50], [0, 40], n_obs=100) == covering([50], [40], n_obs=100)


def test_covering_several_annotators_is_the_mean():
    a = covering([50], [40], n_obs=100)
    b = covering([40], [40], n_obs=100)
    assert covering([[50], [40]], [40], n_obs=100) == pytest.approx((a + b) / 2)


def test_metrics_accept_numpy_arrays():
    assert f1_score(np.array([50, 120]), np.array([48, 90, 125], dtype=np.int64)) == \
        pytest.approx(6 / 7)
    assert covering(np.array([50]), np.array([40.0]), n_obs=100) == pytest.approx(0.4 + 5 / 12)


@pytest.mark.parametrize("call, name", [
    (lambda: f1_score([50], [48], margin=-1), "margin"),
    (lambda: f1_score([50], [4.5]), "predictions"),
    (lambda: f1_score([-3], [4]), "annotations"),
    (lambda: f1_score([50], [120], n_obs=100), "predictions"),
    (lambda: covering([50], [40], n_obs=0), "n_obs"),
    (lambda: covering([150], [40], n_obs=100), "annotations"),
])
def test_metrics_bad_input_names_the_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()
