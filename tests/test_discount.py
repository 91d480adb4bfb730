"""The one definition of the discount, its numba twin, and its argument checks."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import possibly as ps
from possibly.compiled import discount_scalar

log_cs = st.one_of(st.floats(min_value=-1e300, max_value=0.0), st.just(math.nan),
                   st.just(-math.inf))
dims = st.floats(min_value=1e-3, max_value=1e3)
taus = st.one_of(st.none(), st.floats(min_value=1e-6, max_value=1.0))


@settings(deadline=None)  # the first example pays the numba compile
@given(log_c=log_cs, dim=dims, tau=taus, robust=st.booleans())
def test_numba_twin_equals_numpy(log_c, dim, tau, robust):
    ref = float(ps.discount(log_c, dim, tau, robust))
    got = discount_scalar(log_c, dim, math.nan if tau is None else tau, robust)
    if math.isnan(ref):
        assert math.isnan(got)
    else:
        # the same expressions; numpy's vectorised exp and libm's exp may differ by one ulp
        np.testing.assert_array_max_ulp(np.float64(got), np.float64(ref), maxulp=1)


def test_the_twin_is_the_scalar_function_compiled():
    from possibly.inference import discount_one

    assert discount_scalar.py_func is discount_one


def test_values_by_hand():
    log_c = np.log([1.0, 0.25, 1e-4])
    np.testing.assert_allclose(ps.discount(log_c, 2), [1.0, 0.5, 0.01])
    np.testing.assert_allclose(ps.discount(log_c, 2, tau=0.1), [1.0, 1.0, 0.01])
    np.testing.assert_allclose(ps.discount(log_c, 2, tau=0.5), [1.0, 0.5, 0.01])
    np.testing.assert_array_equal(ps.discount(log_c, 2, robust=False), [1.0, 1.0, 1.0])
    assert ps.discount(-np.inf, 3) == 0.0


def test_missing_gives_nan_in_every_mode():
    for kwargs in ({}, {"tau": 0.1}, {"robust": False}):
        assert np.isnan(ps.discount(np.nan, 2, **kwargs))


@pytest.mark.parametrize("kwargs, match", [
    ({"log_c": 0.5, "dim": 2}, "log_c"),
    ({"log_c": -1.0, "dim": 0}, "dim"),
    ({"log_c": -1.0, "dim": 2, "tau": 0.0}, "tau"),
    ({"log_c": -1.0, "dim": 2, "tau": 1.5}, "tau"),
])
def test_bad_arguments_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ps.discount(**kwargs)


def test_robust_must_be_a_bool():
    with pytest.raises(TypeError, match="robust"):
        ps.discount(-1.0, 2, robust="no")
