"""Helpers shared by the modules of the package (not part of the public API)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any


def replace_file(path: str | os.PathLike, write: Callable[[str], Any]) -> None:
    """``write(name)`` a temporary file next to ``path``, then rename it to ``path``: a reader
    sees the old file or the new one, never a truncated one; a link or file at ``path`` is
    replaced (never written through), and a failed write leaves no file."""
    folder, name = os.path.split(os.fspath(path))
    while True:  # a fresh name, created here (O_EXCL: never through a link), umask applied
        tmp = os.path.join(folder, f".{name}.{os.urandom(6).hex()}.tmp")
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            break
        except FileExistsError:
            continue
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through :func:`replace_file`."""
    replace_file(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))
