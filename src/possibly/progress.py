"""Progress bars for long runs: tqdm when installed and stderr is a terminal, silent otherwise."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")

__all__ = ["progress_bar"]


def progress_bar(iterable: Iterable[T], *, enabled: bool = True, total: int | None = None,
                 desc: str | None = None) -> Iterator[T] | Iterable[T]:
    """Wrap ``iterable`` in a tqdm bar if ``enabled``, tqdm is importable and stderr is a tty.

    Examples
    --------
    >>> list(progress_bar(range(3), enabled=False))
    [0, 1, 2]
    """
    if not enabled or not sys.stderr.isatty():
        return iterable
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return iterable
    return tqdm(iterable, total=total, desc=desc, leave=False)
