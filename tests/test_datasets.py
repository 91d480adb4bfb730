"""Data sets: the well-log loader and the piecewise-constant generator."""

from __future__ import annotations

import functools
import hashlib
import http.server
import threading
import zipfile
from pathlib import Path

import numpy as np
import pytest

from possibly import datasets


def test_well_log_matches_the_shared_file():
    y = datasets.well_log()
    path = datasets._locate(datasets.WELL_LOG_FILE, datasets.WELL_LOG_SHA256,
                            datasets.WELL_LOG_URL)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == datasets.WELL_LOG_SHA256
    assert y.shape == (4050,) and y.dtype == np.float64
    assert y[0] == float(path.read_text().split()[0])


def test_piecewise_constant_is_seeded_and_consistent():
    a = datasets.piecewise_constant(600, n_changes=4, seed=5)
    b = datasets.piecewise_constant(600, n_changes=4, seed=5)
    c = datasets.piecewise_constant(600, n_changes=4, seed=6)
    for u, v in zip(a, b, strict=True):
        np.testing.assert_array_equal(u, v)
    assert not np.array_equal(a[0], c[0])
    y, cps, out = a
    assert y.shape == (600,) and cps.dtype == np.int64 and out.dtype == bool
    bounds = np.concatenate([[0], cps, [600]])
    assert np.all(np.diff(bounds) >= 20)
    assert not out[0] and not out[cps].any()


def test_piecewise_constant_structure():
    sigma = 2.0
    y, cps, out = datasets.piecewise_constant(20000, n_changes=10, sigma=sigma,
                                              jump=(4.0, 8.0), outlier_rate=0.05,
                                              outlier_size=(6.0, 12.0), seed=1)
    bounds = np.concatenate([[0], cps, [y.size]])
    levels = []
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        seg, seg_out = y[a:b], out[a:b]
        level = np.median(seg[~seg_out])
        levels.append(level)
        resid = seg[~seg_out] - level
        assert np.std(resid) == pytest.approx(sigma, rel=0.25)  # noise sd, short segments too
        # outliers are 6-12 sd away from the level (noise widens the range a little)
        dev = np.abs(seg[seg_out] - level) / sigma
        assert np.all((dev > 6 - 4) & (dev < 12 + 4))
    jumps = np.abs(np.diff(levels)) / sigma
    assert np.all((jumps > 4 - 1) & (jumps < 8 + 1))
    assert out.mean() == pytest.approx(0.05, abs=0.01)
    no_changes = datasets.piecewise_constant(50, n_changes=0, outlier_rate=0.0, seed=0)
    assert no_changes[1].size == 0 and not no_changes[2].any()


@pytest.mark.parametrize(("kw", "match"), [
    (dict(n=0), "n must be an integer >= 1"),
    (dict(n=50, n_changes=5), r"n must be >= min_segment \* \(n_changes \+ 1\) = 120"),
    (dict(n_changes=-1), "n_changes must be an integer >= 0"),
    (dict(sigma=0.0), "sigma must be a finite number > 0"),
    (dict(outlier_rate=1.0), r"outlier_rate must be in \[0, 1\)"),
    (dict(jump=(5.0, 1.0)), "jump must satisfy 0 <= low <= high"),
    (dict(outlier_size=3.0), "outlier_size must be a pair"),
    (dict(min_segment=0), "min_segment must be an integer >= 1"),
])
def test_piecewise_constant_bad_arguments(kw, match):
    with pytest.raises(ValueError, match=match):
        datasets.piecewise_constant(**kw)


# --- where well_log() finds its file: the package, POSSIBLY_DATA_DIR, the cache, the download ---

REPO = Path(__file__).resolve().parents[1]
PACKAGED = REPO / "src" / "possibly" / "data" / "well_log.txt"


@pytest.fixture
def original_bytes():
    """The shipped well log, read from the source tree (not through the loader)."""
    return PACKAGED.read_bytes()


