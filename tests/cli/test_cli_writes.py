"""What the command line writes: only the regular output file the user named.

A FIFO, a device node or a descriptor given as ``--out``/``--plot`` is written in place, never
replaced by a file; a symbolic link is written through; an overwritten file keeps its
permissions; ``--out -`` is standard output. The expected texts are those the same command
prints on standard output (or writes to a fresh regular file).
"""

from __future__ import annotations

import os
import select
import stat
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from possibly.cli import main

COMMANDS = {"changepoint": ["--sigma", "1"], "kalman": []}


def write_input(folder: Path) -> Path:
    rng = np.random.default_rng(0)
    y = np.r_[rng.normal(0, 1, 15), rng.normal(8, 1, 15)]
    path = folder / "in.csv"
    path.write_text("\n".join(repr(float(v)) for v in y) + "\n")
    return path


def expected_text(command: str, path: Path, capsys) -> str:
    """What the command prints on standard output without --out."""
    capsys.readouterr()
    assert main([command, str(path), *COMMANDS[command]]) == 0
    return capsys.readouterr().out


class FifoReader:
    """Reads a FIFO in a thread until the writer is done (or ``stop()`` after the run)."""

    def __init__(self, path: Path):
        self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # opens without a writer
        self.chunks: list[bytes] = []
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        wrote = False
        while True:
            ready, _, _ = select.select([self.fd], [], [], 0.05)
            data = os.read(self.fd, 1 << 16) if ready else b""
            if data:
                self.chunks.append(data)
                wrote = True
            elif wrote or self.done.is_set():  # end of file after a writer, or the run ended
                return
            else:
                time.sleep(0.02)  # no writer yet: the empty read is not an end of file

    def stop(self) -> bytes:
        self.done.set()
        self.thread.join(30)
        os.close(self.fd)
        return b"".join(self.chunks)


@pytest.mark.parametrize("command", list(COMMANDS))
def test_fifo_target_is_written_not_replaced(tmp_path, capsys, command):
    path = write_input(tmp_path)
    expected = expected_text(command, path, capsys)
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    reader = FifoReader(fifo)
    assert main([command, str(path), "--out", str(fifo), *COMMANDS[command]]) == 0
    got = reader.stop()
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # was replaced by a regular file
    assert got.decode() == expected


@pytest.mark.parametrize("command", list(COMMANDS))
def test_plot_into_a_fifo_is_png(tmp_path, capsys, command):
    path = write_input(tmp_path)
    fifo = tmp_path / "plot"  # no extension: PNG, under the FIFO's own name
    os.mkfifo(fifo)
    reader = FifoReader(fifo)
    assert main([command, str(path), "--plot", str(fifo), *COMMANDS[command]]) == 0
    got = reader.stop()
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert got[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv", "plot"]


def test_device_node_is_written_not_replaced(tmp_path, capsys):
    path = write_input(tmp_path)
    null = tmp_path / "null"  # a copy of /dev/null's node: the real one is never risked
    try:
        os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, OSError) as exc:
        pytest.skip(f"cannot make a device node here: {exc}")
    for command in COMMANDS:
        for flag in ("--out", "--plot"):
            assert main([command, str(path), flag, str(null), *COMMANDS[command]]) == 0
            assert stat.S_ISCHR(os.lstat(null).st_mode), (command, flag)
            assert os.lstat(null).st_rdev == os.makedev(1, 3)


def test_pipe_descriptor_gets_the_output_at_its_offset(tmp_path, capsys):
    # what bash's `--out >(cmd)` passes: /dev/fd/N, a pipe
    path = write_input(tmp_path)
    expected = expected_text("kalman", path, capsys)
    read, write = os.pipe()
    try:
        os.write(write, b"before\n")
        assert main(["kalman", str(path), "--out", f"/dev/fd/{write}"]) == 0
        os.close(write)
        write = -1
        with os.fdopen(read, "rb") as f:
            read = -1
            got = f.read().decode()
    finally:
        for fd in (read, write):
            if fd >= 0:
                os.close(fd)
    assert got == "before\n" + expected


