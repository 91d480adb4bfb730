"""Where numba caches this package's compiled kernels, without touching the process environment.

numba finds a kernel's cache folder through a list of locator classes. Ours goes first and
answers for this package's files only: the user cache directory (``~/.cache/possibly/numba``),
else a folder of this user's own (mode 0700, checked) in the temporary directory when that is
not writable (a container run with ``--user`` and no home). Every other library's kernels, and
ours when the user sets ``NUMBA_CACHE_DIR`` or ``NUMBA_CACHE_LOCATOR_CLASSES``, are left to
numba's own rules. If numba's internals change, registration does nothing and numba's defaults
apply.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from typing import Any

__all__ = ["default_numba_cache_dir", "has_cached_code", "register_cache_locator"]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_registered = False


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


def _temporary_cache_dir() -> str:
    user = getattr(os, "getuid", lambda: "user")()
    return os.path.join(tempfile.gettempdir(), f"possibly-numba-{user}")


def _private_folder(path: str) -> bool:
    """Whether ``path`` is (or is now created as) a folder only this user can write.

    numba loads its cache files with pickle, so a shared temporary directory must not hold a
    folder that another user made or can write to: that would let them run code as this user.
    """
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return False
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISDIR(st.st_mode) or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return False
    getuid = getattr(os, "getuid", None)
    return getuid is None or st.st_uid == getuid()


def _is_ours(py_file: str) -> bool:
    try:
        path = os.path.abspath(py_file)
        return os.path.commonpath([path, _PACKAGE_DIR]) == _PACKAGE_DIR
    except ValueError:  # another drive on Windows
        return False


def _locator_classes() -> list[Any]:
    from numba.core import caching as numba_caching
    from numba.core import config

    caching: Any = numba_caching
    base: Any = caching._SourceFileBackedLocatorMixin

    class PackageCacheLocator(base, caching._CacheLocator):
        """This package's kernels, cached in the user cache directory."""

        def __init__(self, py_func: Any, py_file: str) -> None:
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            self._cache_path = os.path.join(self.root(),
                                            self.get_suitable_cache_subpath(py_file))

        @staticmethod
        def root() -> str:
            return default_numba_cache_dir()

        def get_cache_path(self) -> str:
            return self._cache_path

        @classmethod
        def from_function(cls, py_func: Any, py_file: str) -> Any:
            if getattr(config, "CACHE_DIR", "") or not _is_ours(py_file):
                return None
            # the mixin checks that the file exists and the folder is writable, else None
            return super().from_function(py_func, py_file)

    class TemporaryCacheLocator(PackageCacheLocator):
        """This package's kernels, when the user cache directory is not writable: a folder of
        this user's own in the temporary directory, or numba's rules if it cannot be had."""

        @staticmethod
        def root() -> str:
            return _temporary_cache_dir()

        @classmethod
        def from_function(cls, py_func: Any, py_file: str) -> Any:
            if not _private_folder(cls.root()):
                return None
            return super().from_function(py_func, py_file)

    return [PackageCacheLocator, TemporaryCacheLocator]


def register_cache_locator() -> bool:
    """Put this package's kernels in its own cache folder; numba's rules for everything else.

    Called by each module that compiles kernels, before its first ``numba.njit(cache=True)``.
    Idempotent; changes no environment variable and never raises.

    Returns
    -------
    bool
        Whether the locator is in place (False when numba's internals are not as expected;
        numba's default cache folders are then used).

    Examples
    --------
    >>> import os
    >>> before = dict(os.environ)
    >>> register_cache_locator() in (True, False)
    True
    >>> dict(os.environ) == before
    True
    """
    global _registered
    if _registered:
        return True
    try:
        from numba.core import caching as numba_caching

        caching: Any = numba_caching
        # CacheImpl in numba >= 0.61, _CacheImpl before
        impl: Any = getattr(caching, "CacheImpl", None) or caching._CacheImpl
        mine = _locator_classes()
        impl._locator_classes = [*mine, *impl._locator_classes]
    except Exception:  # pragma: no cover - depends on numba's private layout
        return False
    _registered = True
    return True


def has_cached_code(dispatcher: Any) -> bool:
    """Whether ``dispatcher`` (a ``numba.njit(cache=True)`` function) has code at hand: loaded
    in this process, or in its disk cache, current for its source file and compiled for this
    machine's CPU. True when numba's internals are not as expected (the caller then compiles,
    as it would without asking).

    Examples
    --------
    >>> has_cached_code(object())  # not a numba dispatcher: asked of nothing, assumed at hand
    True
    """
    try:
        if dispatcher.overloads:
            return True
        index = dispatcher._cache._cache_file._load_index()  # {} when stale or absent
        magic = dispatcher.targetctx.codegen().magic_tuple()
        return any(key[1] == magic for key in index)
    except Exception:  # pragma: no cover - depends on numba's private layout
        return True
