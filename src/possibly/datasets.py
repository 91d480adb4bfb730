"""Data sets, loaded the way ``scipy.datasets`` does, and seeded generators.

Real data are never shipped in the package. :func:`well_log` looks, in order, in the directory
named by the ``POSSIBLY_DATA_DIR`` environment variable, in the user cache
(``$XDG_CACHE_HOME/possibly`` or ``~/.cache/possibly``), and finally downloads a public copy
into the cache, checking its SHA-256. Offline and with neither copy, it fails with one line
that says what to do.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import urllib.request
from pathlib import Path

import numpy as np

__all__ = ["WELL_LOG_SHA256", "DataUnavailableError", "cache_dir", "piecewise_constant",
           "well_log"]

WELL_LOG_FILE = "well_log.txt"
WELL_LOG_SHA256 = "cd2a1be7dd895e92e28f00cc522d8c2721b67208ecb6ef942547b797d6dccb7a"
# Public copy of the series of O Ruanaidh & Fitzgerald (1996), as used by Knoblauch et al. (2018).
WELL_LOG_URL = (
    "https://raw.githubusercontent.com/alan-turing-institute/rbocpdms/master/Data/well%20log/"
    "well.txt"
)
DOWNLOAD_TIMEOUT = 30.0  # seconds


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
    """``POSSIBLY_DATA_DIR``, then the cache, then a checksummed download into the cache."""
    looked = []
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
    n = _check_int("n", n, 1)
    n_changes = _check_int("n_changes", n_changes, 0)
    min_segment = _check_int("min_segment", min_segment, 1)
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
    # stars and bars: segment lengths >= min_segment summing to n
    slack = n - min_segment * (n_changes + 1)
    cuts = np.sort(rng.integers(0, slack + 1, n_changes))
    cps = (np.arange(1, n_changes + 1) * min_segment + cuts).astype(np.int64)
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


def _check_int(name: str, value, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)
