"""``possibly compile``: the Kalman filters' loops into numba's cache, bad shapes refused in
one line."""

import pytest

from possibly.cli import main
from possibly.filters import _common


def test_compiles_the_shapes_asked(capsys, tmp_path, monkeypatch):
    pytest.importorskip("numba")
    monkeypatch.chdir(tmp_path)
    assert main(["compile", "--only", "kalman", "--shape", "2", "1"]) == 0
    assert capsys.readouterr().out == ("compiled the Kalman filters' loops for 2 states and 1 "
                                       "observed\n")
    assert ("filter", 2, 1) in _common.AUTO_HISTORY.loaded
    assert list(tmp_path.iterdir()) == []  # nothing written where it runs


@pytest.mark.parametrize("argv, message", [
    (["--shape", "1", "2"], "--shape 1 2: the observed components (M) must be at most the "
                            "states (N)"),
    (["--shape", "0", "1"], "argument --shape: must be an integer in [1, 64], got '0'"),
    (["--shape", "2"], "argument --shape: expected 2 arguments"),
])
def test_bad_shapes_exit_2_in_one_line(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        code = main(["compile", *argv])
        raise SystemExit(code)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_only_the_change_point_kernels(capsys, tmp_path, monkeypatch):
    from possibly.changepoint import kernel_cache

    monkeypatch.chdir(tmp_path)
    calls = []
    monkeypatch.setattr(kernel_cache, "compile_kernels", lambda: calls.append(1) or ["default"])
    assert main(["compile", "--only", "changepoint"]) == 0
    assert calls == [1]
    assert capsys.readouterr().out == ("compiled the change-point detector's kernels for the "
                                       "models default\n")


def test_shape_with_only_change_points_is_refused(capsys):
    with pytest.raises(SystemExit) as exc:
        raise SystemExit(main(["compile", "--only", "changepoint", "--shape", "2", "1"]))
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--shape applies to the Kalman filters' loops" in err


def test_without_numba_one_line(capsys, monkeypatch):
    from possibly.changepoint import detector

    monkeypatch.setattr(detector, "numba_available", lambda: False)
    with pytest.raises(SystemExit) as exc:
        raise SystemExit(main(["compile"]))
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "possibly compile needs numba: pip install" in err
