"""Data sets: the well-log loader and the piecewise-constant generator."""

from __future__ import annotations

import hashlib

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


# --- where well_log() finds its file: POSSIBLY_DATA_DIR, then the cache, then the download ---

@pytest.fixture
def original_bytes():
    path = datasets._locate(datasets.WELL_LOG_FILE, datasets.WELL_LOG_SHA256,
                            datasets.WELL_LOG_URL)
    return path.read_bytes()


@pytest.fixture
def places(original_bytes, tmp_path, monkeypatch):
    """An empty data dir and an empty cache; downloads are recorded, never made.

    Asks for ``original_bytes`` first so that the real file is read before the environment
    changes.
    """
    data, cache = tmp_path / "data", tmp_path / "cache"
    data.mkdir()
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