def test_closed_descriptor_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    path = write_input(tmp_path)
    read, write = os.pipe()
    os.close(read)
    os.close(write)  # /dev/fd/<write> names no open file now

    def no_work(*args, **kwargs):
        raise AssertionError("the input was read before the output was checked")

    monkeypatch.setattr("possibly.cli.arguments.read_table", no_work)  # read_input reads
    for command in COMMANDS:
        assert main([command, str(path), "--out", f"/dev/fd/{write}", *COMMANDS[command]]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"--out '/dev/fd/{write}'" in err, err


def test_overwrite_keeps_the_permissions(tmp_path, capsys):
    path = write_input(tmp_path)
    for command in COMMANDS:
        out = tmp_path / f"{command}.out"
        out.write_text("old")
        out.chmod(0o600)
        owner = os.geteuid() == 0  # root replaces another user's file: it stays theirs
        if owner:
            os.chown(out, 12345, 12346)
        assert main([command, str(path), "--out", str(out), *COMMANDS[command]]) == 0
        assert stat.S_IMODE(out.stat().st_mode) == 0o600
        if owner:
            assert (out.stat().st_uid, out.stat().st_gid) == (12345, 12346)
        assert out.read_text() == expected_text(command, path, capsys)
        png = tmp_path / f"{command}.png"
        png.write_bytes(b"old")
        png.chmod(0o640)
        assert main([command, str(path), "--plot", str(png), *COMMANDS[command]]) == 0
        assert stat.S_IMODE(png.stat().st_mode) == 0o640
        assert png.read_bytes()[:4] == b"\x89PNG"


def test_symlink_is_written_through(tmp_path, capsys):
    path = write_input(tmp_path)
    expected = expected_text("kalman", path, capsys)
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "states.csv"
    target.write_text("old")
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    dangling = tmp_path / "new.csv"
    dangling.symlink_to(tmp_path / "real" / "new.csv")
    for out in (link, dangling):
        assert main(["kalman", str(path), "--out", str(out)]) == 0
        assert out.is_symlink() and os.readlink(out) == str(tmp_path / "real" / out.name
                                                             if out == dangling else target)
    assert target.read_text() == expected
    assert (tmp_path / "real" / "new.csv").read_text() == expected
    assert sorted(p.name for p in (tmp_path / "real").iterdir()) == ["new.csv", "states.csv"]


def test_dash_is_standard_output(tmp_path, capsys, monkeypatch):
    path = write_input(tmp_path)
    monkeypatch.chdir(tmp_path)
    for command in COMMANDS:
        expected = expected_text(command, path, capsys)
        assert main([command, str(path), "--out", "-", *COMMANDS[command]]) == 0
        assert capsys.readouterr().out == expected
        assert main([command, str(path), "--plot", "-", *COMMANDS[command]]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "--plot '-'" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]


# -- fuzz: whatever the target, nothing but the named regular file changes ---------------------
def snapshot(folder: Path) -> dict[str, tuple]:
    """Every entry under ``folder``: its kind, permissions, link target or contents."""
    out = {}
    for p in sorted(folder.rglob("*")):
        st_ = os.lstat(p)
        if stat.S_ISLNK(st_.st_mode):
            out[str(p)] = ("link", os.readlink(p))
        elif stat.S_ISREG(st_.st_mode):
            out[str(p)] = ("file", stat.S_IMODE(st_.st_mode), p.read_bytes())
        else:
            out[str(p)] = (stat.S_IFMT(st_.st_mode), stat.S_IMODE(st_.st_mode))
    return out


TARGETS = ["missing", "regular", "regular-0600", "link", "dangling-link", "link-to-dir",
           "fifo", "dir", "missing-folder", "socket", "input", "link-to-input", "dash"]


def make_target(root: Path, kind: str, inp: Path) -> tuple[str, Path | None]:
    """The --out argument for ``kind``, and the regular file it may change (None: none)."""
    out = root / "t.png"  # a plot format; --out writes its CSV under the name all the same
    if kind == "missing":
        return str(out), out
    if kind in ("regular", "regular-0600"):
        out.write_bytes(b"previous")
        if kind == "regular-0600":
            out.chmod(0o600)
        return str(out), out
    if kind in ("link", "dangling-link"):
        target = root / "sub" / "target.png"
        target.parent.mkdir()
        if kind == "link":
            target.write_bytes(b"previous")
        out.symlink_to(target)
        return str(out), target
    if kind == "link-to-dir":
        (root / "sub").mkdir()
        out.symlink_to(root / "sub")
        return str(out), None
    if kind == "fifo":
        os.mkfifo(out)
        return str(out), None
    if kind == "dir":
        out.mkdir()
        return str(out), None
    if kind == "missing-folder":
        return str(root / "nope" / "t.png"), None
    if kind == "socket":
        import socket

        s = socket.socket(socket.AF_UNIX)
        s.bind(str(out))
        s.close()
        return str(out), None
    if kind == "input":
        return str(inp), None
    if kind == "link-to-input":
        out.symlink_to(inp)
        return str(out), None
    return "-", None


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(TARGETS), command=st.sampled_from(list(COMMANDS)),
       flag=st.sampled_from(["--out", "--plot"]))
def test_fuzz_only_the_named_regular_file_changes(tmp_path_factory, capsys, kind, command,
                                                  flag):
    root = tmp_path_factory.mktemp("target")
    inp = write_input(root)
    arg, changed = make_target(root, kind, inp)
    reader = FifoReader(Path(arg)) if kind == "fifo" else None
    before = snapshot(root)
    capsys.readouterr()
    code = main([command, str(inp), flag, arg, *COMMANDS[command]])
    got = reader.stop() if reader is not None else b""
    err = capsys.readouterr().err
    after = snapshot(root)
    if code == 2:
        assert err.count("\n") == 1 and f"possibly {command}" in err, err
    else:
        assert code == 0, err
    if changed is not None and str(changed) in after and str(changed) in before:
        assert after[str(changed)][1] == before[str(changed)][1]  # permissions kept
    for name in set(before) | set(after):
        if changed is not None and name == str(changed):
            continue
        assert before.get(name) == after.get(name), (kind, name)
    if code == 0 and changed is not None:  # the named file (or the link's target) is new
        assert after[str(changed)][0] == "file" and after[str(changed)][2] != b"previous"
    if kind == "fifo" and code == 0:
        assert got


def test_shell_process_substitution_and_dev_stdout(tmp_path, capsys):
    import shutil
    import subprocess
    import sys

    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash")
    path = write_input(tmp_path)
    expected = expected_text("changepoint", path, capsys)
    env = dict(os.environ, MPLBACKEND="Agg")
    got = tmp_path / "got.txt"
    cmd = (f"{sys.executable} -m possibly changepoint {path} --sigma 1 "
           f"--out >(cat > {got}); wait $!")
    proc = subprocess.run([bash, "-c", cmd], capture_output=True, text=True, timeout=180,
                          env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert got.read_text() == expected
    log = tmp_path / "log.txt"
    log.write_text("kept\n")
    cmd = f"{sys.executable} -m possibly changepoint {path} --sigma 1 --out /dev/stdout >> {log}"
    proc = subprocess.run([bash, "-c", cmd], capture_output=True, text=True, timeout=180,
                          env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert log.read_text() == "kept\n" + expected  # appended, not truncated or replaced
    assert sorted(p.name for p in tmp_path.iterdir()) == ["got.txt", "in.csv", "log.txt"]
