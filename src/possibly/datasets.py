"""Data sets, loaded the way ``scipy.datasets`` does, and seeded generators.

The well-log series is shipped in the package (``possibly/data``, with its source and licence
in the README there), so that it works offline. A data set is looked for, in order, in the
package, in the directory named by the ``POSSIBLY_DATA_DIR`` environment variable, in the user
cache (``$XDG_CACHE_HOME/possibly`` or ``~/.cache/possibly``), and finally downloaded into the
cache; every copy is checked against its SHA-256 before use. Offline and with no copy, the
loader fails with one line that says what to do.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import urllib.request
from pathlib import Path
from typing import NamedTuple

import numpy as np

from possibly.validation import check_int

__all__ = [
    "DataUnavailableError",
    "SYNTHETIC_SUITE",
    "WELL_LOG_SHA256",
    "ChangepointTruth",
    "ar1_shifts",
    "cache_dir",
    "count_shifts",
    "growth_curve",
    "heavy_tailed",
    "level_shifts",
    "multivariate_shifts",
    "piecewise_constant",
    "seasonal",
    "short_series",
    "trend_jumps",
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
