"""Progress bars for long runs: tqdm when installed and stderr is a terminal, silent otherwise."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")

__all__ = ["progress_bar", "progress_counter"]


def _tqdm(enabled: bool):
    """tqdm's class if a bar is to be shown (``enabled``, stderr a terminal, tqdm installed)."""
    if not enabled or not sys.stderr.isatty():
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm


def progress_bar(iterable: Iterable[T], *, enabled: bool = True, total: int | None = None,
                 desc: str | None = None) -> Iterator[T] | Iterable[T]:
    """Wrap ``iterable`` in a tqdm bar if ``enabled``, tqdm is importable and stderr is a tty.

    Examples
    --------
    >>> list(progress_bar(range(3), enabled=False))
    [0, 1, 2]
    """
    tqdm = _tqdm(enabled)
    if tqdm is None:
        return iterable
    return tqdm(iterable, total=total, desc=desc, leave=False)


@contextlib.contextmanager
def progress_counter(total: int, *, enabled: bool = True, desc: str | None = None,
                     unit: str = "it") -> Iterator[Callable[[int], object] | None]:
    """A bar of ``total`` steps for work that is not one loop: yields the function advancing
    it by ``n`` steps, or None when no bar is shown (as for :func:`progress_bar`).

    Examples
    --------
    >>> with progress_counter(3, enabled=False) as advance:
    ...     advance is None
    True
    """
    tqdm = _tqdm(enabled)
    if tqdm is None:
        yield None
        return
    bar = tqdm(total=total, desc=desc, unit=unit, leave=False)
    try:
        yield bar.update
    finally:
        bar.close()
