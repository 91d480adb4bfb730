"""A run of ``ChangepointDetector`` interrupted (Ctrl-C) stores nothing: what follows gives
what ``fit`` of the series actually processed gives, hindsight change possibility included."""

from __future__ import annotations

import numpy as np
import pytest

from possibly.changepoint import ChangepointDetector, detector

HAS_NUMBA = ChangepointDetector(sigma=1.0)._engine() == "numba"
ENGINES = ["numpy", pytest.param("numba", marks=pytest.mark.skipif(
    not HAS_NUMBA, reason="numba not installed"))]


def interrupt_after(monkeypatch: pytest.MonkeyPatch, engine: str, calls: int) -> None:
    """Raise KeyboardInterrupt from the engine's inner runner after ``calls`` calls (chunks
    of 20 values for the compiled engine, steps for the numpy engine)."""
    count = [0]

    def counted(run):
        def wrapper(*args, **kwargs):
            count[0] += 1
            if count[0] > calls:
                raise KeyboardInterrupt
            return run(*args, **kwargs)
        return wrapper

    if engine == "numba":
        monkeypatch.setattr(detector, "CHUNK", 20)
        original = detector.run_compiled

        def run_compiled(*args, compiled, **kwargs):
            return original(*args, compiled=compiled._replace(driver=counted(compiled.driver)),
                            **kwargs)
        monkeypatch.setattr(detector, "run_compiled", run_compiled)
    else:
        monkeypatch.setattr(detector, "step", counted(detector.step))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("how", ["extend", "update"])
def test_an_interrupted_run_leaves_the_hindsight_change_possibility_of_fit(
        monkeypatch, engine, how):
    rng = np.random.default_rng(3)
    y = np.r_[rng.normal(size=200), rng.normal(size=60) + 4.0]
    other = rng.normal(size=100) - 3.0  # interrupted: these values are never stored
    det = ChangepointDetector(sigma=1.0, engine=engine)
    det.fit(y[:200])
    with monkeypatch.context() as patch:
        interrupt_after(patch, engine, 3 if engine == "numba" else 60)
        with pytest.raises(KeyboardInterrupt):
            det.extend(other)
    if how == "extend":
        det.extend(y[200:])
    else:
        for x in y[200:]:
            det.update(x)
    ref = ChangepointDetector(sigma=1.0, engine=engine).fit(y)
    got = det.result()
    assert det.t == len(y)
    np.testing.assert_allclose(got.change_possibility, ref.change_possibility,
                               rtol=0, atol=1e-12)
    np.testing.assert_array_equal(got.discount, ref.discount)


@pytest.mark.parametrize("engine", ENGINES)
def test_an_interrupted_fit_leaves_a_fresh_detector(monkeypatch, engine):
    rng = np.random.default_rng(4)
    y = np.r_[rng.normal(size=150), rng.normal(size=50) + 4.0]
    det = ChangepointDetector(sigma=1.0, engine=engine)
    det.fit(y[:120])
    with monkeypatch.context() as patch:
        interrupt_after(patch, engine, 3 if engine == "numba" else 60)
        with pytest.raises(KeyboardInterrupt):
            det.fit(rng.normal(size=100) - 3.0)
    assert det.t == 0
    det.extend(y)
    ref = ChangepointDetector(sigma=1.0, engine=engine).fit(y)
    np.testing.assert_allclose(det.result().change_possibility, ref.change_possibility,
                               rtol=0, atol=1e-12)
