"""One conformance suite, parametrised over every sequential class (see tests/conformance.py).

Each area of the library adds its classes to its own list below; a test checks that every
concrete :class:`~possibly.sequential.SequentialEstimator` of the library has a case.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pytest

import possibly as ps
from conformance import (
    ALL_CHECKS,
    FILTER_CHECKS,
    Case,
    FilterCase,
    check_constructor_keywords,
    sequential_classes,
)
from possibly.filters import (
    ExtendedKalmanFilter,
    KalmanFilter,
    NoiseScaleKalmanFilter,
    NonlinearModel,
    ParticleFilter,
    UnscentedKalmanFilter,
    constant_velocity,
)
from possibly.sequential import Info, SequentialEstimator, is_missing, time_first


@dataclass(frozen=True)
class _MeanState:
    posterior: ps.Normal


@dataclass(frozen=True, eq=False, kw_only=True)
class _RobustMean(SequentialEstimator[_MeanState, Info, Info]):
    """The smallest sequential estimator on the generic algebra: a robust normal mean.

    It exercises the checks themselves; the library's classes follow the same pattern.
    """

    sd: float = 1.0

    def init(self, batch_shape=()):
        return _MeanState(ps.Normal.uninformative(batch_shape))

    def step(self, state, y):
        y = np.asarray(y, dtype=float)
        missing = is_missing(y, 0)
        lik = ps.likelihood.normal(np.where(missing, 0.0, y), sd=self.sd)
        post = state.posterior
        res = ps.robust_update(post, lik, validate=False)
        keep = ps.Normal.from_fields({k: np.where(missing, v, res.posterior.fields()[k])
                                      for k, v in post.fields().items()})
        nan = np.where(missing, np.nan, 0.0)
        return _MeanState(keep), Info(res.log_consistency + nan, res.discount + nan)

    def fit(self, y):
        y = np.asarray(y, dtype=float)
        state = self.init(y.shape[:-1])
        infos = []
        for y_t in time_first(y, 0):
            state, info = self.step(state, y_t)
            infos.append(info)
        return Info(np.stack([i.log_consistency for i in infos], axis=-1),
                    np.stack([i.discount for i in infos], axis=-1))


_rng = np.random.default_rng(0)
_scalar = np.r_[_rng.normal(size=20), 15.0, _rng.normal(size=19)]

GENERIC_CASES = [Case("generic robust mean", _RobustMean, _scalar)]

_steps = np.r_[_scalar, _rng.normal(size=30) + 6.0]
_counts = np.r_[_rng.poisson(3.0, 30), 25.0, _rng.poisson(12.0, 29)].astype(float)
_poisson = ps.changepoint.ConjugateModel(ps.Gamma.uninformative(), ps.likelihood.poisson)
CHANGEPOINT_CASES: list[Case] = [
    Case("changepoint normal numpy",
         functools.partial(ps.ChangepointDetector, sigma=1.0, engine="numpy"), _steps,
         batch=False, rtol=0.0),
    Case("changepoint normal numba",
         functools.partial(ps.ChangepointDetector, sigma=1.0, engine="numba"), _steps,
         batch=False, rtol=0.0),
    Case("changepoint conjugate poisson",
         functools.partial(ps.ChangepointDetector, model=_poisson), _counts,
         batch=False, rtol=0.0),
    Case("changepoint two models",
         functools.partial(ps.ChangepointDetector, model=[ps.changepoint.NormalMean(1.0),
                                                          ps.changepoint.NormalMean(3.0)]),
         _steps, batch=False, rtol=0.0),
]
# issue 12: the unknown-variance level and trend models, with a prior fixed for streaming
_seg_prior = ps.changepoint.automatic_prior(_steps[:20])
CHANGEPOINT_CASES.append(
    Case("changepoint level+trend family",
         functools.partial(ps.ChangepointDetector, forgetting=1.0,
                           model=[ps.changepoint.NormalMeanVariance(prior=_seg_prior),
                                  ps.changepoint.PolynomialTrend(1, prior=_seg_prior)]),
         _steps, batch=False, rtol=0.0))
# the default of ChangepointDetector() (model_family, forgetting 1, tol 0.4 hazard), streamable
CHANGEPOINT_CASES.append(
    Case("changepoint default family",
         functools.partial(ps.ChangepointDetector,
                           model=ps.changepoint.model_family(prior=_seg_prior)),
         _steps, batch=False, rtol=0.0))

_frng = np.random.default_rng(1)
_track = np.cumsum(_frng.normal(size=30))[:, None] + _frng.normal(size=(30, 1))
_track[12] += 40.0
_track2 = np.cumsum(_frng.normal(size=(30, 2)), axis=0)
_track2[9] = [35.0, -20.0]
_track2[20, 1] = np.nan  # a partly missing observation
_cv = constant_velocity()
_cv2 = constant_velocity(ndim=2)


def _particle_filter():
    return ParticleFilter.from_model(
        _cv, n_particles=60, prior=ps.MultivariateNormal([0.0, 0.0], np.eye(2)), seed=3)


FILTER_CASES: list[Case] = [
    Case("KalmanFilter", lambda: KalmanFilter(_cv), _track, event_ndim=1),
    Case("KalmanFilter standard", lambda: KalmanFilter(_cv, robust=False), _track,
         event_ndim=1),
    Case("KalmanFilter 2-D tau", lambda: KalmanFilter(_cv2, tau=0.5), _track2, event_ndim=1),
    Case("ParticleFilter", _particle_filter, _track[:12], event_ndim=1, batch=False),
]

_cauchy = np.r_[_rng.standard_cauchy(), 2.0 + 2.0 * _rng.normal(size=15), 40.0,
                2.0 + 2.0 * _rng.normal(size=14)]
_batches = _rng.normal(size=(12, 6, 2))
_batches[7] *= 15.0                                    # an outlier batch

ESTIMATOR_CASES: list[Case] = [
    # the automatic beta0 / decay are set from the whole series (fit only): fixed to stream
    Case("RobustNormalEstimator", lambda: ps.RobustNormalEstimator(beta0=1.0), _cauchy),
    Case("RobustNormalEstimator robust_start=False",
         lambda: ps.RobustNormalEstimator(beta0=1.0, robust_start=False, tau=None), _cauchy),
    Case("RobustCovarianceEstimator", lambda: ps.RobustCovarianceEstimator(tau=0.25, d=2),
         _batches, event_ndim=2),
    Case("SoftUniformEstimator", lambda: ps.SoftUniformEstimator(decay=10.0, order="given"),
         np.abs(_scalar) + 0.1),
]

def _nl_f(x):  # module level: the model must pickle
    return 0.9 * x + 0.1 * np.sin(x)


def _nl_h(x):
    return np.stack([x[..., 0] ** 2 / 4, x[..., 1]], axis=-1)


def _nonlinear_model():
    return NonlinearModel(f=_nl_f, h=_nl_h, Q=0.05 * np.eye(2), R=0.5 * np.eye(2))


def _nonlinear(cls):
    return lambda: cls(_nonlinear_model(), prior=ps.MultivariateNormal([2.0, 0.0], np.eye(2)))


def _learned_scale():
    return KalmanFilter(_cv2, learn_noise_scale=True, scale_prior=(2.0, 1.0))


_bivariate = np.c_[1.0 + 0.3 * _rng.normal(size=30), 0.3 * _rng.normal(size=30)]
_bivariate[12] = [25.0, -9.0]

FILTER_CASES += [
    Case("robust EKF", _nonlinear(ExtendedKalmanFilter), _bivariate, 1),
    Case("robust UKF", _nonlinear(UnscentedKalmanFilter), _bivariate, 1),
    Case("robust EKF, no prior", lambda: ExtendedKalmanFilter(
        _nonlinear_model(), initial_guess=[2.0, 0.0]), _bivariate, 1),
    Case("robust UKF, no prior", lambda: UnscentedKalmanFilter(
        _nonlinear_model(), initial_guess=[2.0, 0.0]), _bivariate, 1),
    Case("Kalman filter, learned noise scale", _learned_scale, _bivariate, 1),
    Case("NoiseScaleKalmanFilter", lambda: NoiseScaleKalmanFilter(
        _cv2, scale_prior=(2.0, 1.0)), _bivariate, 1),
]

CASES = GENERIC_CASES + CHANGEPOINT_CASES + FILTER_CASES + ESTIMATOR_CASES


@pytest.mark.parametrize("check", ALL_CHECKS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_conformance(case, check):
    check(case)


# -- the typed protocol: every class of the library --------------------------------------------
SEQUENTIAL_CLASSES = sequential_classes()


def test_every_sequential_class_has_a_case():
    covered = {type(case.make()) for case in CASES}
    missing = [cls.__qualname__ for cls in SEQUENTIAL_CLASSES if cls not in covered]
    assert not missing, f"no conformance Case for {missing}"


@pytest.mark.parametrize("cls", SEQUENTIAL_CLASSES, ids=lambda c: c.__qualname__)
def test_constructor_takes_at_most_the_model_positionally(cls):
    check_constructor_keywords(cls)


def test_sequential_estimator_is_abstract():
    """A subclass must implement init, step and fit; update, reset and state come with it."""
    class NoStep(SequentialEstimator[_MeanState, Info, Info]):
        def init(self, batch_shape=()):
            return _MeanState(ps.Normal.uninformative(batch_shape))

        def fit(self, y):
            return Info(0.0, 1.0)

    with pytest.raises(TypeError, match="abstract.*step"):
        NoStep()
    with pytest.raises(TypeError, match="abstract"):
        SequentialEstimator()
    est = _RobustMean()
    assert est.state is None
    est.update(1.0)
    assert isinstance(est.state, _MeanState)
    assert est.reset() is est and est.state is None


def test_constructor_check_sees_positional_settings():
    """The check itself: a second positional parameter, or ``*args``, is refused."""
    class TwoPositional(_RobustMean):
        def __init__(self, model, sd=1.0):
            pass

    class StarArgs(_RobustMean):
        def __new__(cls, *args, **kwargs):
            return super().__new__(cls)

    check_constructor_keywords(_RobustMean)
    for cls in (TwoPositional, StarArgs):
        with pytest.raises(AssertionError, match="positional"):
            check_constructor_keywords(cls)


# -- state-space filters: one family -----------------------------------------------------------
def _frame(values):
    import pandas as pd

    values = np.asarray(values, dtype=float)
    return pd.DataFrame(values, index=pd.date_range("2024-01-01", periods=len(values), freq="D"),
                        columns=[f"y{i}" for i in range(values.shape[1])])


STATE_SPACE_FILTERS = [
    FilterCase("KalmanFilter", lambda: KalmanFilter(_cv), _frame(_track)),
    FilterCase("KalmanFilter, learned noise scale", _learned_scale, _frame(_bivariate)),
    FilterCase("ExtendedKalmanFilter", _nonlinear(ExtendedKalmanFilter), _frame(_bivariate)),
    FilterCase("UnscentedKalmanFilter", _nonlinear(UnscentedKalmanFilter), _frame(_bivariate)),
    FilterCase("ParticleFilter", _particle_filter, _frame(_track[:12])),
]


@pytest.mark.parametrize("check", FILTER_CHECKS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("case", STATE_SPACE_FILTERS, ids=str)
def test_state_space_filter(case, check):
    check(case)


def test_learned_noise_scale_filter_is_a_kalman_filter():
    assert isinstance(KalmanFilter(_cv2, learn_noise_scale=True), KalmanFilter)


def test_state_check_sees_named_tuples_and_mutable_dataclasses():
    """The check itself: a NamedTuple state, a mutable dataclass, or either nested, fails."""
    from typing import NamedTuple

    from conformance import check_state_is_frozen_dataclass

    class Tuple(NamedTuple):
        posterior: ps.Normal

    @dataclass
    class Mutable:
        posterior: ps.Normal

    @dataclass(frozen=True)
    class Nested:
        inner: Tuple

    def wrapped(make_state):
        @dataclass(frozen=True, eq=False, kw_only=True)
        class Wrapped(_RobustMean):
            def init(self, batch_shape=()):
                return make_state(super().init(batch_shape).posterior)

            def step(self, state, y):
                return state, Info(0.0, 1.0)
        return Wrapped

    check_state_is_frozen_dataclass(GENERIC_CASES[0])
    for make_state in (Tuple, Mutable, lambda post: Nested(Tuple(post))):
        case = Case("bad state", wrapped(make_state), _scalar)
        with pytest.raises(AssertionError, match="NamedTuple|not frozen|not a frozen"):
            check_state_is_frozen_dataclass(case)
