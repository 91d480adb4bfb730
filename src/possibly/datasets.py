"""Data sets, loaded the way ``scipy.datasets`` does, and seeded generators.

The well-log series is shipped in the package (``possibly/data``, with its source and licence
in the README there), so that it works offline. A data set is looked for, in order, in the
package, in the directory named by the ``POSSIBLY_DATA_DIR`` environment variable, in the user
cache (``$XDG_CACHE_HOME/possibly`` or ``~/.cache/possibly``), and finally downloaded into the
cache; every copy is checked against its SHA-256 before use. Offline and with no copy, the
loader fails with one line that says what to do.

The seeded generators make two synthetic suites, so that methods are compared and tuned
without touching public annotated collections: change points (:data:`SYNTHETIC_SUITE`) and
streaming anomalies (:data:`STREAMING_SUITE`: time-stamped metrics with labelled windows).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

from possibly.validation import check_int

__all__ = [
    "ChangepointTruth",
    "DataUnavailableError",
    "STREAMING_SUITE",
    "STREAM_EPOCH",
    "SYNTHETIC_SUITE",
    "TimedSeries",
    "WELL_LOG_SHA256",
    "ar1_shifts",
    "cache_dir",
    "count_shifts",
    "count_surge",
    "cpu_bursts",
    "cycle_drift",
    "cycle_flat_middle",
    "cycle_idle",
    "cycle_level_shift",
    "cycle_missing_peak",
    "growth_curve",
    "heavy_tailed",
    "idle_stream",
    "latency_heavy_tail",
    "level_shifts",
    "multivariate_shifts",
    "piecewise_constant",
    "seasonal",
    "short_series",
    "spike_density",
    "trend_jumps",
    "variance_burst",
    "variance_changes",
    "well_log",
]

WELL_LOG_FILE = "well_log.txt"
WELL_LOG_SHA256 = "cd2a1be7dd895e92e28f00cc522d8c2721b67208ecb6ef942547b797d6dccb7a"
# Public copy of the series of O Ruanaidh & Fitzgerald (1996), as used by Knoblauch et al. (2018).
WELL_LOG_URL = (
    "https://raw.githubusercontent.com/alan-turing-institute/rbocpdms/master/Data/well%20log/"
    "well.txt"
)
DOWNLOAD_TIMEOUT = 30.0  # seconds
#: The data sets shipped inside the package (their sources and licences: README.md there).
PACKAGE_DATA_DIR = Path(__file__).with_name("data")


class DataUnavailableError(FileNotFoundError):
    """A data set is in none of the places looked at and could not be downloaded."""


def cache_dir() -> Path:
    """The user cache directory for downloaded data."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "possibly"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _download(url: str, dest: Path) -> None:
    """Fetch ``url`` into ``dest`` (no checks here; :func:`_locate` verifies the checksum)."""
    with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT) as response:
        dest.write_bytes(response.read())


def _locate(filename: str, sha256: str, url: str) -> Path:
    """The package's copy, then ``POSSIBLY_DATA_DIR``, then the cache, then a checksummed
    download into the cache.

    A packaged copy with the wrong checksum (a damaged installation) is passed over: the other
    places are tried, and the error, if any, names it.
    """
    looked = []
    packaged = PACKAGE_DATA_DIR / filename
    if packaged.is_file():
        if _sha256(packaged) == sha256:
            return packaged
        looked.append(f"the package ({packaged} has the wrong SHA-256)")
    env = os.environ.get("POSSIBLY_DATA_DIR")
    if env:
        path = Path(env) / filename
        if path.is_file():
            if _sha256(path) != sha256:
                raise ValueError(f"{path} does not have the expected SHA-256 {sha256}: "
                                 f"replace it with the original {filename} or unset "
                                 "POSSIBLY_DATA_DIR")
            return path
        looked.append(f"POSSIBLY_DATA_DIR={env}")
    cached = cache_dir() / filename
    if cached.is_file() and _sha256(cached) == sha256:
        return cached
    looked.append(f"the cache {cache_dir()}")
    try:
        cache_dir().mkdir(parents=True, exist_ok=True)
        # download next to the target, then rename: a failed download leaves no partial file
        fd, tmp_name = tempfile.mkstemp(prefix=f".{filename}.", dir=cache_dir())
        os.close(fd)
        tmp = Path(tmp_name)
        try:
            _download(url, tmp)
            got = _sha256(tmp)
            if got != sha256:
                raise DataUnavailableError(
                    f"the download of {filename} from {url} has SHA-256 {got}, expected "
                    f"{sha256}: set POSSIBLY_DATA_DIR to a folder holding the original "
                    f"{filename}")
            os.replace(tmp, cached)
        finally:
            tmp.unlink(missing_ok=True)
    except OSError as exc:
        if isinstance(exc, DataUnavailableError):
            raise
        reason = getattr(exc, "reason", None) or exc.strerror or exc
        raise DataUnavailableError(
            f"{filename} is not in {' or '.join(looked)} and downloading it failed ({reason}): "
            f"set POSSIBLY_DATA_DIR to a folder holding {filename}, or connect to the internet "
            "and retry") from None
    return cached


def well_log() -> np.ndarray:
    """The well-log series: 4050 nuclear-magnetic-response measurements from drilling.

    Shipped with the package (from the MIT-licensed repository of Knoblauch et al., 2018:
    source and licence in ``possibly/data/README.md``) and checked against
    :data:`WELL_LOG_SHA256`; no network is needed.

    Returns
    -------
    ndarray, shape (4050,)

    Examples
    --------
    >>> import possibly as ps
    >>> y = ps.datasets.well_log()
    >>> y.shape
    (4050,)
    """
    path = _locate(WELL_LOG_FILE, WELL_LOG_SHA256, WELL_LOG_URL)
    return np.loadtxt(path, dtype=np.float64)


