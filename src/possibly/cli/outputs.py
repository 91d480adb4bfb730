"""Output files of the sub-commands: checked before any work, written atomically.

Every output path is checked while the arguments are read (not after the computation): it must
not be one of the input files, not a directory, and its folder must exist and be writable.
Files are written to a temporary file in the same folder and renamed over the target, so an
interrupted run never leaves a half-written file (nor destroys the previous one).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from possibly.tables import display

__all__ = ["atomic_path", "check_output", "check_outputs", "check_plot", "save_plot",
           "write_text"]

#: file formats matplotlib writes (the extension picks the format)
PLOT_FORMATS = ("png", "pdf", "svg", "svgz", "eps", "ps", "jpg", "jpeg", "tif", "tiff", "webp")


def _same(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def check_output(path: str, flag: str, inputs: Iterable[str] = ()) -> Path:
    """``path`` as a Path, after checking it can be written and is none of ``inputs``.

    Raises ValueError naming ``flag``. ``-`` among the inputs (standard input) is skipped.
    """
    out = Path(path)
    shown = display(path)
    for src in inputs:
        if src is None or src == "-":
            continue
        if _same(out, Path(src)) or os.path.abspath(out) == os.path.abspath(src):
            raise ValueError(f"{flag} {shown!r} is the input file: refusing to overwrite it "
                             "(choose another output path)")
    if out.is_dir():
        raise ValueError(f"{flag} {shown!r} is a directory: give a file path")
    folder = out.parent if str(out.parent) else Path(".")
    if not folder.is_dir():
        raise ValueError(f"{flag} {shown!r}: folder {display(folder)!r} does not exist")
    if not os.access(folder, os.W_OK):
        raise ValueError(f"{flag} {shown!r}: folder {display(folder)!r} is not writable")
    if out.exists() and not os.access(out, os.W_OK):
        raise ValueError(f"{flag} {shown!r} exists and is not writable")
    return out


def check_plot(path: str, inputs: Iterable[str] = (), flag: str = "--plot") -> Path:
    """The plot's path (``.png`` added when it has no extension), checked like an output.

    Also checks that the extension is a format matplotlib writes and that matplotlib is
    installed, so that a plot that cannot be made fails before the computation.
    """
    out = Path(path)
    if out.is_dir():
        raise ValueError(f"{flag} {display(path)!r} is a directory: give a file path")
    if not out.suffix:
        out = out.with_name(out.name + ".png")
    out = check_output(str(out), flag, inputs)
    fmt = out.suffix[1:].lower()
    if fmt not in PLOT_FORMATS:
        raise ValueError(f"{flag} {display(path)!r}: unknown image format {display(fmt)!r} "
                         f"(use one of {', '.join(PLOT_FORMATS)})")
    from possibly.plotting import pyplot

    pyplot()  # ImportError with the extra to install, before any work
    return out


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temporary path next to ``path`` (same extension), renamed to ``path`` on success."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=path.suffix,
                               dir=path.parent if str(path.parent) else ".")
    os.close(fd)
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(tmp, 0o666 & ~mask)  # the permissions of a file written directly
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def write_text(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8", newline="")


def check_outputs(args) -> tuple[Path | None, Path | None]:
    """``--out`` and ``--plot`` of a command reading ``args.file``, checked (None if absent)."""
    inputs = [args.file]
    out = check_output(args.out, "--out", inputs) if args.out else None
    plot = check_plot(args.plot, inputs) if args.plot else None
    if plot is not None and out is not None and plot.resolve() == out.resolve():
        raise ValueError("--out and --plot name the same file")
    return out, plot


def save_plot(draw, path: Path, *args, index=None, **kwargs) -> None:
    """``draw(*args, path=..., **kwargs)`` written atomically to ``path``.

    ``index`` (the time stamps of the rows), when given, is passed on for a time-stamp x-axis.
    """
    if index is not None:
        kwargs["index"] = index
    with atomic_path(path) as tmp:
        draw(*args, path=tmp, **kwargs)
