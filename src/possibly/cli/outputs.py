"""Output files of the sub-commands: checked before any work, written atomically.

Every output path is checked while the arguments are read (not after the computation): it must
not be one of the input files, not a directory, and its folder must exist and be writable.
A regular file (or a path that does not exist yet) is written to a temporary file in the same
folder and renamed over the target, so an interrupted run never leaves a half-written file (nor
destroys the previous one); the file keeps its permissions. A symbolic link is written through
to its target, never replaced. A FIFO or a character device (``/dev/null``, ``/dev/stdout``,
the ``/dev/fd/N`` of a shell's ``>(cmd)``) is written directly, once the results are complete;
other special files are refused. ``--out -`` is standard output.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from possibly.cli.tables import display

__all__ = ["STDOUT", "atomic_path", "check_output", "check_outputs", "check_plot", "save_plot",
           "write_text"]

#: file formats matplotlib writes (the extension picks the format)
PLOT_FORMATS = ("png", "pdf", "svg", "svgz", "eps", "ps", "jpg", "jpeg", "tif", "tiff", "webp")
#: the output path that means standard output
STDOUT = "-"
#: the paths of a process's open file descriptors (Linux; /dev/stdout links to one of them)
_DESCRIPTOR = re.compile(r"/(dev/fd|proc/(?P<pid>self|thread-self|[0-9]+)/fd)/(?P<fd>[0-9]+)\Z")


def _same(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def _descriptor(path: Path) -> int | None:
    """The number of the open file descriptor that ``path`` or a link it goes through names
    (``/dev/stdout``, ``/dev/fd/N``, ``/proc/self/fd/N``), None for any other path."""
    for _ in range(40):  # the kernel's own limit on links followed
        found = _DESCRIPTOR.match(os.path.abspath(path))
        if found and found["pid"] in ("self", "thread-self", None, str(os.getpid())):
            return int(found["fd"])
        if found:  # another process's descriptor: written like any other path
            return None
        if not path.is_symlink():
            return None
        path = path.parent / os.readlink(path)
    return None


def _is_stream(path: Path) -> bool:
    """True for a FIFO, a character device or an open descriptor: written in place."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or (
        stat.S_ISREG(mode) and _descriptor(path) is not None)


def _regular_target(path: Path) -> Path:
    """The file that a write to ``path`` replaces: ``path`` with its links resolved."""
    return Path(os.path.realpath(path))


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
    if _is_stream(out):  # a FIFO or a device: written directly, never replaced
        if not os.access(out, os.W_OK):
            raise ValueError(f"{flag} {shown!r} is not writable")
        return out
    if _descriptor(out) is not None:
        raise ValueError(f"{flag} {shown!r}: no such open file descriptor")
    if out.exists() and not out.is_file():
        raise ValueError(f"{flag} {shown!r} is not a regular file, a FIFO or a character "
                         "device: refusing to write it")
    target = _regular_target(out)  # a symbolic link is written through to its target
    folder = target.parent
    if not folder.is_dir():
        raise ValueError(f"{flag} {shown!r}: folder {display(folder)!r} does not exist")
    if not os.access(folder, os.W_OK):
        raise ValueError(f"{flag} {shown!r}: folder {display(folder)!r} is not writable")
    if target.exists() and not os.access(target, os.W_OK):
        raise ValueError(f"{flag} {shown!r} exists and is not writable")
    try:  # a folder such as /dev/fd takes no new files, whatever its permissions say
        fd, probe = tempfile.mkstemp(prefix=f".{target.name}.", dir=folder)
    except OSError as exc:
        raise ValueError(f"{flag} {shown!r}: cannot create a file in {display(folder)!r} "
                         f"({exc.strerror or type(exc).__name__})") from None
    os.close(fd)
    os.unlink(probe)
    return out


def check_plot(path: str, inputs: Iterable[str] = (), flag: str = "--plot") -> Path:
    """The plot's path (``.png`` added when it has no extension), checked like an output.

    Also checks that the extension is a format matplotlib writes and that matplotlib is
    installed, so that a plot that cannot be made fails before the computation.
    """
    if path == STDOUT:
        raise ValueError(f"{flag} '-': a plot is not written to standard output; give a file "
                         "name")
    out = Path(path)
    if out.is_dir():
        raise ValueError(f"{flag} {display(path)!r} is a directory: give a file path")
    if not out.suffix and not _is_stream(out):  # a FIFO or a device gets PNG under its name
        out = out.with_name(out.name + ".png")
    out = check_output(str(out), flag, inputs)
    fmt = out.suffix[1:].lower() or "png"
    if fmt not in PLOT_FORMATS:
        raise ValueError(f"{flag} {display(path)!r}: unknown image format {display(fmt)!r} "
                         f"(use one of {', '.join(PLOT_FORMATS)})")
    from possibly.plotting import pyplot

    pyplot()  # ImportError with the extra to install, before any work
    return out


@contextlib.contextmanager
def atomic_path(path: Path, suffix: str | None = None) -> Iterator[Path]:
    """A temporary path to write (extension ``suffix``, by default that of ``path``), which
    then replaces ``path``: renamed over a regular file (which keeps its permissions) or
    over the target of a link, copied into a FIFO or a character device."""
    suffix = path.suffix if suffix is None else suffix
    if _is_stream(path):
        with tempfile.TemporaryDirectory(prefix="possibly-") as folder:
            tmp = Path(folder) / f"output{suffix}"
            yield tmp
            fd = _descriptor(path)
            if fd is not None:  # the descriptor itself, at its offset (reopening truncates)
                for stream in (sys.stdout, sys.stderr):
                    stream.flush()
                dst = os.fdopen(os.dup(fd), "wb")
            else:
                dst = open(path, "wb")
            with open(tmp, "rb") as src, dst:
                shutil.copyfileobj(src, dst)
        return
    target = _regular_target(path)
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix, dir=target.parent)
    os.close(fd)
    try:
        old = os.stat(target)
    except FileNotFoundError:
        mask = os.umask(0)
        os.umask(mask)
        mode = 0o666 & ~mask  # the permissions of a file written directly
    else:  # an existing file keeps its permissions (and its owner, where that is allowed)
        mode = stat.S_IMODE(old.st_mode)
        if (old.st_uid, old.st_gid) != (os.stat(name).st_uid, os.stat(name).st_gid):
            with contextlib.suppress(OSError):
                os.chown(name, old.st_uid, old.st_gid)
    os.chmod(name, mode)
    try:
        yield Path(name)
        os.replace(name, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name)


def write_text(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8", newline="")


def check_outputs(args) -> tuple[Path | None, Path | None]:
    """``--out`` and ``--plot`` of a command reading ``args.file``, checked (None if absent;
    ``--out -``, standard output, is None too)."""
    inputs = [args.file]
    out = check_output(args.out, "--out", inputs) if args.out and args.out != STDOUT else None
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
    with atomic_path(path, suffix=path.suffix or ".png") as tmp:
        draw(*args, path=tmp, **kwargs)
