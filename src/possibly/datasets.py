"""Data sets, loaded the way ``scipy.datasets`` does, and seeded generators.

Real data are never shipped in the package. :func:`well_log` looks, in order, in the directory
named by the ``POSSIBLY_DATA_DIR`` environment variable, in the user cache
(``$XDG_CACHE_HOME/possibly`` or ``~/.cache/possibly``), and finally downloads a public copy
with ``pooch`` (optional dependency, ``pip install possibly[data]``), checking its SHA-256.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

__all__ = ["WELL_LOG_SHA256", "cache_dir", "well_log"]

WELL_LOG_FILE = "well_log.txt"
WELL_LOG_SHA256 = "cd2a1be7dd895e92e28f00cc522d8c2721b67208ecb6ef942547b797d6dccb7a"
# Public copy of the series of O Ruanaidh & Fitzgerald (1996), as used by Knoblauch et al. (2018).
WELL_LOG_URL = (
    "https://raw.githubusercontent.com/alan-turing-institute/rbocpdms/master/Data/well%20log/"
    "well.txt"
)


def cache_dir() -> Path:
    """The user cache directory for downloaded data."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "possibly"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _locate(filename: str, sha256: str, url: str) -> Path:
    env = os.environ.get("POSSIBLY_DATA_DIR")
    if env:
        path = Path(env) / filename
        if not path.is_file():
            raise FileNotFoundError(f"POSSIBLY_DATA_DIR={env} does not contain {filename}")
        if _sha256(path) != sha256:
            raise ValueError(f"{path} does not have the expected SHA-256 {sha256}")
        return path
    cached = cache_dir() / filename
    if cached.is_file() and _sha256(cached) == sha256:
        return cached
    try:
        import pooch
    except ImportError:
        raise ImportError(
            f"{filename} is not in POSSIBLY_DATA_DIR or the cache {cache_dir()}; downloading it "
            "needs pooch: pip install 'possibly[data]'"
        ) from None
    return Path(pooch.retrieve(url, known_hash=f"sha256:{sha256}", fname=filename,
                               path=cache_dir(), progressbar=False))


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
