"""The segment-model protocol: one abstract path, a name, and a compiled kernel of a model's own.

The model below is defined here, with its own numba kernel, and nothing of the library is
edited for it: the detector must run it on the compiled engine (not the numpy recursion) and
give exactly the numbers of its numpy path, which are in turn the paper's recursion of
``NormalMean(sigma, outliers="paper")`` (the same formulas, written independently here).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest

import possibly as ps
from possibly.changepoint import detector as detector_module
from possibly.changepoint.compiled_engine import shared_kernels
from possibly.changepoint.detector import ChangepointDetector, numba_available
from possibly.changepoint.models import (
    CompiledKernel,
    KernelFunctions,
    MultivariateNormalSegments,
    NormalMean,
    Observation,
    PolynomialTrend,
    SegmentModel,
    SegmentPrior,
    model_family,
)

needs_numba = pytest.mark.skipif(not numba_available(), reason="numba is not installed")

FIELDS = ("map_run_length", "map_model", "mean", "log_consistency", "discount", "n_active",
          "log_online_change_possibility", "changepoints", "outliers")


def _same(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _assert_same_fit(a, b, fields=FIELDS):
    for name in fields:
        assert _same(getattr(a, name), getattr(b, name)), name


# ----------------------------------------------------------------------------------------------
# a third-party model: a normal mean with known noise variance, numpy methods and a kernel


def km_prepare(params, y):
    return y


def km_new_run(params, runs, j):
    runs[j, 0] = 0.0
    runs[j, 1] = 0.0


def km_forget(params, runs, j, rho, work):
    runs[j, 1] = runs[j, 1] * rho


def km_log_consistency(params, runs, j, y):
    d = y - runs[j, 0]
    return -(0.5 * (d * d) * (runs[j, 1] / (1.0 + runs[j, 1] * params[0])))


def km_update(params, runs, j, y, gamma, work):
    k = gamma / params[0]
    d = y - runs[j, 0]
    lam = runs[j, 1]
    gain = k / (lam + k)
    runs[j, 0] = runs[j, 0] + gain * d
    runs[j, 1] = lam + k
    return -(0.5 * (d * d) * (lam * gain))


def km_estimate(params, runs, j):
    return runs[j, 0] if runs[j, 1] > 0.0 else math.nan


def km_indistinguishable(params, runs, j, tol):
    lmax = max(runs[j, 1], runs[j + 1, 1])
    dm = runs[j + 1, 0] - runs[j, 0]
    return abs(runs[j + 1, 1] - runs[j, 1]) <= tol * lmax and (dm * dm) * lmax <= tol * tol


KNOWN_MEAN_KERNEL = KernelFunctions(2, km_prepare, km_new_run, km_forget, km_log_consistency,
                                    km_update, km_estimate, km_indistinguishable)


@dataclass(frozen=True)
class KnownVarianceMean(SegmentModel):
    """Normal mean with known noise variance (the paper's recursion, no evidence floor)."""

    variance: float = 1.0
    numpy_updates = [0]  # calls of the numpy update (class-wide counter)

    @property
    def name(self) -> str:
        return f"mean (variance {self.variance:g})"

    def new_runs(self, n):
        return {"mean": np.zeros(n), "precision": np.zeros(n)}

    def forget(self, runs, rho):
        return {"mean": runs["mean"], "precision": runs["precision"] * rho}

    def log_consistency(self, prepared):
        lam = prepared.runs["precision"]
        d = prepared.y - prepared.runs["mean"]
        return -(0.5 * (d * d) * (lam / (1.0 + lam * self.variance)))

    def update(self, prepared, gamma):
        self.numpy_updates[0] += 1
        k = gamma / self.variance
        lam, mu = prepared.runs["precision"], prepared.runs["mean"]
        d = prepared.y - mu
        gain = k / (lam + k)
        return -(0.5 * (d * d) * (lam * gain)), {"mean": mu + gain * d, "precision": lam + k}

    def estimate(self, runs):
        return np.where(runs["precision"] > 0.0, runs["mean"], np.nan)

    def indistinguishable(self, runs, tol):
        lam, mu = runs["precision"], runs["mean"]
        lmax = np.maximum(lam[:-1], lam[1:])
        dm = mu[1:] - mu[:-1]
        return (np.abs(lam[1:] - lam[:-1]) <= tol * lmax) & ((dm * dm) * lmax <= tol * tol)

    def compiled_kernel(self):
        return CompiledKernel(
            KNOWN_MEAN_KERNEL, np.array([self.variance]),
            lambda runs: np.stack([runs["mean"], runs["precision"]], axis=1),
            lambda rows: {"mean": rows[:, 0].copy(), "precision": rows[:, 1].copy()})


@pytest.fixture
def series():
    y, _, _ = ps.datasets.piecewise_constant(600, n_changes=4, seed=5)
    y = y.copy()
    y[[17, 300, 301]] = np.nan  # missing values: predict only
    return y


@needs_numba
@pytest.mark.parametrize("models, kw", [
    ([KnownVarianceMean(1.0)], {}),
    ([KnownVarianceMean(1.0)], {"forgetting": 0.95, "merge_tol": 0.0, "tol": 0.0}),
    ([KnownVarianceMean(0.5), KnownVarianceMean(4.0)], {"forgetting": 0.98}),
])
def test_a_model_defined_here_runs_its_own_kernel_compiled(series, monkeypatch, models, kw):
    runs = []
    real = detector_module.run_compiled

    def spy(*args, **kwargs):
        runs.append(kwargs["compiled"].kernels)
        return real(*args, **kwargs)

    monkeypatch.setattr(detector_module, "run_compiled", spy)
    before = KnownVarianceMean.numpy_updates[0]
    compiled = ChangepointDetector(model=models, engine="numba", hazard=0.01, **kw).fit(series)
    assert len(runs) == 1 and runs[0][0].functions is KNOWN_MEAN_KERNEL  # the compiled engine
    assert KnownVarianceMean.numpy_updates[0] == before  # and not the numpy recursion
    numpy = ChangepointDetector(model=models, engine="numpy", hazard=0.01, **kw).fit(series)
    assert KnownVarianceMean.numpy_updates[0] > before
    assert compiled.changepoints.size >= 3  # a real segmentation
    _assert_same_fit(compiled, numpy)
    # "auto" picks the compiled engine as well
    auto = ChangepointDetector(model=models, hazard=0.01, **kw).fit(series)
    assert len(runs) == 2
    _assert_same_fit(auto, compiled)
    assert compiled.segment_model_names[0].startswith("mean (variance")


@needs_numba
def test_the_model_defined_here_is_the_papers_recursion(series):
    # independent formulas: the library's NormalMean with the paper's rule (no floor); the
    # outliers differ by design (the model here has no hindsight rule: SegmentModel.outlying)
    ours = ChangepointDetector(model=KnownVarianceMean(2.25), hazard=0.01).fit(series)
    paper = ChangepointDetector(model=NormalMean(1.5, outliers="paper"), hazard=0.01,
                                engine="numpy").fit(series)
    assert ours.outliers.size == 0 and paper.outliers.size > 0
    _assert_same_fit(ours, paper, FIELDS[:-1])


@needs_numba
def test_streaming_on_the_compiled_kernel_equals_fit(series):
    model = KnownVarianceMean(1.0)
    ref = ChangepointDetector(model=model, hazard=0.01).fit(series)
    det = ChangepointDetector(model=model, hazard=0.01)
    det.extend(series[:250])
    for value in series[250:260]:
        det.update(value)
    det.extend(series[260:])
    _assert_same_fit(det.result(), ref)


# ----------------------------------------------------------------------------------------------
# the protocol itself


def test_segment_model_is_abstract_with_one_path():
    with pytest.raises(TypeError):
        SegmentModel()  # type: ignore[abstract]

    class NoUpdate(SegmentModel):
        def new_runs(self, n):
            return {"mean": np.zeros(n)}

        def forget(self, runs, rho):
            return runs

        def log_consistency(self, prepared):
            return np.zeros(len(prepared.runs["mean"]))

        def estimate(self, runs):
            return runs["mean"]

    with pytest.raises(TypeError, match="update"):
        NoUpdate()
    abstract = SegmentModel.__abstractmethods__
    assert abstract == {"new_runs", "forget", "log_consistency", "update", "estimate"}
    for name in ("prepared_log_consistency", "prepared_update"):
        assert not hasattr(SegmentModel, name)


def test_default_prepare_and_hooks():
    model = KnownVarianceMean(1.0)
    runs = model.new_runs(2)
    prepared = model.prepare(runs, 3.0)
    assert isinstance(prepared, Observation) and prepared.runs is runs and prepared.y == 3.0
    assert SegmentModel.compiled_kernel(model) is None  # the base's default
    assert SegmentModel.name.fget(model) == "KnownVarianceMean"  # type: ignore[attr-defined]


def test_a_model_without_a_kernel_runs_on_numpy_and_refuses_numba(series):
    class NoKernel(KnownVarianceMean):
        def compiled_kernel(self):
            return None

    model = NoKernel(1.0)
    det = ChangepointDetector(model=model, hazard=0.01)
    assert det._engine() == "numpy"
    with pytest.raises(ValueError, match="engine='numba' needs models with one compiled kernel"):
        ChangepointDetector(model=model, engine="numba")
    # kernels of different functions do not run in one loop
    assert shared_kernels([NormalMean(1.0), KnownVarianceMean(1.0)]) is None
    assert shared_kernels([KnownVarianceMean(1.0), KnownVarianceMean(2.0)]) is not None


def test_a_merging_model_whose_kernel_does_not_merge_runs_on_numpy_and_refuses_numba(series):
    # the numpy path merges (indistinguishable); a kernel without its own would not: the
    # engines would disagree, so the compiled engine must not run it
    class KernelWithoutMerge(KnownVarianceMean):
        def compiled_kernel(self):
            kernel = super().compiled_kernel()
            return kernel._replace(functions=kernel.functions._replace(indistinguishable=None))

    model = KernelWithoutMerge(1.0)
    det = ChangepointDetector(model=model, hazard=0.01, merge_tol=0.05)
    assert det._engine() == "numpy"
    numpy = ChangepointDetector(model=KnownVarianceMean(1.0), hazard=0.01, merge_tol=0.05,
                                engine="numpy").fit(series)
    _assert_same_fit(det.fit(series), numpy)
    with pytest.raises(ValueError, match=r"KernelWithoutMerge\(.*indistinguishable"):
        ChangepointDetector(model=model, engine="numba")


def test_a_vector_model_with_a_kernel_runs_on_numpy_and_refuses_numba():
    # compiled kernels take scalar observations: a vector model's kernel is not run
    class VectorWithKernel(MultivariateNormalSegments):
        def compiled_kernel(self):
            return KnownVarianceMean(1.0).compiled_kernel()

    y, _, _ = ps.datasets.piecewise_constant(200, n_changes=2, seed=1)
    y2 = np.stack([y, -y], axis=1)
    model = VectorWithKernel()
    det = ChangepointDetector(model=model, hazard=0.01)
    ref = ChangepointDetector(model=MultivariateNormalSegments(), hazard=0.01).fit(y2)
    _assert_same_fit(det.fit(y2), ref, fields=("map_run_length", "n_active", "changepoints"))
    assert det._engine() == "numpy"
    with pytest.raises(ValueError, match=r"VectorWithKernel\(.*event_ndim=1"):
        ChangepointDetector(model=model, engine="numba")


def test_names_come_from_the_models():
    names = [m.name for m in [NormalMean(1.0), *model_family()]]
    assert names == ["level", "level", "linear trend", "quadratic trend"]
    y = np.r_[np.zeros(40), np.full(40, 9.0)] + np.resize([0.2, -0.1, 0.0, -0.2], 80)
    res = ChangepointDetector(model=[KnownVarianceMean(0.04), KnownVarianceMean(9.0)],
                              hazard=0.01).fit(y)
    assert len(res.segment_models) == 2
    assert res.segment_model_names == [["mean (variance 0.04)", "mean (variance 9)"][k]
                                       for k in res.segment_models]
    assert "model: mean (variance 0.04) or mean (variance 9)," in repr(res)


def test_a_subclass_of_a_library_model_gets_no_kernel():
    # the library's kernels are their classes' formulas: a subclass may change them
    class Custom(NormalMean):
        pass

    assert NormalMean(1.0).compiled_kernel() is not None
    assert Custom(1.0).compiled_kernel() is None
    assert PolynomialTrend(1).compiled_kernel() is not None


def test_kernels_pack_and_unpack_runs_exactly():
    rng = np.random.default_rng(0)
    runs = {"mean": rng.normal(size=4), "precision": rng.uniform(size=4)}
    kernel = NormalMean(1.0).compiled_kernel()
    back = kernel.unpack(kernel.pack(runs))
    assert all(_same(back[k], runs[k]) for k in runs)
    for degree in (0, 1, 2):
        model = PolynomialTrend(degree, prior=SegmentPrior(0.0, 1.0, 50.0))
        p = degree + 1
        a = rng.normal(size=(5, p, p))
        trend_runs = {"m": rng.normal(size=(5, p)), "cov": a @ np.swapaxes(a, 1, 2),
                      "a": rng.uniform(1, 2, 5), "b": rng.uniform(1, 2, 5),
                      "seen": np.array([True, False, True, True, False])}
        kernel = model.compiled_kernel()
        back = kernel.unpack(kernel.pack(trend_runs))
        assert all(_same(back[k], trend_runs[k]) for k in trend_runs)


def test_options_after_the_first_are_keyword_only():
    with pytest.raises(TypeError):
        NormalMean(1.0, "paper")  # type: ignore[misc]
    with pytest.raises(TypeError):
        PolynomialTrend(1, 2.0)  # type: ignore[misc]
    with pytest.raises(TypeError):
        ChangepointDetector(1.0, 0.01)  # type: ignore[misc]
    assert NormalMean(1.0, outliers="paper").outlier_cost is None
    # the detector's only positional parameter is the model, as the filters' and estimators'
    with pytest.raises(TypeError):
        ChangepointDetector(NormalMean(1.0), 0.01)  # type: ignore[misc]
    det = ChangepointDetector(NormalMean(1.5), hazard=0.01)
    assert det.model == NormalMean(1.5) and det.sigma == "auto"
    assert det.get_params() == ChangepointDetector(model=NormalMean(1.5), hazard=0.01).get_params()


def test_a_pickled_detector_holds_no_compiled_code(series):
    import pickle

    model = KnownVarianceMean(1.0)  # its kernel's pack and unpack are lambdas: not picklable
    det = ChangepointDetector(model=model, hazard=0.01)
    det.fit(series[:300])
    copy = pickle.loads(pickle.dumps(det))
    for value in series[300:320]:
        det.update(value)
        copy.update(value)
    _assert_same_fit(copy.result(), det.result())
