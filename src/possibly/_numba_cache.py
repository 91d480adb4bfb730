"""Where numba caches the package's compiled kernels (change points, Kalman filters).

Imported first by :mod:`possibly`: numba reads ``NUMBA_CACHE_DIR`` when it is first imported,
and site-packages may be read-only, so the default is the user's cache directory. A value set
by the user wins.
"""

from __future__ import annotations

import os
import sys


def default_numba_cache_dir() -> str:
    """The user cache directory for compiled kernels.

    Examples
    --------
    >>> default_numba_cache_dir().endswith(os.path.join("possibly", "numba"))
    True
    """
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.expanduser("~")
    elif sys.platform == "darwin":
        base = os.path.expanduser("~/Library/Caches")
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return os.path.join(base, "possibly", "numba")


if "numba" not in sys.modules:
    os.environ.setdefault("NUMBA_CACHE_DIR", default_numba_cache_dir())