def piecewise_constant(n: int = 1000, n_changes: int = 5, *, sigma: float = 1.0,
                       jump: tuple[float, float] = (4.0, 8.0), outlier_rate: float = 0.01,
                       outlier_size: tuple[float, float] = (6.0, 12.0), min_segment: int = 20,
                       seed=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A seeded piecewise-constant series with normal noise, known change points and outliers.

    The level starts at 0 and jumps by ``±U(jump) · sigma`` at each change point; change
    points are drawn uniformly with every segment at least ``min_segment`` long. Each
    observation is, with probability ``outlier_rate``, an outlier: shifted by
    ``±U(outlier_size) · sigma``. Outliers are never placed on the first observation of a
    segment (there, nothing can tell them from the change itself).

    Parameters
    ----------
    n : int
        Length of the series, at least ``min_segment * (n_changes + 1)``.
    n_changes : int
        Number of change points, ``>= 0``.
    sigma : float
        Noise standard deviation, ``> 0``.
    jump, outlier_size : (low, high)
        Ranges of the jump and outlier magnitudes in units of ``sigma``, ``0 <= low <= high``.
    outlier_rate : float
        Probability that an observation is an outlier, in [0, 1).
    min_segment : int
        Minimum segment length, ``>= 1``.
    seed : int, numpy Generator or None
        Random seed.

    Returns
    -------
    signal : ndarray, shape (n,)
    changepoints : ndarray of int64, shape (n_changes,)
        0-based start indices of the segments after the first.
    outliers : ndarray of bool, shape (n,)

    Examples
    --------
    >>> import possibly as ps
    >>> y, cps, out = ps.datasets.piecewise_constant(200, n_changes=2, seed=0)
    >>> y.shape, cps.shape, out.dtype
    ((200,), (2,), dtype('bool'))
    >>> bool(np.all(np.diff(np.concatenate([[0], cps, [200]])) >= 20))
    True
    """
    n = check_int("n", n, 1)
    n_changes = check_int("n_changes", n_changes, 0)
    min_segment = check_int("min_segment", min_segment, 1)
    if n < min_segment * (n_changes + 1):
        raise ValueError(f"n must be >= min_segment * (n_changes + 1) = "
                         f"{min_segment * (n_changes + 1)}, got {n}")
    if not (isinstance(sigma, (int, float, np.floating)) and np.isfinite(sigma) and sigma > 0):
        raise ValueError(f"sigma must be a finite number > 0, got {sigma!r}")
    if not (isinstance(outlier_rate, (int, float, np.floating)) and 0 <= outlier_rate < 1):
        raise ValueError(f"outlier_rate must be in [0, 1), got {outlier_rate!r}")
    for name, rng_ in (("jump", jump), ("outlier_size", outlier_size)):
        try:
            low, high = (float(v) for v in rng_)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a pair (low, high), got {rng_!r}") from None
        if not (np.isfinite(low) and np.isfinite(high) and 0 <= low <= high):
            raise ValueError(f"{name} must satisfy 0 <= low <= high (finite), got {rng_!r}")
    rng = np.random.default_rng(seed)
    cps = _draw_changepoints(rng, n, n_changes, min_segment)
    steps = rng.uniform(jump[0], jump[1], n_changes) * rng.choice([-1.0, 1.0], n_changes)
    level = np.zeros(n)
    for c, s in zip(cps, steps, strict=True):
        level[c:] += s * sigma
    signal = level + rng.normal(0.0, sigma, n)
    outliers = rng.random(n) < outlier_rate
    outliers[0] = False
    outliers[cps] = False
    size = rng.uniform(outlier_size[0], outlier_size[1], n) * rng.choice([-1.0, 1.0], n)
    signal[outliers] += size[outliers] * sigma
    return signal, cps, outliers


# ----------------------------------------------------------------------------------------------
# synthetic change-point suite: seeded generators returning (series, truth)
#
# Each generator returns ``(series, truth)``: ``series`` has the time axis first (shape ``(n,)``,
# or ``(n, dim)`` for vector series) and ``truth`` is a :class:`ChangepointTruth`. Sizes are
# bounded by :data:`MAX_SYNTHETIC_LENGTH` so that a typo cannot allocate gigabytes.

#: largest series length the synthetic generators accept
MAX_SYNTHETIC_LENGTH = 1_000_000


class ChangepointTruth(NamedTuple):
    """The annotation of a synthetic series.

    Attributes
    ----------
    changepoints : ndarray of int64
        0-based start indices of the segments after the first (empty: no change).
    outliers : ndarray of bool, shape (n,)
        True where an isolated outlier was added.
    """

    changepoints: np.ndarray
    outliers: np.ndarray


def _check_length(name: str, value, low: int) -> int:
    value = check_int(name, value, low)
    if value > MAX_SYNTHETIC_LENGTH:
        raise ValueError(f"{name} must be <= {MAX_SYNTHETIC_LENGTH}, got {value}")
    return value


def _check_positive(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def _check_rate(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not 0 <= value < 1:
        raise ValueError(f"{name} must be in [0, 1), got {value!r}")
    return float(value)


def _draw_changepoints(rng: np.random.Generator, n: int, n_changes: int,
                       min_segment: int) -> np.ndarray:
    """Change points with every segment at least ``min_segment`` long (stars and bars)."""
    if n < min_segment * (n_changes + 1):
        raise ValueError(f"n must be >= min_segment * (n_changes + 1) = "
                         f"{min_segment * (n_changes + 1)}, got {n}")
    slack = n - min_segment * (n_changes + 1)
    cuts = np.sort(rng.integers(0, slack + 1, n_changes))
    return (np.arange(1, n_changes + 1) * min_segment + cuts).astype(np.int64)


def _segmented(n, n_changes, seed, min_segment: int = 30
               ) -> tuple[int, int, np.random.Generator, np.ndarray]:
    """Checked ``n`` and ``n_changes``, the generator, and change points ``min_segment`` apart."""
    n = _check_length("n", n, 1)
    n_changes = check_int("n_changes", n_changes, 0)
    rng = np.random.default_rng(seed)
    return n, n_changes, rng, _draw_changepoints(rng, n, n_changes, min_segment)


def _level_path(rng: np.random.Generator, n: int, cps: np.ndarray, low: float, high: float
                ) -> np.ndarray:
    """A level starting at 0 that jumps by ``±U(low, high)`` at each change point."""
    k = cps.size
    steps = np.concatenate([[0.0], rng.uniform(low, high, k) * _signs(rng, k)])
    return np.cumsum(steps)[_segment_ids(n, cps)]


def _segment_ids(n: int, cps: np.ndarray) -> np.ndarray:
    ids = np.zeros(n, dtype=np.int64)
    ids[cps] = 1
    return np.cumsum(ids)


def _signs(rng: np.random.Generator, k: int) -> np.ndarray:
    return rng.choice([-1.0, 1.0], k)


def _no_outliers(n: int) -> np.ndarray:
    return np.zeros(n, dtype=bool)


def level_shifts(n: int = 500, n_changes: int = 4, *, outlier_rate: float = 0.01,
                 seed=None) -> tuple[np.ndarray, ChangepointTruth]:
    """Level shifts of 2 to 5 noise sd, unit normal noise, isolated outliers of 6 to 20 sd.

    Parameters
    ----------
    n : int
        Length, ``>= 20 * (n_changes + 1)`` and ``<= MAX_SYNTHETIC_LENGTH``.
    n_changes : int
        Number of change points, ``>= 0``.
    outlier_rate : float
        Probability that an observation (not the first of a segment) is an outlier, [0, 1).
    seed : int, numpy Generator or None

    Returns
    -------
    series : ndarray, shape (n,)
    truth : ChangepointTruth

    Examples
    --------
    >>> import possibly as ps
    >>> y, truth = ps.datasets.level_shifts(300, n_changes=2, seed=0)
    >>> y.shape, truth.changepoints.shape, int(truth.outliers.sum())
    ((300,), (2,), 3)
    """
    n = _check_length("n", n, 1)
    n_changes = check_int("n_changes", n_changes, 0)
    outlier_rate = _check_rate("outlier_rate", outlier_rate)
    y, cps, out = piecewise_constant(n, n_changes, jump=(2.0, 5.0), outlier_rate=outlier_rate,
                                     outlier_size=(6.0, 20.0), seed=seed)
    return y, ChangepointTruth(cps, out)


def variance_changes(n: int = 500, n_changes: int = 3, *, seed=None
                     ) -> tuple[np.ndarray, ChangepointTruth]:
    """Constant mean, noise sd changing by a factor 3 to 6 (up or down) at each change point.

    Parameters
    ----------
    n : int
        Length, ``>= 30 * (n_changes + 1)``.
    n_changes : int
        Number of change points, ``>= 0``.
    seed : int, numpy Generator or None

    Returns
    -------
    series : ndarray, shape (n,)
    truth : ChangepointTruth

    Examples
    --------
    >>> import possibly as ps
    >>> y, truth = ps.datasets.variance_changes(300, n_changes=2, seed=0)
    >>> y.shape, truth.changepoints.tolist()
    ((300,), [164, 239])
    """
    n, n_changes, rng, cps = _segmented(n, n_changes, seed)
    # log sd alternates direction so that it stays within a bounded range
    factors = np.log(rng.uniform(3.0, 6.0, n_changes))
    direction = np.where(np.arange(n_changes) % 2 == 0, 1.0, -1.0) * _signs(rng, 1)
    log_sd = np.concatenate([[0.0], np.cumsum(factors * direction)])
    sd = np.exp(log_sd)[_segment_ids(n, cps)]
    return rng.normal(0.0, 1.0, n) * sd, ChangepointTruth(cps, _no_outliers(n))


def trend_jumps(n: int = 500, n_changes: int = 3, *, seed=None
                ) -> tuple[np.ndarray, ChangepointTruth]:
    """Piecewise-linear trends: at each change point the level jumps by 3 to 6 noise sd and the
    slope is redrawn (up to ±0.1 noise sd per step); unit normal noise.

    Parameters
    ----------
    n : int
        Length, ``>= 30 * (n_changes + 1)``.
    n_changes : int
        Number of change points, ``>= 0``.
    seed : int, numpy Generator or None

    Returns
    -------
    series : ndarray, shape (n,)
    truth : ChangepointTruth

    Examples
    --------
    >>> import possibly as ps
    >>> y, truth = ps.datasets.trend_jumps(200, n_changes=1, seed=0)
    >>> y.shape, truth.changepoints.size
    ((200,), 1)
    """
    n, n_changes, rng, cps = _segmented(n, n_changes, seed)
    starts = np.concatenate([[0], cps])
    ends = np.concatenate([cps, [n]])
    mean = np.empty(n)
    level = 0.0
    for k, (a, b) in enumerate(zip(starts, ends, strict=True)):
        if k > 0:
            level += rng.uniform(3.0, 6.0) * _signs(rng, 1)[0]
        slope = rng.uniform(-0.1, 0.1)
        mean[a:b] = level + slope * np.arange(b - a)
        level = mean[b - 1] + slope
    return mean + rng.normal(0.0, 1.0, n), ChangepointTruth(cps, _no_outliers(n))


def growth_curve(n: int = 300, *, noise: float = 0.01, seed=None
                 ) -> tuple[np.ndarray, ChangepointTruth]:
    """A smooth logistic growth curve (population-like) with small noise: no change point.

    The curve rises from about 1 to about 100 over the series; the noise sd is ``noise`` times
    the curve's range (0.01: much smaller than the step-to-step increments in the middle).

    Parameters
    ----------
    n : int
        Length, ``>= 2``.
    noise : float
        Noise sd relative to the range of the curve, ``> 0``.
    seed : int, numpy Generator or None

    Returns
    -------
    series : ndarray, shape (n,)
    truth : ChangepointTruth
        No change point, no outlier.

    Examples
    --------
    >>> import possibly as ps
    >>> y, truth = ps.datasets.growth_curve(100, seed=0)
    >>> bool(y[-1] > 90 > 2 > y[0]), truth.changepoints.size
    (True, 0)
    """
    n = _check_length("n", n, 2)
    noise = _check_positive("noise", noise)
    rng = np.random.default_rng(seed)
    x = np.linspace(-6.0, 6.0, n)
    curve = 1.0 + 99.0 / (1.0 + np.exp(-x))
    return curve + rng.normal(0.0, noise * 99.0, n), ChangepointTruth(
        np.zeros(0, np.int64), _no_outliers(n))


def seasonal(n: int = 400, *, period: int = 50, amplitude: float = 3.0, seed=None
             ) -> tuple[np.ndarray, ChangepointTruth]:
    """A sinusoid of period ``period`` and amplitude ``amplitude`` (in noise sd) plus unit normal
    noise: a periodic pattern with no change point.

    Parameters
    ----------
    n : int
        Length, ``>= 2``.
    period : int
        Period in steps, ``>= 4``.
    amplitude : float
        Amplitude in units of the noise sd, ``> 0``.
    seed : int, numpy Generator or None

    Returns
    -------
    series : ndarray, shape (n,)
    truth : ChangepointTruth
        No change point, no outlier.

    Examples
    --------
    >>> import possibly as ps
    >>> y, truth = ps.datasets.seasonal(200, seed=0)
    >>> y.shape, truth.changepoints.size
    ((200,), 0)
    """
    n = _check_length("n", n, 2)
    period = check_int("period", period, 4)
    amplitude = _check_positive("amplitude", amplitude)
    rng = np.random.default_rng(seed)
    phase = rng.uniform(0.0, 2.0 * np.pi)
    wave = amplitude * np.sin(2.0 * np.pi * np.arange(n) / period + phase)
    return wave + rng.normal(0.0, 1.0, n), ChangepointTruth(np.zeros(0, np.int64),
                                                            _no_outliers(n))


def ar1_shifts(n: int = 500, n_changes: int = 3, *, phi: float = 0.5, seed=None
               ) -> tuple[np.ndarray, ChangepointTruth]:
    """Level shifts of 4 to 7 marginal sd in stationary AR(1) noise (unit marginal sd).

    Parameters
    ----------
    n : int
        Length, ``>= 30 * (n_changes + 1)``.
    n_changes : int
        Number of change points, ``>= 0``.
    phi : float
        AR coefficient, in [0, 1).
    seed : int, numpy Generator or None

    Returns
    -------
    series : ndarray, shape (n,)
    truth : ChangepointTruth

    Examples
    --------
    >>> import possibly as ps
    >>> y, truth = ps.datasets.ar1_shifts(300, n_changes=2, seed=0)
    >>> y.shape, truth.changepoints.size
    ((300,), 2)
    """
    phi = _check_rate("phi", phi)
    n, n_changes, rng, cps = _segmented(n, n_changes, seed)
    innov = rng.normal(0.0, np.sqrt(1.0 - phi * phi), n)
    noise = np.empty(n)
    noise[0] = rng.normal()
    for t in range(1, n):
        noise[t] = phi * noise[t - 1] + innov[t]
    level = _level_path(rng, n, cps, 4.0, 7.0)
    return level + noise, ChangepointTruth(cps, _no_outliers(n))


def heavy_tailed(n: int = 500, n_changes: int = 3, *, df: float = 3.0, seed=None
                 ) -> tuple[np.ndarray, ChangepointTruth]:
    """Level shifts of 3 to 6 scale units in Student-t noise with ``df`` degrees of freedom.

    The heavy tails are the point: there is no annotated outlier (``truth.outliers`` is all
    False), but single large values are common and are not change points.

    Parameters
    ----------
    n : int
        Length, ``>= 30 * (n_changes + 1)``.
    n_changes : int
        Number of change points, ``>= 0``.
    df : float
        Degrees of freedom, ``> 0``.
    seed : int, numpy Generator or None

    Returns
    -------
    series : ndarray, shape (n,)
    truth : ChangepointTruth

    Examples
    --------
    >>> import possibly as ps
    >>> y, truth = ps.datasets.heavy_tailed(300, n_changes=2, seed=0)
    >>> y.shape, truth.changepoints.size
    ((300,), 2)
    """
    df = _check_positive("df", df)
    n, n_changes, rng, cps = _segmented(n, n_changes, seed)
    level = _level_path(rng, n, cps, 3.0, 6.0)
    return level + rng.standard_t(df, n), ChangepointTruth(cps, _no_outliers(n))


def short_series(n: int = 40, *, seed=None) -> tuple[np.ndarray, ChangepointTruth]:
    """A short series (15 to 60 points) with one level shift of 3 to 5 noise sd in its middle
    half, unit normal noise.

    Parameters
    ----------
    n : int
        Length, in [15, 60].
    seed : int, numpy Generator or None

    Returns
    -------
    series : ndarray, shape (n,)
    truth : ChangepointTruth

    Examples
    --------
    >>> import possibly as ps
    >>> y, truth = ps.datasets.short_series(30, seed=0)
    >>> y.shape, truth.changepoints.size
    ((30,), 1)
    """
    n = check_int("n", n, 15)
    if n > 60:
        raise ValueError(f"n must be in [15, 60], got {n}")
    rng = np.random.default_rng(seed)
    cp = int(rng.integers(n // 4, n - n // 4 + 1))
    y = rng.normal(0.0, 1.0, n)
    y[cp:] += rng.uniform(3.0, 5.0) * _signs(rng, 1)[0]
    return y, ChangepointTruth(np.array([cp], dtype=np.int64), _no_outliers(n))


def count_shifts(n: int = 500, n_changes: int = 3, *, seed=None
                 ) -> tuple[np.ndarray, ChangepointTruth]:
    """Poisson counts whose rate changes (log-uniform in [1, 30], at least a factor 2 per change).

    Parameters
    ----------
    n : int
        Length, ``>= 30 * (n_changes + 1)``.
    n_changes : int
        Number of change points, ``>= 0``.
    seed : int, numpy Generator or None

    Returns
    -------
    series : ndarray of float64, shape (n,)
        Non-negative integer counts.
    truth : ChangepointTruth

    Examples
    --------
    >>> import possibly as ps
    >>> y, truth = ps.datasets.count_shifts(300, n_changes=2, seed=0)
    >>> bool(np.all(y == np.round(y)) and y.min() >= 0), truth.changepoints.size
    (True, 2)
    """
    n, n_changes, rng, cps = _segmented(n, n_changes, seed)
    log_rates = [rng.uniform(0.0, np.log(30.0))]
    while len(log_rates) < n_changes + 1:
        cand = rng.uniform(0.0, np.log(30.0))
        if abs(cand - log_rates[-1]) >= np.log(2.0):
            log_rates.append(cand)
    rate = np.exp(np.asarray(log_rates))[_segment_ids(n, cps)]
    return rng.poisson(rate).astype(np.float64), ChangepointTruth(cps, _no_outliers(n))


def multivariate_shifts(n: int = 400, n_changes: int = 3, *, dim: int = 3, seed=None
                        ) -> tuple[np.ndarray, ChangepointTruth]:
    """A ``dim``-variate series with unit normal noise whose mean vector jumps at each change
    point (a random direction, norm 3 to 6) and whose correlation is redrawn.

    Parameters
    ----------
    n : int
        Length, ``>= 30 * (n_changes + 1)``.
    n_changes : int
        Number of change points, ``>= 0``.
    dim : int
        Dimension of each observation, in [2, 50].
    seed : int, numpy Generator or None

    Returns
    -------
    series : ndarray, shape (n, dim)
    truth : ChangepointTruth

    Examples
    --------
    >>> import possibly as ps
    >>> y, truth = ps.datasets.multivariate_shifts(200, n_changes=1, dim=2, seed=0)
    >>> y.shape, truth.changepoints.size
    ((200, 2), 1)
    """
    dim = check_int("dim", dim, 2)
    if dim > 50:
        raise ValueError(f"dim must be in [2, 50], got {dim}")
    n, n_changes, rng, cps = _segmented(n, n_changes, seed)
    ids = _segment_ids(n, cps)
    y = np.empty((n, dim))
    mean = np.zeros(dim)
    for k in range(n_changes + 1):
        if k > 0:
            direction = rng.normal(size=dim)
            mean = mean + direction / np.linalg.norm(direction) * rng.uniform(3.0, 6.0)
        a = rng.normal(size=(dim, dim))
        # unit variances with a redrawn correlation: normalise a random covariance
        cov = a @ a.T + dim * np.eye(dim)
        d = np.sqrt(np.diag(cov))
        corr = cov / np.outer(d, d)
        rows = ids == k
        y[rows] = rng.multivariate_normal(mean, corr, int(rows.sum()))
    return y, ChangepointTruth(cps, _no_outliers(n))


#: the synthetic suite: scenario name -> generator called as ``generator(seed=seed)``
SYNTHETIC_SUITE = {
    "level_shifts_outliers": level_shifts,
    "variance_changes": variance_changes,
    "trend_jumps": trend_jumps,
    "growth_curve": growth_curve,
    "seasonal": seasonal,
    "ar1_shifts": ar1_shifts,
    "heavy_tailed": heavy_tailed,
    "short_series": short_series,
    "count_shifts": count_shifts,
    "multivariate_shifts": multivariate_shifts,
}


# ----------------------------------------------------------------------------------------------
# synthetic streaming-anomaly suite: seeded generators returning (series, windows)
#
# Each generator returns ``(series, windows)``: ``series`` is a :class:`TimedSeries` (the values
# on a regular time grid, pandas-free) and ``windows`` an int64 array of shape ``(k, 2)`` whose
# rows are the half-open index ranges ``[start, end)`` of the labelled anomalies (``(0, 2)``:
# no anomaly). Windows start where the anomaly starts (a causal detector cannot see it sooner)
# and never fall in the first quarter of the series (the warm-up a streaming detector needs).
# Units differ between seeds (a scale drawn over three decades), as they do between metrics.

#: where the time axis of every streaming series starts (plus 0 to 6 days, drawn per seed)
STREAM_EPOCH = np.datetime64("2024-01-01T00:00", "m")
_MINUTE = np.timedelta64(1, "m")
_HOUR = np.timedelta64(60, "m")


@dataclass(frozen=True, eq=False)
class TimedSeries:
    """Values on a regular time grid, without pandas.

    ``np.asarray(series)`` and ``series.values`` are the values; :attr:`index` is the time of
    each value (``datetime64[m]``); :meth:`to_pandas` makes a pandas Series (needs pandas).

    Attributes
    ----------
    values : ndarray of float64, shape (n,)
    start : numpy.datetime64
        Time of the first value.
    step : numpy.timedelta64
        Time between two values (a minute, five minutes or an hour in the streaming suite).

    Examples
    --------
    >>> import numpy as np
    >>> s = TimedSeries(np.array([1.0, 2.0, 3.0]), np.datetime64("2024-01-01T00:00"),
    ...                 np.timedelta64(1, "h"))
    >>> len(s), s.index[-1], float(np.asarray(s).sum())
    (3, np.datetime64('2024-01-01T02:00'), 6.0)
    >>> s.steps_per(np.timedelta64(1, "D"))
    24
    """

    values: np.ndarray
    start: np.datetime64
    step: np.timedelta64

    def __len__(self) -> int:
        return len(self.values)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        values = self.values if dtype is None else self.values.astype(dtype)
        return values.copy() if copy else values

    @property
    def index(self) -> np.ndarray:
        """The time stamps, ``start + step * arange(n)``."""
        return self.start + self.step * np.arange(len(self.values))

    def steps_per(self, span: np.timedelta64) -> int:
        """How many steps make ``span`` (a day: 24 for hourly data, 1440 for minute data)."""
        return int(span // self.step)

    def to_pandas(self, name: str | None = None):
        """A pandas Series with a ``DatetimeIndex`` of fixed frequency (pandas is needed)."""
        import pandas as pd

        index = pd.date_range(pd.Timestamp(self.start), periods=len(self.values),
                              freq=pd.Timedelta(self.step))
        return pd.Series(self.values, index=index, name=name)


def _stream_start(rng: np.random.Generator) -> np.datetime64:
    """The epoch shifted by 0 to 6 days, so that the weekday of the first value varies."""
    return STREAM_EPOCH + np.timedelta64(int(rng.integers(0, 7)) * 1440, "m")


def _units(rng: np.random.Generator) -> float:
    """A unit of measurement drawn log-uniformly over three decades."""
    return float(10.0 ** rng.uniform(-1.0, 2.0))


def _anomaly_windows(rng: np.random.Generator, n: int, count: int, low: int, high: int
                     ) -> np.ndarray:
    """``count`` windows of length in ``[low, high]`` in the last three quarters of ``[0, n)``,
    one per equal slot of that range (so they never overlap and are at least ``high`` apart
    within a slot's slack)."""
    first = n // 4
    slot = (n - first) // count
    if slot < 2 * high + 2:  # the generators' lower bounds on n rule this out
        raise ValueError(f"n = {n} is too short for {count} anomaly windows of up to {high} "
                         "steps")
    rows = []
    for k in range(count):
        length = int(rng.integers(low, high + 1))
        # a window never starts in the first or last `high` steps of its slot: the detector
        # has settled after the previous anomaly, and the series goes on after this one
        a = first + k * slot + int(rng.integers(high // 2, slot - high - length // 2))
        rows.append((a, a + length))
    return np.asarray(rows, dtype=np.int64).reshape(-1, 2)


def _no_windows() -> np.ndarray:
    return np.zeros((0, 2), dtype=np.int64)


def _daily_profile(hour: np.ndarray) -> np.ndarray:
    """A working-day load profile in [0, 1]: low at night, up in the morning, peak mid-afternoon."""
    return 0.5 * (1.0 - np.cos(2.0 * np.pi * (hour - 3.0) / 24.0)) ** 1.5 / 2.0 ** 0.5


def _clock(series_start: np.datetime64, step: np.timedelta64, n: int
           ) -> tuple[np.ndarray, np.ndarray]:
    """Hour of the day (fractional) and day of the week (0 = Monday) of each step."""
    stamps = series_start + step * np.arange(n)
    minutes = (stamps - stamps.astype("datetime64[D]")).astype("timedelta64[m]").astype(float)
    # 1970-01-01 was a Thursday (day 3 with Monday = 0)
    weekday = (stamps.astype("datetime64[D]").astype(np.int64) + 3) % 7
    return minutes / 60.0, weekday


def _cycle(rng: np.random.Generator, start: np.datetime64, step: np.timedelta64, n: int,
           amplitude: float) -> np.ndarray:
    """A daily cycle of ``amplitude`` (in noise sd), damped by 40% on weekends."""
    hour, weekday = _clock(start, step, n)
    weekly = np.where(weekday >= 5, 0.6, 1.0)
    return amplitude * _daily_profile(hour) * weekly


def _new_stream(n, low: int, seed) -> tuple[int, np.random.Generator, np.datetime64]:
    """Checked ``n`` (``>= low``), the generator, and the time of the first value."""
    n = _check_length("n", n, low)
    rng = np.random.default_rng(seed)
    return n, rng, _stream_start(rng)


def cycle_idle(n: int = 2016, *, seed=None) -> tuple[TimedSeries, np.ndarray]:
    """Hourly data with a daily cycle (8 noise sd from night to afternoon, 40% lower on
    weekends) and unit normal noise, in random units: no anomaly.

    Parameters
    ----------
    n : int
        Length in hours, ``>= 168`` (one week); the default is 12 weeks.
    seed : int, numpy Generator or None

    Returns
    -------
    series : TimedSeries
        Hourly values.
    windows : ndarray of int64, shape (0, 2)
        No anomaly window.

    Examples
    --------
    >>> import possibly as ps
    >>> series, windows = ps.datasets.cycle_idle(seed=0)
    >>> len(series), series.steps_per(np.timedelta64(1, "D")), windows.shape
    (2016, 24, (0, 2))
    """
    n, rng, start = _new_stream(n, 168, seed)
    unit = _units(rng)
    base = 20.0 + _cycle(rng, start, _HOUR, n, 8.0)
    return TimedSeries(unit * (base + rng.normal(0.0, 1.0, n)), start, _HOUR), _no_windows()


def cycle_level_shift(n: int = 2688, *, seed=None) -> tuple[TimedSeries, np.ndarray]:
    """Hourly data with the daily and weekly cycle of :func:`cycle_idle` and two persistent
    level shifts of 3 to 6 noise sd (up or down); each window is the first day after a shift.

    Parameters
    ----------
    n : int
        Length in hours, ``>= 576``; the default is 16 weeks.
    seed : int, numpy Generator or None

    Returns
    -------
    series : TimedSeries
        Hourly values.
    windows : ndarray of int64, shape (2, 2)
        ``[shift, shift + 24)`` for each shift.

    Examples
    --------
    >>> import possibly as ps
    >>> series, windows = ps.datasets.cycle_level_shift(seed=0)
    >>> len(series), (windows[:, 1] - windows[:, 0]).tolist()
    (2688, [24, 24])
    """
    n, rng, start = _new_stream(n, 576, seed)
    unit = _units(rng)
    windows = _anomaly_windows(rng, n, 2, 24, 24)
    level = np.full(n, 20.0)
    for a in windows[:, 0]:
        level[a:] += rng.uniform(3.0, 6.0) * _signs(rng, 1)[0]
    y = level + _cycle(rng, start, _HOUR, n, 8.0) + rng.normal(0.0, 1.0, n)
    return TimedSeries(unit * y, start, _HOUR), windows


def cycle_flat_middle(n: int = 10080, *, seed=None) -> tuple[TimedSeries, np.ndarray]:
    """Minute data with a daily cycle (8 noise sd) and unit normal noise; twice, the reading
    freezes for 1 to 3 hours (the same value repeated while the cycle goes on underneath).

    Parameters
    ----------
    n : int
        Length in minutes, ``>= 2880``; the default is one week.
    seed : int, numpy Generator or None

    Returns
    -------
    series : TimedSeries
        Minute values.
    windows : ndarray of int64, shape (2, 2)
        The frozen stretches.

    Examples
    --------
    >>> import possibly as ps
    >>> series, windows = ps.datasets.cycle_flat_middle(seed=0)
    >>> a, b = windows[0]
    >>> len(series), bool(np.all(series.values[a:b] == series.values[a]))
    (10080, True)
    """
    n, rng, start = _new_stream(n, 2880, seed)
    unit = _units(rng)
    windows = _anomaly_windows(rng, n, 2, 60, 180)
    y = 20.0 + _cycle(rng, start, _MINUTE, n, 8.0) + rng.normal(0.0, 1.0, n)
    for a, b in windows:
        y[a:b] = y[a - 1]
    return TimedSeries(unit * y, start, _MINUTE), windows


def cycle_missing_peak(n: int = 2688, *, seed=None) -> tuple[TimedSeries, np.ndarray]:
    """Hourly demand-like data: a daily cycle with a sharp evening peak (17:00 to 21:00, 10
    noise sd) on top of the cycle of :func:`cycle_idle`; on two days the evening peak is missing.

    Parameters
    ----------
    n : int
        Length in hours, ``>= 576``; the default is 16 weeks.
    seed : int, numpy Generator or None

    Returns
    -------
    series : TimedSeries
        Hourly values.
    windows : ndarray of int64, shape (2, 2)
        The hours of each missing peak (17:00 to 21:00 of that day).

    Examples
    --------
    >>> import possibly as ps
    >>> series, windows = ps.datasets.cycle_missing_peak(seed=0)
    >>> hours = series.index[windows[:, 0]].astype("datetime64[h]").astype(int) % 24
    >>> hours.tolist(), (windows[:, 1] - windows[:, 0]).tolist()
    ([17, 17], [4, 4])
    """
    n, rng, start = _new_stream(n, 576, seed)
    unit = _units(rng)
    hour, _ = _clock(start, _HOUR, n)
    peak = 10.0 * np.exp(-0.5 * ((hour - 19.0) / 1.0) ** 2)
    # a window is the peak hours (17:00 to 21:00) of the day holding a drawn window's start
    drawn = _anomaly_windows(rng, n, 2, 24, 24)
    first_hour = int(hour[0])
    days = (drawn[:, 0] + first_hour) // 24
    windows = np.stack([days * 24 - first_hour + 17, days * 24 - first_hour + 21], axis=1)
    y = 20.0 + _cycle(rng, start, _HOUR, n, 8.0) + peak + rng.normal(0.0, 1.0, n)
    for a, b in windows:
        y[a:b] -= peak[a:b]
    return TimedSeries(unit * y, start, _HOUR), windows.astype(np.int64)


def cpu_bursts(n: int = 7200, *, seed=None) -> tuple[TimedSeries, np.ndarray]:
    """Minute CPU utilisation in whole percent: a plateau at a few percent where most values
    are identical (a MAD of 0), short job spikes (an hourly job and rare random ones, 1 to 3
    minutes) that are normal, and two sustained bursts of 20 to 90 minutes at 60 to 95%.

    Parameters
    ----------
    n : int
        Length in minutes, ``>= 1440``; the default is five days.
    seed : int, numpy Generator or None

    Returns
    -------
    series : TimedSeries
        Minute values, integers in [0, 100].
    windows : ndarray of int64, shape (2, 2)
        The sustained bursts.

    Examples
    --------
    >>> import possibly as ps
    >>> series, windows = ps.datasets.cpu_bursts(seed=0)
    >>> y = series.values
    >>> bool(np.all(y == np.round(y))), float(np.median(np.abs(y - np.median(y))))
    (True, 0.0)
    """
    n, rng, start = _new_stream(n, 1440, seed)
    windows = _anomaly_windows(rng, n, 2, 20, 90)
    idle = float(rng.integers(1, 6))
    # mostly the idle value; one step up or down now and then (quantisation of small noise)
    y = idle + rng.choice([-1.0, 0.0, 1.0], n, p=[0.1, 0.8, 0.1])
    job_minute = int(rng.integers(0, 60))
    jobs = np.flatnonzero((np.arange(n) % 60 == job_minute) | (rng.random(n) < 0.002))
    for t in jobs:
        span = int(rng.integers(1, 4))
        y[t:t + span] = rng.uniform(20.0, 70.0, min(span, n - t))
    for a, b in windows:
        y[a:b] = rng.uniform(60.0, 95.0) + rng.normal(0.0, 3.0, b - a)
    return TimedSeries(np.clip(np.round(y), 0.0, 100.0), start, _MINUTE), windows


def count_surge(n: int = 2688, *, seed=None) -> tuple[TimedSeries, np.ndarray]:
    """Hourly Poisson counts with a daily cycle (rate 0.5 at night to 6 to 12 in the
    afternoon, 40% lower on weekends); twice, the rate is 3 to 5 times higher for 6 to 24 hours.

    Parameters
    ----------
    n : int
        Length in hours, ``>= 576``; the default is 16 weeks.
    seed : int, numpy Generator or None

    Returns
    -------
    series : TimedSeries
        Hourly non-negative integer counts (float64).
    windows : ndarray of int64, shape (2, 2)
        The surges.

    Examples
    --------
    >>> import possibly as ps
    >>> series, windows = ps.datasets.count_surge(seed=0)
    >>> y = series.values
    >>> bool(np.all(y == np.round(y)) and y.min() >= 0), windows.shape
    (True, (2, 2))
    """
    n, rng, start = _new_stream(n, 576, seed)
    windows = _anomaly_windows(rng, n, 2, 6, 24)
    rate = 0.5 + _cycle(rng, start, _HOUR, n, rng.uniform(6.0, 12.0))
    for a, b in windows:
        rate[a:b] *= rng.uniform(3.0, 5.0)
    return TimedSeries(rng.poisson(rate).astype(np.float64), start, _HOUR), windows


def latency_heavy_tail(n: int = 7200, *, seed=None) -> tuple[TimedSeries, np.ndarray]:
    """Minute request latency: strictly positive, log-normal (log sd 0.3) with a Pareto tail
    (2% of values multiplied by a Pareto(1.5) factor); twice, for 30 to 120 minutes, the
    typical latency is 1.8 to 3 times higher.

    Parameters
    ----------
    n : int
        Length in minutes, ``>= 1440``; the default is five days.
    seed : int, numpy Generator or None

    Returns
    -------
    series : TimedSeries
        Minute values, all ``> 0``.
    windows : ndarray of int64, shape (2, 2)
        The slow stretches.

    Examples
    --------
    >>> import possibly as ps
    >>> series, windows = ps.datasets.latency_heavy_tail(seed=0)
    >>> bool(series.values.min() > 0), bool(series.values.max() > 10 * np.median(series.values))
    (True, True)
    """
    n, rng, start = _new_stream(n, 1440, seed)
    unit = _units(rng)
    windows = _anomaly_windows(rng, n, 2, 30, 120)
    log_y = rng.normal(0.0, 0.3, n)
    tail = rng.random(n) < 0.02
    log_y[tail] += np.log1p(rng.pareto(1.5, int(tail.sum())) * 3.0)
    for a, b in windows:
        log_y[a:b] += np.log(rng.uniform(1.8, 3.0))
    return TimedSeries(unit * np.exp(log_y), start, _MINUTE), windows


def variance_burst(n: int = 4032, *, seed=None) -> tuple[TimedSeries, np.ndarray]:
    """Five-minute data with a mild daily cycle (3 noise sd) and unit normal noise; twice,
    for 2 to 6 hours, the noise sd is 3 to 5 times larger (the mean is unchanged).

    Parameters
    ----------
    n : int
        Length in five-minute steps, ``>= 864``; the default is two weeks.
    seed : int, numpy Generator or None

    Returns
    -------
    series : TimedSeries
        Five-minute values.
    windows : ndarray of int64, shape (2, 2)
        The noisy stretches.

    Examples
    --------
    >>> import possibly as ps
    >>> series, windows = ps.datasets.variance_burst(seed=0)
    >>> str(series.step), ((windows[:, 1] - windows[:, 0]) >= 24).all()
    ('5 minutes', np.True_)
    """
    n, rng, start = _new_stream(n, 864, seed)
    unit = _units(rng)
    step = 5 * _MINUTE
    windows = _anomaly_windows(rng, n, 2, 24, 72)
    sd = np.ones(n)
    for a, b in windows:
        sd[a:b] = rng.uniform(3.0, 5.0)
    y = 20.0 + _cycle(rng, start, step, n, 3.0) + rng.normal(0.0, 1.0, n) * sd
    return TimedSeries(unit * y, start, step), windows


def cycle_drift(n: int = 2688, *, seed=None) -> tuple[TimedSeries, np.ndarray]:
    """Hourly data with the cycle of :func:`cycle_idle`; from a random hour on, the level
    drifts linearly (up or down) by 4 to 8 noise sd per two days and keeps drifting.

    Parameters
    ----------
    n : int
        Length in hours, ``>= 576``; the default is 16 weeks.
    seed : int, numpy Generator or None

    Returns
    -------
    series : TimedSeries
        Hourly values.
    windows : ndarray of int64, shape (1, 2)
        The first two days of the drift.

    Examples
    --------
    >>> import possibly as ps
    >>> series, windows = ps.datasets.cycle_drift(seed=0)
    >>> windows.shape, int(windows[0, 1] - windows[0, 0])
    ((1, 2), 48)
    """
    n, rng, start = _new_stream(n, 576, seed)
    unit = _units(rng)
    # the drift starts in the second half and is labelled for its first two days
    windows = _anomaly_windows(rng, n, 1, 48, 48)
    a = int(windows[0, 0])
    slope = rng.uniform(4.0, 8.0) / 48.0 * _signs(rng, 1)[0]
    drift = np.where(np.arange(n) >= a, (np.arange(n) - a) * slope, 0.0)
    y = 20.0 + _cycle(rng, start, _HOUR, n, 8.0) + drift + rng.normal(0.0, 1.0, n)
    return TimedSeries(unit * y, start, _HOUR), windows


def spike_density(n: int = 7200, *, seed=None) -> tuple[TimedSeries, np.ndarray]:
    """Minute data with unit normal noise and rare normal spikes (0.2% of values, 5 to 15
    sd); twice, for 1 to 3 hours, spikes are 20 to 40 times as frequent.

    Parameters
    ----------
    n : int
        Length in minutes, ``>= 1440``; the default is five days.
    seed : int, numpy Generator or None

    Returns
    -------
    series : TimedSeries
        Minute values.
    windows : ndarray of int64, shape (2, 2)
        The dense stretches.

    Examples
    --------
    >>> import possibly as ps
    >>> series, windows = ps.datasets.spike_density(seed=0)
    >>> len(series), windows.shape
    (7200, (2, 2))
    """
    n, rng, start = _new_stream(n, 1440, seed)
    unit = _units(rng)
    windows = _anomaly_windows(rng, n, 2, 60, 180)
    rate = np.full(n, 0.002)
    for a, b in windows:
        rate[a:b] *= rng.uniform(20.0, 40.0)
    spikes = rng.random(n) < rate
    y = 20.0 + rng.normal(0.0, 1.0, n)
    y[spikes] += rng.uniform(5.0, 15.0, int(spikes.sum())) * _signs(rng, int(spikes.sum()))
    return TimedSeries(unit * y, start, _MINUTE), windows


def idle_stream(n: int = 4320, *, seed=None) -> tuple[TimedSeries, np.ndarray]:
    """Minute disk writes of an idle machine: 0 in about 90% of the minutes, otherwise a small
    log-normal amount; no anomaly.

    Parameters
    ----------
    n : int
        Length in minutes, ``>= 60``; the default is three days.
    seed : int, numpy Generator or None

    Returns
    -------
    series : TimedSeries
        Minute values, ``>= 0``.
    windows : ndarray of int64, shape (0, 2)
        No anomaly window.

    Examples
    --------
    >>> import possibly as ps
    >>> series, windows = ps.datasets.idle_stream(seed=0)
    >>> 0.8 < float(np.mean(series.values == 0)) < 1.0, windows.shape
    (True, (0, 2))
    """
    n, rng, start = _new_stream(n, 60, seed)
    unit = _units(rng)
    busy = rng.random(n) < 0.1
    y = np.where(busy, np.exp(rng.normal(0.0, 1.0, n)), 0.0)
    return TimedSeries(unit * y, start, _MINUTE), _no_windows()


#: the synthetic streaming-anomaly suite: scenario name -> generator called as
#: ``generator(seed=seed)``, returning ``(series, windows)``
STREAMING_SUITE = {
    "cycle_idle": cycle_idle,
    "cycle_level_shift": cycle_level_shift,
    "cycle_flat_middle": cycle_flat_middle,
    "cycle_missing_peak": cycle_missing_peak,
    "cycle_drift": cycle_drift,
    "cpu_bursts": cpu_bursts,
    "count_surge": count_surge,
    "latency_heavy_tail": latency_heavy_tail,
    "variance_burst": variance_burst,
    "spike_density": spike_density,
    "idle_stream": idle_stream,
}
