"""#14 and #16, command-line parts: files read the way users write them, nothing lost, nothing
hidden. Each reproducer of the issues is a test here; expected values come from the file texts,
from date arithmetic, or from the Python API called directly (the CLI is under test)."""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import possibly as ps
from possibly.cli import _message, main

DAY0 = dt.date(2024, 1, 1)


def step_series(n=120, at=60, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.normal(0.0, 0.5, n)
    y[at:] += 6.0
    return y


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run_cli(*argv: str, stdin: str | None = None, timeout: float = 120):
    env = dict(os.environ, MPLBACKEND="Agg")
    return subprocess.run([sys.executable, "-m", "possibly", *argv], input=stdin, text=True,
                          capture_output=True, timeout=timeout, env=env)


def one_error_line(err: str, command: str) -> str:
    assert err.count("\n") == 1, err
    assert err.startswith(f"possibly {command}") and "error:" in err, err
    assert "Traceback" not in err and "\\udc" not in err
    return err


# -- the CLI reads files the way users write them ----------------------------------------------
def test_blank_lines_are_missing_observations_in_both_commands(tmp_path, capsys):
    # #14: blank lines in a one-column file were dropped (51 of 60 kept, "0 missing")
    y = step_series(60, 30)
    lines = [repr(float(v)) for v in y]
    for t in (0, 5, 17, 18, 40, 50, 51, 52, 53):
        lines[t] = ""
    path = write(tmp_path / "gaps.csv", lines + ["", ""])  # blank lines at the end: EOF
    assert main(["changepoint", str(path), "--sigma", "0.5", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["n"] == 60 and doc["n_missing"] == 9 and doc["index_base"] == 0
    expect = y.copy()
    expect[[0, 5, 17, 18, 40, 50, 51, 52, 53]] = np.nan
    expect_cps = ps.ChangepointDetector(sigma=0.5).fit(expect).changepoints.tolist()
    assert doc["changepoints"] == expect_cps
    assert main(["kalman", str(path)]) == 0
    rows = capsys.readouterr().out.splitlines()[1:]
    assert len(rows) == 60 and [r.split(",")[1] for r in rows[5:6]] == ["nan"]
    assert rows[0].startswith("0,nan,") and rows[59].startswith(f"59,{y[59]:.10g},")


def test_headerless_date_value_file_keeps_its_first_row(tmp_path, capsys):
    # #14: the first row was taken as a header (59 observations)
    y = step_series(60, 30)
    path = write(tmp_path / "dv.csv", [f"{DAY0 + dt.timedelta(days=i)},{v!r}"
                                       for i, v in enumerate(y.tolist())])
    assert main(["changepoint", str(path), "--sigma", "0.5", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["n"] == 60 and doc["time_column"] == "0"
    cps = ps.ChangepointDetector(sigma=0.5).fit(y).changepoints.tolist()
    assert doc["changepoints"] == cps
    assert doc["changepoint_times"] == [str(DAY0 + dt.timedelta(days=c)) for c in cps]


def test_bom_header_column_lookup(tmp_path, capsys):
    # #14: a UTF-8 BOM (spreadsheet export) broke the column lookup
    y = step_series(40, 20)
    path = tmp_path / "bom.csv"
    path.write_bytes(("\ufeffvalue,other\n" + "".join(f"{v!r},1\n" for v in y.tolist())).encode())
    assert main(["changepoint", str(path), "--column", "value", "--sigma", "0.5"]) == 0
    assert "40 observations (0 missing)" in capsys.readouterr().out
    assert main(["kalman", str(path), "--column", "value"]) == 0
    assert capsys.readouterr().out.count("\n") == 41


def test_time_column_in_every_output(tmp_path, capsys):
    # #14/#16: results reported with their time stamps (--time or detected)
    y = step_series(80, 50)
    y[20] = 5.0  # an outlier
    stamps = [f"{DAY0 + dt.timedelta(days=i)}T06:00:00" for i in range(80)]
    path = write(tmp_path / "ts.csv", ["when,level"] + [f"{s},{v!r}" for s, v in
                                                        zip(stamps, y.tolist(), strict=True)])
    res = ps.ChangepointDetector(sigma=0.5).fit(y)
    cps, outs = res.changepoints.tolist(), res.outliers.tolist()
    assert cps and outs == [20]
    assert main(["changepoint", str(path), "--sigma", "0.5"]) == 0
    text = capsys.readouterr().out
    assert "time column when" in text
    assert f"change points ({len(cps)}): " + ", ".join(f"{c} [{stamps[c]}]" for c in cps) in text
    assert f"outliers (1): 20 [{stamps[20]}]" in text
    assert main(["changepoint", str(path), "--sigma", "0.5", "--format", "csv"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0].startswith("t,time,y,") and rows[21].startswith(f"20,{stamps[20]},5.0,")
    # an explicit --time, and the kalman command
    assert main(["kalman", str(path), "--time", "when", "--column", "level"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0].startswith("t,time,observation,") and rows[1].startswith(f"0,{stamps[0]},")
    assert main(["kalman", str(path), "--time", "nope"]) == 2
    one_error_line(capsys.readouterr().err, "kalman")


def test_plot_gets_the_time_stamps(tmp_path, capsys, monkeypatch):
    """The plot's x-axis: the CLI hands the time stamps to a plot function taking index=."""
    seen = {}

    def fake_plot(result, path, *, title=None, index=None, truth=None, ylabel=None):
        seen["index"], seen["ylabel"] = index, ylabel
        Path(path).write_bytes(b"\x89PNG fake")
        return Path(path)

    monkeypatch.setattr("possibly.plotting.changepoint_plots.plot_changepoints", fake_plot)
    y = step_series(30, 15)
    path = write(tmp_path / "ts.csv", ["date,v"] + [f"{DAY0 + dt.timedelta(days=i)},{v!r}"
                                                    for i, v in enumerate(y.tolist())])
    png = tmp_path / "p.png"
    assert main(["changepoint", str(path), "--sigma", "0.5", "--plot", str(png)]) == 0
    expect = np.array([np.datetime64(DAY0 + dt.timedelta(days=i), "us") for i in range(30)])
    np.testing.assert_array_equal(seen["index"], expect)
    assert seen["ylabel"] == "v"  # the value column's name
    assert png.read_bytes().startswith(b"\x89PNG")


def test_changepoint_and_kalman_agree(tmp_path, capsys, monkeypatch):
    # #14: index base, stdin via -, ';' delimiter, all-missing column, --standard --tau
    text = "a;b\n1,0;\n2,0;\n\n4,0;\n3,9;\n5,1;\n"
    path = tmp_path / "semi.csv"
    path.write_text(text)
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    assert main(["changepoint", "-", "--column", "a", "--sigma", "1", "--format", "csv"]) == 0
    cp_rows = capsys.readouterr().out.splitlines()[1:]
    assert main(["kalman", str(path), "--column", "a"]) == 0
    kf_rows = capsys.readouterr().out.splitlines()[1:]
    assert [r.split(",")[0] for r in cp_rows] == [r.split(",")[0] for r in kf_rows] == \
        ["0", "1", "2", "3", "4", "5"]
    assert [r.split(",")[1] for r in cp_rows] == ["1.0", "2.0", "", "4.0", "3.9", "5.1"]
    assert [r.split(",")[1] for r in kf_rows] == ["1", "2", "nan", "4", "3.9", "5.1"]
    errors = []
    for cmd in ("changepoint", "kalman"):
        assert main([cmd, str(path), "--column", "b"]) == 2
        errors.append(one_error_line(capsys.readouterr().err, cmd).split("error: ")[1])
        assert main([cmd, str(path), "--column", "a", "--standard", "--tau", "0.5"]) == 2
        errors.append(one_error_line(capsys.readouterr().err, cmd).split("error: ")[1])
    assert errors[0] == errors[2] and "column b has no observed value" in errors[0]
    assert errors[1] == errors[3] and "--tau applies to the robust version only" in errors[1]


def test_kalman_several_columns_are_one_vector_observation(tmp_path, capsys):
    # #14: kalman filtered one column at a time; a 2-D track is one observation per row
    rng = np.random.default_rng(4)
    track = np.cumsum(rng.normal(0, 1, (30, 2)), axis=0)
    track[12] = [80.0, -80.0]
    track[7, 1] = np.nan  # one component missing
    lines = ["x,y"] + [",".join("" if np.isnan(v) else repr(float(v)) for v in r) for r in track]
    path = write(tmp_path / "track.csv", lines)
    assert main(["kalman", str(path), "--column", "x", "y", "--obs-sd", "2", "--accel-sd",
                 "0.05"]) == 0
    rows = capsys.readouterr().out.splitlines()
    head = rows[0].split(",")
    assert head[:4] == ["t", "observation_x", "observation_y", "position_x"]
    got = np.array([[float(c) for c in r.split(",")] for r in rows[1:]])
    col = {name: got[:, j] for j, name in enumerate(head)}
    ref = ps.KalmanFilter(*ps.filters.constant_velocity(obs_sd=2.0, ndim=2)).filter(track)
    np.testing.assert_allclose(col["position_x"], ref.mean[:, 0], rtol=1e-9)
    np.testing.assert_allclose(col["position_y"], ref.mean[:, 2], rtol=1e-9)
    np.testing.assert_allclose(col["velocity_y"], ref.mean[:, 3], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(col["discount"], ref.discount, rtol=1e-9)
    assert col["discount"][12] < 1e-6  # the outlier, one row of the 2-D track
    # t = 0: both positions observed with sd 2 (flat prior), velocities unknown (#14: was inf)
    assert col["position_sd_x"][0] == pytest.approx(2.0)
    assert col["position_sd_y"][0] == pytest.approx(2.0)
    assert np.isinf(col["velocity_sd_x"][0]) and np.isinf(col["velocity_sd_y"][0])


# -- nothing lost --------------------------------------------------------------------------------
@pytest.mark.parametrize("command", ["kalman", "changepoint"])
def test_output_equal_to_input_is_refused(tmp_path, capsys, monkeypatch, command):
    # #14: `possibly kalman X.csv --out X.csv` overwrote the input
    path = write(tmp_path / "X.csv", [repr(float(v)) for v in step_series(30, 15)])
    before = path.read_bytes()
    link = tmp_path / "link.csv"
    link.symlink_to(path)
    monkeypatch.chdir(tmp_path)
    extra = ["--sigma", "1"] if command == "changepoint" else []
    for out in (str(path), "X.csv", "./X.csv", str(link)):
        for flag in ("--out", "--plot"):
            assert main([command, "X.csv", flag, out, *extra]) == 2
            err = one_error_line(capsys.readouterr().err, command)
            assert f"{flag} " in err and "is the input file" in err
    assert path.read_bytes() == before


def test_outputs_are_written_atomically(tmp_path, capsys, monkeypatch):
    path = write(tmp_path / "in.csv", [repr(float(v)) for v in step_series(30, 15)])
    png = tmp_path / "fig.png"
    png.write_bytes(b"old plot")

    def broken_plot(result, path, **kwargs):
        Path(path).write_bytes(b"half a plot")
        raise OSError("disk full")

    monkeypatch.setattr("possibly.plotting.changepoint_plots.plot_changepoints", broken_plot)
    assert main(["changepoint", str(path), "--sigma", "1", "--plot", str(png)]) == 2
    assert "disk full" in one_error_line(capsys.readouterr().err, "changepoint")
    assert png.read_bytes() == b"old plot"  # the previous file is intact
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fig.png", "in.csv"]  # no temp left
    out = tmp_path / "out.csv"
    assert main(["kalman", str(path), "--out", str(out)]) == 0
    assert out.read_text().startswith("t,observation,")
    assert oct(out.stat().st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_plot_without_extension_reports_the_file_written(tmp_path, capsys):
    # #14: `--plot NAME` wrote NAME.png but reported NAME
    path = write(tmp_path / "in.csv", [repr(float(v)) for v in step_series(30, 15)])
    assert main(["changepoint", str(path), "--sigma", "1", "--plot", str(tmp_path / "fig")]) == 0
    err = capsys.readouterr().err
    assert f"plot written to {tmp_path / 'fig.png'}" in err
    assert (tmp_path / "fig.png").read_bytes()[:4] == b"\x89PNG"
    assert not (tmp_path / "fig").exists()
    assert main(["kalman", str(path), "--plot", str(tmp_path / "k")]) == 0
    assert f"plot written to {tmp_path / 'k.png'}" in capsys.readouterr().err
    assert (tmp_path / "k.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("command", ["kalman", "changepoint"])
def test_bad_output_paths_fail_before_any_work(tmp_path, capsys, monkeypatch, command):
    # #14: a bad plot path was reported only after the results were printed and the CSV written
    path = write(tmp_path / "in.csv", [repr(float(v)) for v in step_series(30, 15)])

    def no_work(*args, **kwargs):
        raise AssertionError("the input was read before the outputs were checked")

    monkeypatch.setattr("possibly.cli.arguments.read_table", no_work)  # read_input reads
    out = tmp_path / "out.csv"
    for plot, match in ((tmp_path / "no" / "p.png", "does not exist"),
                        (tmp_path / "p.xyz", "unknown image format 'xyz'"),
                        (tmp_path, "is a directory")):
        assert main([command, str(path), "--out", str(out), "--plot", str(plot)]) == 2
        captured = capsys.readouterr()
        assert match in one_error_line(captured.err, command) and captured.out == ""
        assert not out.exists()


def test_closed_stdout_is_quiet_and_files_are_written(tmp_path):
    # #14: `... --plot p.png | head` exited 0 without writing the plot (broken pipe)
    path = write(tmp_path / "in.csv", [repr(float(v)) for v in step_series(3000, 1500)])
    png = tmp_path / "p.png"
    read, write_end = os.pipe()
    os.close(read)  # the reader (head) is gone before anything is written
    env = dict(os.environ, MPLBACKEND="Agg")
    proc = subprocess.run([sys.executable, "-m", "possibly", "kalman", str(path), "--plot",
                           str(png)], stdout=write_end, stderr=subprocess.PIPE, text=True,
                          timeout=180, env=env)
    os.close(write_end)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr
    assert png.read_bytes()[:4] == b"\x89PNG"
    # and `| head`: a reader that takes 3 lines and leaves
    cmd = (f"{sys.executable} -m possibly changepoint {path} --sigma 1 --format csv "
           f"--plot {tmp_path / 'q.png'} | head -3")
    proc = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True,
                          text=True, timeout=180, env=env)
    assert proc.returncode == 0 and proc.stdout.count("\n") == 3, proc.stderr
    assert "Traceback" not in proc.stderr
    assert (tmp_path / "q.png").exists()


def test_ctrl_c_exits_130_with_one_line(tmp_path, capsys, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("possibly.cli.arguments.read_table", interrupted)
    assert main(["changepoint", "-"]) == 130
    assert capsys.readouterr().err == "possibly changepoint: interrupted\n"


def test_ctrl_c_in_a_real_process(tmp_path):
    """SIGINT while the command waits for its standard input: exit 130, one line."""
    env = dict(os.environ, MPLBACKEND="Agg")
    proc = subprocess.Popen([sys.executable, "-m", "possibly", "changepoint", "-"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 120
        syscall = Path(f"/proc/{proc.pid}/syscall")
        while time.monotonic() < deadline:  # until it blocks reading fd 0 (read: 0 or 63)
            try:
                fields = syscall.read_text().split()
            except PermissionError:  # no access to /proc/PID/syscall here: give it time
                time.sleep(15)
                break
            except OSError:
                fields = []
            if len(fields) > 1 and fields[0] in ("0", "63") and fields[1] == "0x0":
                break
            time.sleep(0.05)
        else:
            pytest.fail("the command never waited for standard input")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130
    assert err == "possibly changepoint: interrupted\n" and out == ""


# -- nothing hidden: messages name the user's argument --------------------------------------------
@pytest.mark.parametrize(("command", "args", "named", "not_named"), [
    ("changepoint", ["--hazard", "0.3"], "argument --hazard", "outlier_level"),
    ("changepoint", ["--hazard", "1e-13"], "argument --hazard", "tol"),
    ("changepoint", ["--hazard", "0.1x"], "argument --hazard", "real number"),
    ("changepoint", ["--sigma", "1e-200"], "argument --sigma", "ZeroDivision"),
    ("changepoint", ["--forgetting", "inf"], "argument --forgetting", "Traceback"),
    ("kalman", ["--obs-sd", "1e-300"], "argument --obs-sd", "R must be"),
    ("kalman", ["--obs-sd", "1e300"], "argument --obs-sd", "Overflow"),
    ("kalman", ["--accel-sd", "1e200"], "argument --accel-sd", "Overflow"),
    ("kalman", ["--dt", "1e300"], "argument --dt", "Overflow"),
    ("kalman", ["--dim", "0"], "argument --dim", "Traceback"),
    ("demo", ["--seed", "-1"], "argument --seed", "Traceback"),
    ("changepoint-many", ["--id", "a", "--value", "b", "--hazard", "0.3"], "argument --hazard",
     "outlier_level"),
    ("kalman-many", ["--id", "a", "--value", "b", "--obs-sd", "0"], "argument --obs-sd", "R"),
])
def test_messages_name_the_users_argument(tmp_path, capsys, command, args, named, not_named):
    path = write(tmp_path / "in.csv", ["1", "2", "3"])
    argv = [command, *([str(path)] if command != "demo" else []), *args]
    assert main(argv) == 2
    err = one_error_line(capsys.readouterr().err, command)
    assert named in err and not_named not in err and "must be" in err


def test_no_numpy_reprs_or_newlines_in_messages():
    exc = ValueError("sigma must be <= 1e100, got np.float64(1e+308)\nand np.int64(3)")
    assert _message(exc) == "sigma must be <= 1e100, got 1e+308 and 3"
    assert _message(ValueError("file \udcff.csv")) == "file ?.csv"


def test_every_help_is_plain_text_and_descriptions_differ(capsys):
    # #16: raw reST in help texts; changepoint-many and kalman-many shared one description
    texts = {}
    for cmd in ("demo", "kalman", "changepoint", "reproduce", "changepoint-many",
                "kalman-many", "compile"):
        assert main([cmd, "--help"]) == 0
        texts[cmd] = capsys.readouterr().out
        assert "``" not in texts[cmd] and ":mod:" not in texts[cmd] and ":class:" not in texts[cmd]
    assert main(["--help"]) == 0
    assert "``" not in capsys.readouterr().out

    def description(text):
        return text.split("\n\n")[1]

    assert description(texts["changepoint-many"]) != description(texts["kalman-many"])
    assert "change points" in description(texts["changepoint-many"]).lower()
    assert "kalman" in description(texts["kalman-many"]).lower()


def test_undecodable_file_names_and_contents(tmp_path, capsys):
    name = os.fsdecode(b"\xffdata.csv")
    (tmp_path / name).write_bytes(b"y\n\xff\xfe\n")
    assert main(["changepoint", str(tmp_path / name)]) == 2
    err = one_error_line(capsys.readouterr().err, "changepoint")
    assert "?data.csv is not a text file in UTF-8" in err and "\udcff" not in err
    binary = tmp_path / "b.bin"
    binary.write_bytes(bytes(range(256)))
    assert main(["kalman", str(binary)]) == 2
    assert f"{binary} is not a text file" in one_error_line(capsys.readouterr().err, "kalman")


def test_many_commands_refuse_an_empty_folder_and_read_text_tables(tmp_path, capsys):
    pytest.importorskip("pandas")
    pytest.importorskip("dask")
    (tmp_path / "empty").mkdir()
    assert main(["changepoint-many", str(tmp_path / "empty"), "--id", "a", "--value", "b"]) == 2
    err = one_error_line(capsys.readouterr().err, "changepoint-many")
    assert "folder without Parquet files" in err and "its columns are" not in err
    ya, yb = step_series(100, 40, seed=1), step_series(100, 70, seed=2)
    ya[10] = np.nan
    lines = ["sensor;v"] + [f"{k};{'' if np.isnan(v) else repr(float(v)).replace('.', ',')}"
                            for k, y in (("a", ya), ("b", yb)) for v in y]
    path = write(tmp_path / "many.csv", lines)
    assert main(["changepoint-many", str(path), "--id", "sensor", "--value", "v",
                 "--sigma", "0.5"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "id,index,kind,value"
    for key, y in (("a", ya), ("b", yb)):
        cps = ps.ChangepointDetector(sigma=0.5).fit(y).changepoints.tolist()
        got = [int(r.split(",")[1]) for r in out[1:] if r.startswith(f"{key},")
               and ",changepoint," in r]
        assert got == cps
    assert main(["changepoint-many", str(path), "--id", "sensor", "--value", "v",
                 "--standard", "--tau", "0.5"]) == 2
    assert "--tau applies" in one_error_line(capsys.readouterr().err, "changepoint-many")


@pytest.mark.parametrize(("command", "lines", "args"), [
    # found by the fuzz test: sigma='auto' estimated at ~1e-239 broke the detector
    ("changepoint", ["0.0", "0.0", "2.6841041799858735e-239"], []),
    # #14: the filter went NaN from a 1e155 observation on, exit 0
    ("kalman", ["", "1e155", "1", "2"], []),
])
def test_extreme_magnitudes_are_refused_or_finite(tmp_path, capsys, command, lines, args):
    path = write(tmp_path / "x.csv", lines)
    code = main([command, str(path), *args])
    captured = capsys.readouterr()
    if code == 2:
        one_error_line(captured.err, command)
    else:  # a fixed library: finite results
        assert code == 0 and captured.err == ""
        if command == "kalman":  # the rows after the first observation: finite states
            rows = [r.split(",") for r in captured.out.splitlines()[2:]]
            assert all(np.isfinite(float(c)) for r in rows for c in r[2:4])


def test_docs_cli_page_runs_verbatim(tmp_path, capsys, monkeypatch):
    """docs/cli.md: its files are written, its commands run and print what the page shows."""
    import re
    import shlex

    page = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text()
    monkeypatch.chdir(tmp_path)
    for name, body in re.findall(r"```csv (\S+)\n(.*?)```", page, flags=re.S):
        (tmp_path / name).write_text(body)
    sessions = re.findall(r"```console\n(.*?)```", page, flags=re.S)
    assert len(sessions) == 3
    for session in sessions:
        command, *shown = session.rstrip("\n").split("\n")
        assert command.startswith("$ possibly ")
        assert main(shlex.split(command)[2:]) == 0
        assert capsys.readouterr().out.rstrip("\n").split("\n") == shown
    rows = (tmp_path / "filtered.csv").read_text().splitlines()
    assert float(rows[6].split(",")[-1]) < 1e-90  # the outlier's discount, as the page says


def test_many_commands_report_time_stamps(tmp_path, capsys):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("dask")
    ya, yb = step_series(60, 25, seed=3), step_series(60, 40, seed=4)
    stamps = [str(DAY0 + dt.timedelta(days=i)) for i in range(60)]
    frame = pd.DataFrame({"id": ["a"] * 60 + ["b"] * 60, "when": stamps * 2,
                          "v": np.r_[ya, yb]})
    csv_path = tmp_path / "many.csv"
    frame.to_csv(csv_path, index=False)
    expect = {k: ps.ChangepointDetector(sigma=0.5).fit(y).changepoints.tolist()
              for k, y in (("a", ya), ("b", yb))}
    assert main(["changepoint-many", str(csv_path), "--id", "id", "--value", "v",
                 "--sigma", "0.5", "--time", "when"]) == 0
    rows = [r.split(",") for r in capsys.readouterr().out.splitlines()]
    assert rows[0] == ["id", "index", "time", "kind", "value"]
    for key, cps in expect.items():
        got = [(int(r[1]), r[2]) for r in rows[1:] if r[0] == key and r[3] == "changepoint"]
        assert got == [(c, stamps[c]) for c in cps]
    # Parquet in, --out: the events table carries the time stamps
    pq = tmp_path / "many.parquet"
    frame.to_parquet(pq, index=False)
    out = tmp_path / "out"
    assert main(["changepoint-many", str(pq), "--id", "id", "--value", "v", "--sigma", "0.5",
                 "--time", "when", "--out", str(out)]) == 0
    events = pd.read_parquet(out / "events.parquet")
    cps = events[events["kind"] == "changepoint"]
    assert [stamps[i] for i in cps["index"]] == cps["time"].tolist()
    assert main(["kalman-many", str(csv_path), "--id", "id", "--value", "v",
                 "--time", "when"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0].startswith("id,step,time,") and rows[1].startswith(f"a,0,{stamps[0]},")
    assert main(["kalman-many", str(pq), "--id", "id", "--value", "v", "--time", "nope"]) == 2
    assert "column 'nope' not found" in one_error_line(capsys.readouterr().err,
                                                              "kalman-many")


# -- spreadsheet and pandas exports, rows out of time order ------------------------------------
def test_pandas_numeric_header_does_not_shift_the_change_points(tmp_path, capsys):
    pd = pytest.importorskip("pandas")
    y = step_series(120, 60)
    path = tmp_path / "series.csv"
    pd.Series(y).to_csv(path, index=False)  # header "0"
    assert path.read_text().startswith("0\n")
    expect = ps.ChangepointDetector().fit(y).changepoints.tolist()
    assert main(["changepoint", str(path), "--format", "json"]) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert doc["n"] == 120 and doc["changepoints"] == expect
    assert captured.err == (f"possibly changepoint: note: {path}: line 1 ('0') is read as a "
                            "header, the column names pandas writes for unnamed columns (give "
                            "--header no to read it as data)\n")
    # --header no: the 0 is an observation (121 rows); --header yes: no note
    assert main(["changepoint", str(path), "--format", "json", "--header", "no"]) == 0
    assert json.loads(capsys.readouterr().out)["n"] == 121
    assert main(["kalman", str(path), "--header", "yes", "--obs-sd", "1", "--accel-sd",
                 "0.05"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and len(captured.out.splitlines()) == 121


def test_spreadsheet_na_rows_are_missing_in_both_commands(tmp_path, capsys):
    y = step_series(40, 20)
    lines = ["date,level"] + [f"{DAY0 + dt.timedelta(days=t)},{float(y[t])!r}"
                              for t in range(40)]
    missing = [0, 7, 25]
    for t in missing:
        lines[t + 1] = lines[t + 1].split(",")[0] + ",#N/A"
    lines[1] = "#N/A,#N/A"  # the first row: no date either, at the start of the line
    path = write(tmp_path / "export.csv", lines)
    assert main(["changepoint", str(path), "--format", "json", "--sigma", "0.5"]) == 0
    doc = json.loads(capsys.readouterr().out)
    expect = y.copy()
    expect[missing] = np.nan
    assert doc["n"] == 40 and doc["n_missing"] == 3
    assert doc["changepoints"] == ps.ChangepointDetector(sigma=0.5).fit(expect) \
        .changepoints.tolist()
    assert main(["kalman", str(path)]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert len(rows) == 41 and [rows[t + 1].split(",")[2] for t in missing] == ["nan"] * 3


@pytest.mark.parametrize("command", ["changepoint", "kalman"])
def test_newest_first_file_is_analysed_in_time_order(tmp_path, capsys, command):
    y = step_series(80, 50)
    rows = [f"{DAY0 + dt.timedelta(days=t)},{float(y[t])!r}" for t in range(80)]
    oldest = write(tmp_path / "oldest.csv", ["date,level", *rows])
    newest = write(tmp_path / "newest.csv", ["date,level", *rows[::-1]])
    # kalman with its scales given: no note of scales set from the data
    fmt = (["--format", "csv"] if command == "changepoint"
           else ["--obs-sd", "1", "--accel-sd", "0.05"])
    assert main([command, str(oldest), *fmt]) == 0
    expect = capsys.readouterr()
    assert expect.err == ""
    assert main([command, str(newest), *fmt]) == 0
    got = capsys.readouterr()
    assert got.out == expect.out  # the same rows, numbered from 0 in time order
    assert got.err == (f"possibly {command}: note: {newest}: rows sorted by time (column date): "
                       "the file lists them newest first; rows are numbered from 0 in time "
                       "order\n")


def test_unsortable_time_column_is_refused_in_one_line(tmp_path, capsys):
    path = write(tmp_path / "gap.csv", ["date,v", "2024-01-03,1", ",2", "2024-01-01,3"])
    assert main(["kalman", str(path)]) == 2
    err = one_error_line(capsys.readouterr().err, "kalman")
    assert "gap.csv: the rows are not in time order (column date), and line 3 has no time " \
           "stamp" in err


@pytest.mark.parametrize(("text", "where"), [
    ("a,b\n1,2\n3," + "9" * 140000 + "\n", "line 3: a cell of more than 131072 characters"),
    ('a,b\n1,2\n"x\ny",3,4\n', "lines 3-4 (a quoted cell spans them): 3 cell(s), expected 2"),
])
@pytest.mark.parametrize("command", ["changepoint", "kalman"])
def test_long_and_multiline_cells_one_line(tmp_path, capsys, text, where, command):
    path = tmp_path / "cells.csv"
    path.write_text(text, encoding="utf-8")
    assert main([command, str(path), "--column", "a"]) == 2
    err = one_error_line(capsys.readouterr().err, command)
    assert f"error: {path}, {where}" in err and "internal error" not in err


def test_notes_column_with_line_breaks_is_read(tmp_path, capsys):
    y = step_series(30, 15)
    lines = ["level,note"] + [f"{float(v)!r}," for v in y]
    lines[5] = f'{float(y[4])!r},"pump restarted,\nsee log"'
    path = write(tmp_path / "notes.csv", lines)
    assert main(["changepoint", str(path), "--column", "level", "--format", "csv"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 31
    np.testing.assert_array_equal([float(r.split(",")[1]) for r in out[1:]], y)