@pytest.fixture
def offline(tmp_path, monkeypatch):
    """No POSSIBLY_DATA_DIR, an empty cache, and downloads recorded, never made."""
    monkeypatch.delenv("POSSIBLY_DATA_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    calls = []

    def no_network(url, dest):
        calls.append(url)
        raise datasets.urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr(datasets, "_download", no_network)
    return tmp_path / "cache" / "possibly", calls


def test_the_shipped_well_log_is_the_checksummed_original(original_bytes):
    # the checksum is the one of the public copy (possibly.datasets.WELL_LOG_URL)
    assert hashlib.sha256(original_bytes).hexdigest() == datasets.WELL_LOG_SHA256
    lines = original_bytes.decode().split()
    assert len(lines) == 4050 and float(lines[0]) == 133530.6


def test_well_log_needs_neither_the_network_nor_a_data_dir(offline, original_bytes):
    cache, calls = offline
    y = datasets.well_log()
    assert calls == [] and not cache.exists()
    assert y.shape == (4050,) and y.dtype == np.float64
    np.testing.assert_array_equal(y, [float(v) for v in original_bytes.decode().split()])
    path = datasets._locate(datasets.WELL_LOG_FILE, datasets.WELL_LOG_SHA256,
                            datasets.WELL_LOG_URL)
    assert path.resolve() == (Path(datasets.__file__).parent / "data" / "well_log.txt").resolve()


def test_the_packaged_copy_is_preferred_to_the_data_dir(offline, tmp_path, monkeypatch):
    cache, calls = offline
    other = tmp_path / "data"
    other.mkdir()
    (other / "well_log.txt").write_text("1\n2\n")  # would be refused if it were read
    monkeypatch.setenv("POSSIBLY_DATA_DIR", str(other))
    assert datasets.well_log().shape == (4050,) and calls == []


def test_a_damaged_packaged_copy_is_passed_over(offline, tmp_path, monkeypatch,
                                                original_bytes):
    cache, calls = offline
    package = tmp_path / "package"
    package.mkdir()
    (package / "well_log.txt").write_bytes(original_bytes[:-10])
    monkeypatch.setattr(datasets, "PACKAGE_DATA_DIR", package)
    with pytest.raises(datasets.DataUnavailableError) as info:
        datasets.well_log()
    assert f"{package / 'well_log.txt'} has the wrong SHA-256" in str(info.value)
    other = tmp_path / "data"
    other.mkdir()
    (other / "well_log.txt").write_bytes(original_bytes)
    monkeypatch.setenv("POSSIBLY_DATA_DIR", str(other))
    assert datasets.well_log().shape == (4050,)


@pytest.fixture
def places(original_bytes, tmp_path, monkeypatch):
    """An empty data dir, an empty cache and no packaged copy; downloads are recorded, never
    made: the fall-back path of a data set that is not shipped."""
    data, cache = tmp_path / "data", tmp_path / "cache"
    data.mkdir()
    (tmp_path / "empty_package").mkdir()
    monkeypatch.setattr(datasets, "PACKAGE_DATA_DIR", tmp_path / "empty_package")
    monkeypatch.setenv("POSSIBLY_DATA_DIR", str(data))
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    calls = []

    def offline(url, dest):
        calls.append(url)
        raise datasets.urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr(datasets, "_download", offline)
    return data, cache / "possibly", calls


def test_data_dir_is_used_first(places, original_bytes):
    data, cache, calls = places
    (data / "well_log.txt").write_bytes(original_bytes)
    assert datasets.well_log().shape == (4050,)
    assert calls == [] and not cache.exists()


def test_data_dir_without_the_file_falls_back_to_the_cache(places, original_bytes):
    data, cache, calls = places
    cache.mkdir(parents=True)
    (cache / "well_log.txt").write_bytes(original_bytes)
    assert datasets.well_log().shape == (4050,)
    assert calls == []


def test_then_to_the_checksummed_download(places, original_bytes, monkeypatch):
    data, cache, calls = places

    def fake(url, dest):
        calls.append(url)
        dest.write_bytes(original_bytes)

    monkeypatch.setattr(datasets, "_download", fake)
    y = datasets.well_log()
    assert calls == [datasets.WELL_LOG_URL] and y.shape == (4050,)
    assert (cache / "well_log.txt").read_bytes() == original_bytes
    assert [p.name for p in cache.iterdir()] == ["well_log.txt"]  # no temporary left over
    datasets.well_log()  # now served from the cache
    assert len(calls) == 1


def test_a_corrupt_download_is_rejected_and_not_cached(places, monkeypatch):
    data, cache, calls = places
    monkeypatch.setattr(datasets, "_download", lambda url, dest: dest.write_bytes(b"1\n2\n"))
    with pytest.raises(datasets.DataUnavailableError, match="SHA-256"):
        datasets.well_log()
    assert list(cache.iterdir()) == []


def test_a_corrupt_cache_is_replaced_by_the_download(places, original_bytes, monkeypatch):
    data, cache, calls = places
    cache.mkdir(parents=True)
    (cache / "well_log.txt").write_bytes(b"not the file")
    monkeypatch.setattr(datasets, "_download", lambda url, dest: dest.write_bytes(original_bytes))
    assert datasets.well_log().shape == (4050,)
    assert (cache / "well_log.txt").read_bytes() == original_bytes


def test_offline_failure_is_one_line_saying_what_to_do(places):
    data, cache, calls = places
    with pytest.raises(FileNotFoundError) as info:
        datasets.well_log()
    msg = str(info.value)
    assert "\n" not in msg and info.value.__cause__ is None and info.value.__suppress_context__
    assert f"POSSIBLY_DATA_DIR={data}" in msg and str(cache) in msg
    assert "set POSSIBLY_DATA_DIR to a folder holding well_log.txt" in msg
    assert "connect to the internet" in msg and "name resolution" in msg
    assert calls == [datasets.WELL_LOG_URL]


def test_without_data_dir_the_cache_and_download_are_used(places, monkeypatch):
    data, cache, calls = places
    monkeypatch.delenv("POSSIBLY_DATA_DIR")
    with pytest.raises(datasets.DataUnavailableError) as info:
        datasets.well_log()
    assert "POSSIBLY_DATA_DIR=" not in str(info.value) and str(cache) in str(info.value)


def test_a_wrong_file_in_the_data_dir_is_an_error(places):
    data, cache, calls = places
    (data / "well_log.txt").write_text("1\n2\n")
    with pytest.raises(ValueError, match="does not have the expected SHA-256"):
        datasets.well_log()


# --- the download itself, against a file server on 127.0.0.1 (no mock of the download) -------

@pytest.fixture
def file_server(tmp_path, monkeypatch):
    """Serve ``tmp_path / "served"`` over HTTP on 127.0.0.1; yields (folder, base URL)."""
    served = tmp_path / "served"
    served.mkdir()
    for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    monkeypatch.delenv("POSSIBLY_DATA_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):  # keep the test output clean
            pass

    handler = functools.partial(Quiet, directory=str(served))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield served, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_a_data_set_not_shipped_is_downloaded_checked_and_cached(file_server, tmp_path):
    served, base = file_server
    content = b"1.5\n2.5\n-3.0\n"
    (served / "other.txt").write_bytes(content)
    sha = hashlib.sha256(content).hexdigest()
    path = datasets._locate("other.txt", sha, f"{base}/other.txt")
    assert path == tmp_path / "cache" / "possibly" / "other.txt"
    assert path.read_bytes() == content
    (served / "other.txt").unlink()  # the second call is served from the cache
    assert datasets._locate("other.txt", sha, f"{base}/other.txt") == path
    # a file with another checksum is refused and not cached
    (served / "bad.txt").write_bytes(b"1\n")
    with pytest.raises(datasets.DataUnavailableError, match="has SHA-256"):
        datasets._locate("bad.txt", sha, f"{base}/bad.txt")
    assert not (tmp_path / "cache" / "possibly" / "bad.txt").exists()


def test_a_missing_remote_file_is_one_line(file_server):
    served, base = file_server
    with pytest.raises(datasets.DataUnavailableError) as info:
        datasets._locate("absent.txt", "0" * 64, f"{base}/absent.txt")
    msg = str(info.value)
    assert "\n" not in msg and "absent.txt" in msg and "downloading it failed" in msg


# --- the built distribution carries the data file ----------------------------------------------

def test_the_wheel_ships_the_well_log_and_its_notice(tmp_path):
    """The wheel that hatchling (the build backend, in the test extra) builds carries both."""
    from hatchling.builders.wheel import WheelBuilder

    wheels = list(WheelBuilder(str(REPO)).build(directory=str(tmp_path), versions=["standard"]))
    with zipfile.ZipFile(wheels[0]) as zf:
        names = set(zf.namelist())
        assert zf.read("possibly/data/well_log.txt") == PACKAGED.read_bytes()
    assert "possibly/data/README.md" in names


# ----------------------------------------------------------------------------------------------
# synthetic change-point suite


@pytest.mark.parametrize("name", sorted(datasets.SYNTHETIC_SUITE))
def test_synthetic_suite_is_seeded_and_annotated(name):
    gen = datasets.SYNTHETIC_SUITE[name]
    y, truth = gen(seed=3)
    y2, truth2 = gen(seed=3)
    np.testing.assert_array_equal(y, y2)
    np.testing.assert_array_equal(truth.changepoints, truth2.changepoints)
    assert not np.array_equal(y, gen(seed=4)[0])
    assert y.dtype == np.float64 and np.all(np.isfinite(y))
    n = y.shape[0]
    cps = truth.changepoints
    assert cps.dtype == np.int64 and np.all(np.diff(cps) > 0)
    assert cps.size == 0 or (cps[0] > 0 and cps[-1] < n)
    assert truth.outliers.shape == (n,) and truth.outliers.dtype == bool


def _segments(y, cps):
    bounds = np.concatenate([[0], cps, [y.shape[0]]])
    return [y[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def test_variance_changes_change_the_spread_only():
    y, truth = datasets.variance_changes(3000, n_changes=3, seed=0)
    sds = [np.std(s) for s in _segments(y, truth.changepoints)]
    ratios = np.exp(np.abs(np.diff(np.log(sds))))
    assert np.all((ratios > 2.4) & (ratios < 7.5))  # factor 3-6, estimated on ~700 points
    assert all(abs(np.mean(s)) < 4 * np.std(s) / np.sqrt(s.size) for s in
               _segments(y, truth.changepoints))


def test_level_shift_scenarios_have_the_stated_jumps():
    for gen, low, high in ((datasets.ar1_shifts, 4.0, 7.0), (datasets.trend_jumps, 0.0, 12.0),
                           (datasets.heavy_tailed, 3.0, 6.0)):
        y, truth = gen(3000, n_changes=3, seed=1)
        med = [np.median(s) for s in _segments(y, truth.changepoints)]
        if gen is not datasets.trend_jumps:
            jumps = np.abs(np.diff(med))
            assert np.all((jumps > low - 1) & (jumps < high + 1)), jumps
    y, truth = datasets.level_shifts(2000, n_changes=3, outlier_rate=0.02, seed=2)
    assert 10 < truth.outliers.sum() < 80
    segs = _segments(np.where(truth.outliers, np.nan, y), truth.changepoints)
    resid = np.concatenate([s - np.nanmedian(s) for s in segs])
    assert np.nanstd(resid) == pytest.approx(1.0, rel=0.1)
    out_resid = np.abs(y - np.repeat([np.median(s[np.isfinite(s)]) for s in segs],
                                     [s.size for s in segs]))[truth.outliers]
    assert out_resid.min() > 4.0  # 6-20 sd, minus the noise


def test_no_change_scenarios():
    y, truth = datasets.growth_curve(300, seed=0)
    assert truth.changepoints.size == 0
    curve = 1.0 + 99.0 / (1.0 + np.exp(-np.linspace(-6.0, 6.0, 300)))  # the documented curve
    assert np.std(y - curve) == pytest.approx(0.01 * 99.0, rel=0.15)
    y, truth = datasets.seasonal(400, period=50, amplitude=3.0, seed=0)
    assert truth.changepoints.size == 0
    assert np.std(y) == pytest.approx(np.sqrt(1 + 4.5), rel=0.15)  # noise + sine variance


def test_short_counts_and_multivariate():
    for n in (15, 60):
        y, truth = datasets.short_series(n, seed=0)
        assert y.shape == (n,) and n // 4 <= truth.changepoints[0] <= n - n // 4
    y, truth = datasets.count_shifts(3000, n_changes=3, seed=0)
    assert np.all(y >= 0) and np.all(y == np.round(y))
    rates = [s.mean() for s in _segments(y, truth.changepoints)]
    assert np.all(np.exp(np.abs(np.diff(np.log(rates)))) > 1.7)  # at least a factor 2
    y, truth = datasets.multivariate_shifts(3000, n_changes=2, dim=4, seed=0)
    assert y.shape == (3000, 4)
    for s in _segments(y, truth.changepoints):
        np.testing.assert_allclose(np.std(s, axis=0), 1.0, rtol=0.15)  # unit variances


@pytest.mark.parametrize("call, name", [
    (lambda: datasets.level_shifts(0), "n"),
    (lambda: datasets.level_shifts(10**7), "n"),
    (lambda: datasets.level_shifts(100, n_changes=-1), "n_changes"),
    (lambda: datasets.level_shifts(100, outlier_rate=1.0), "outlier_rate"),
    (lambda: datasets.variance_changes(50, n_changes=3), "n must be >="),
    (lambda: datasets.growth_curve(100, noise=0.0), "noise"),
    (lambda: datasets.seasonal(100, period=2), "period"),
    (lambda: datasets.ar1_shifts(300, phi=1.0), "phi"),
    (lambda: datasets.heavy_tailed(300, df=-1.0), "df"),
    (lambda: datasets.short_series(61), "n"),
    (lambda: datasets.short_series(14), "n"),
    (lambda: datasets.multivariate_shifts(300, dim=1), "dim"),
    (lambda: datasets.count_shifts(300, n_changes=2.5), "n_changes"),
])
def test_synthetic_bad_input_names_the_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()


# ----------------------------------------------------------------------------------------------
# synthetic streaming-anomaly suite

STEPS = {np.timedelta64(1, "m"), np.timedelta64(5, "m"), np.timedelta64(1, "h")}
WEEK = np.timedelta64(7, "D")


@pytest.mark.parametrize("name", sorted(datasets.STREAMING_SUITE))
def test_streaming_suite_is_seeded_and_labelled(name):
    gen = datasets.STREAMING_SUITE[name]
    series, windows = gen(seed=3)
    again, windows2 = gen(seed=3)
    np.testing.assert_array_equal(series.values, again.values)
    np.testing.assert_array_equal(windows, windows2)
    assert series.start == again.start
    assert not np.array_equal(series.values, gen(seed=4)[0].values)
    y = np.asarray(series)
    assert y is series.values and y.dtype == np.float64 and np.all(np.isfinite(y))
    n = len(series)
    assert 2000 <= n <= 10080  # realistic stream lengths
    assert series.step in STEPS
    index = series.index
    assert index.shape == (n,) and np.all(np.diff(index) == series.step)
    assert index[0] == series.start
    assert windows.dtype == np.int64 and windows.ndim == 2 and windows.shape[1] == 2
    if windows.size:
        assert np.all(windows[:, 0] < windows[:, 1])
        assert np.all(windows[1:, 0] >= windows[:-1, 1])  # sorted, not overlapping
        assert windows[0, 0] >= n // 4 and windows[-1, 1] <= n  # after the warm-up


@pytest.mark.parametrize("name", sorted(datasets.STREAMING_SUITE))
def test_streaming_suite_too_short(name):
    with pytest.raises(ValueError, match="n must be an integer >= "):
        datasets.STREAMING_SUITE[name](n=10, seed=0)


def _noise_sd(series) -> float:
    """Noise sd from differences one week apart in the first quarter (no anomaly there):
    the cycle cancels, the noise adds up twice."""
    lag = series.steps_per(WEEK)
    y = series.values[: len(series) // 4 + lag]
    return float(np.std(y[lag:] - y[:-lag]) / np.sqrt(2.0))


def _week_before(series, a: int, b: int) -> float:
    """Mean of [a, b) minus the mean of the same hours of the week before."""
    lag = series.steps_per(WEEK)
    y = series.values
    return float(np.mean(y[a:b]) - np.mean(y[a - lag:b - lag]))


def test_cycles_have_the_stated_size_and_no_anomaly_when_idle():
    series, windows = datasets.cycle_idle(seed=0)
    assert windows.shape == (0, 2)
    sd = _noise_sd(series)
    hour = series.index.astype("datetime64[h]").astype(np.int64) % 24
    weekday = (series.index.astype("datetime64[D]").astype(np.int64) + 3) % 7  # 0 = Monday
    profile = [np.mean(series.values[(hour == h) & (weekday < 5)]) for h in range(24)]
    # 8 noise sd from night to afternoon on working days
    assert (max(profile) - min(profile)) / sd == pytest.approx(8.0, rel=0.1)
    assert 14 <= int(np.argmax(profile)) <= 16  # peak mid-afternoon
    medians = [float(np.median(datasets.cycle_idle(seed=s)[0].values)) for s in range(8)]
    assert max(medians) / min(medians) > 10  # units vary between seeds


def test_level_shift_drift_and_missing_peak_by_the_week_before():
    for seed in range(3):
        series, windows = datasets.cycle_level_shift(seed=seed)
        sd = _noise_sd(series)
        a = windows[0, 0]
        assert 2.5 < abs(_week_before(series, a, a + 24)) / sd < 6.5
        series, windows = datasets.cycle_drift(seed=seed)
        sd = _noise_sd(series)
        a, b = windows[0]
        # the drift reaches 4 to 8 sd after 48 hours: its mean over the window is half that
        assert 1.5 < abs(_week_before(series, a, b)) / sd < 4.5
    drops = []
    for seed in range(5):
        series, windows = datasets.cycle_missing_peak(seed=seed)
        sd = _noise_sd(series)
        drops += [_week_before(series, a, b) / sd for a, b in windows]
    # the peak 10 exp(-(h - 19)^2 / 2) averages 5.87 over 17:00 to 20:00; the mean of 10
    # windows of 4 hours has a standard error of about 0.25
    assert np.mean(drops) == pytest.approx(-5.87, abs=0.8)


def test_flat_stretches_are_frozen_readings():
    series, windows = datasets.cycle_flat_middle(seed=1)
    y = series.values
    for a, b in windows:
        assert 60 <= b - a <= 180 and np.all(y[a:b] == y[a - 1])
    flat = np.zeros(len(y), dtype=bool)
    for a, b in windows:
        flat[a - 1:b] = True
    runs = np.diff(y) == 0
    assert not np.any(runs & ~flat[1:])  # no repeated value elsewhere


def test_cpu_counts_latency_and_idle_metrics_as_they_are():
    series, windows = datasets.cpu_bursts(seed=2)
    y = series.values
    assert np.all(y == np.round(y)) and y.min() >= 0 and y.max() <= 100
    assert np.mean(y == np.median(y)) > 0.5  # a plateau: MAD 0
    assert np.mean(y > 15) > 0.01  # normal job spikes
    for a, b in windows:
        assert 20 <= b - a <= 90 and np.mean(y[a:b]) > 50
    series, windows = datasets.count_surge(seed=2)
    y = series.values
    assert np.all(y == np.round(y)) and y.min() >= 0 and np.mean(y == 0) > 0.1
    for a, b in windows:
        ratio = np.sum(y[a:b]) / max(np.sum(y[a - 168:b - 168]), 1.0)
        assert ratio > 2.0
    series, windows = datasets.latency_heavy_tail(seed=2)
    y = series.values
    assert y.min() > 0 and y.max() / np.median(y) > 20
    for a, b in windows:
        assert 1.5 < np.median(y[a:b]) / np.median(y) < 3.5
    series, windows = datasets.idle_stream(seed=2)
    assert windows.shape == (0, 2) and series.values.min() == 0.0
    assert np.mean(series.values == 0) == pytest.approx(0.9, abs=0.02)


def test_variance_bursts_and_spike_density():
    series, windows = datasets.variance_burst(seed=0)
    d = np.diff(series.values)
    inside = np.zeros(d.size, dtype=bool)
    for a, b in windows:
        inside[a:b - 1] = True
        assert 2.5 < np.std(d[a:b - 1]) / np.std(d[~inside[:d.size]][:a // 2]) < 6.0
    series, windows = datasets.spike_density(seed=0)
    y = series.values
    med = np.median(y)
    big = np.abs(y - med) > 4.0 * 1.4826 * np.median(np.abs(y - med))
    inside = np.zeros(y.size, dtype=bool)
    for a, b in windows:
        inside[a:b] = True
    assert np.mean(big[inside]) > 10 * np.mean(big[~inside])


def test_timed_series_to_pandas():
    pd = pytest.importorskip("pandas")
    series, _ = datasets.cycle_idle(seed=0)
    s = series.to_pandas(name="load")
    assert s.name == "load" and s.index.freq == pd.Timedelta(hours=1)
    np.testing.assert_array_equal(s.to_numpy(), series.values)
    assert s.index[0] == pd.Timestamp(series.start)
    assert np.asarray(series, dtype=np.float32).dtype == np.float32
