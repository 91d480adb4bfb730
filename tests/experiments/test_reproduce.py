"""The reproduce machinery: caching by parameters, report, CLI errors."""

import json

import pytest

import fake_study
import possibly.experiments.reproduce as rp
from possibly.cli import main


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setitem(rp.STUDIES, "toy", ("fake_study", "a toy figure", 3))
    fake_study.CALLS["run"] = 0
    return fake_study


def test_cache_recomputes_only_what_changed(toy, tmp_path):
    rp.reproduce("toy", tmp_path, seed=1)
    rp.reproduce("toy", tmp_path, seed=1)
    assert toy.CALLS["run"] == 1
    rp.reproduce("toy", tmp_path, seed=2)
    assert toy.CALLS["run"] == 2
    rp.reproduce("toy", tmp_path, seed=1, repeats=5)
    assert toy.CALLS["run"] == 3
    result = json.loads((tmp_path / "toy" / "result.json").read_text())
    assert result["repeats"] == 5 and len(result["values"]) == 5


def test_report_lists_paper_and_ours(toy, tmp_path):
    path = rp.reproduce(["toy"], tmp_path, seed=3)
    text = path.read_text()
    mean = json.loads((tmp_path / "toy" / "result.json").read_text())["mean"]
    assert "| mean | 0 |" in text and f"{mean:.4g}" in text and "toy/toy.png" in text
    assert "seed: 3" in text


def test_cli_rejects_unknown_study_and_bad_repeats(tmp_path, capsys):
    # usage errors return 2 from main (one line on stderr) like every other error
    assert main(["reproduce", "nope", "--out", str(tmp_path)]) == 2
    assert "invalid choice: 'nope'" in capsys.readouterr().err
    assert main(["reproduce", "kalman", "--out", str(tmp_path), "--repeats", "0"]) == 2
    assert "repeats must be >= 1" in capsys.readouterr().err


def test_reproduce_all_quick_writes_every_figure_and_section(tmp_path):
    # the real studies, reduced: what CI runs
    assert main(["reproduce", "all", "--quick", "--out", str(tmp_path), "--no-progress"]) == 0
    text = (tmp_path / "report.md").read_text()
    for name in rp.STUDIES:
        assert f"## {name}:" in text
        assert (tmp_path / name / "result.json").is_file()
        pngs = list((tmp_path / name).glob("*.png"))
        assert pngs and all(p.stat().st_size > 10_000 for p in pngs)
    assert "| quantity | paper | ours | verdict |" in text


def test_running_one_study_keeps_the_others_in_the_report(toy, monkeypatch, tmp_path):
    monkeypatch.setitem(rp.STUDIES, "toy2", ("fake_study", "another toy figure", 3))
    rp.reproduce(["toy", "toy2"], tmp_path, seed=1)
    text = rp.reproduce("toy2", tmp_path, seed=2).read_text()
    assert "## toy: a toy figure" in text and "## toy2: another toy figure" in text
    assert "seed: 1" in text and "seed: 2" in text


def test_cache_key_hashes_the_library_source(toy, tmp_path, monkeypatch):
    # a change anywhere in the library (not only in the study module) recomputes
    rp.reproduce("toy", tmp_path, seed=1)
    rp.reproduce("toy", tmp_path, seed=1)
    assert toy.CALLS["run"] == 1
    monkeypatch.setattr(rp, "source_digest", lambda root=None: "0" * 64)
    rp.reproduce("toy", tmp_path, seed=1)
    assert toy.CALLS["run"] == 2


def test_source_digest_sees_edits_renames_and_new_files(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "sub" / "b.py").write_text("y = 2\n")
    (tmp_path / "notes.txt").write_text("not source")
    base = rp.source_digest(tmp_path)
    assert rp.source_digest(tmp_path) == base
    (tmp_path / "notes.txt").write_text("still not source")
    assert rp.source_digest(tmp_path) == base
    (tmp_path / "sub" / "b.py").write_text("y = 3\n")
    edited = rp.source_digest(tmp_path)
    assert edited != base
    (tmp_path / "sub" / "b.py").rename(tmp_path / "sub" / "c.py")
    assert rp.source_digest(tmp_path) not in (base, edited)
    (tmp_path / "d.py").write_text("")
    assert len({base, edited, rp.source_digest(tmp_path)}) == 3
    # the default root is the whole installed package, not the folder of this module
    import possibly

    package = rp.Path(possibly.__file__).parent
    assert rp.Path(rp.__file__).parent != package
    assert rp.source_digest() == rp.source_digest(package)


def test_cut_short_cache_is_a_miss_with_a_warning_naming_it(toy, tmp_path):
    rp.reproduce("toy", tmp_path, seed=1)
    (cache,) = (tmp_path / ".cache").iterdir()
    text = cache.read_text()
    for broken in (text[: len(text) // 2], "", "[1, 2]", '{"params": {}}', "\udcff"):
        cache.write_text(broken, errors="surrogateescape")
        calls = toy.CALLS["run"]
        with pytest.warns(RuntimeWarning, match=f"cache file .*{cache.name}.* unreadable"):
            rp.reproduce("toy", tmp_path, seed=1)
        assert toy.CALLS["run"] == calls + 1  # recomputed
        assert json.loads(cache.read_text())["result"]["mean"] == json.loads(text)["result"][
            "mean"]
    rp.reproduce("toy", tmp_path, seed=1)  # the rewritten cache is used again
    assert toy.CALLS["run"] == calls + 1
    outcome = tmp_path / "toy" / "outcome.json"
    outcome.write_text("{")
    with pytest.warns(RuntimeWarning, match="outcome.json"):  # another study's run
        text = rp.write_report([], tmp_path).read_text()
    assert "## toy" not in text


SCRIPT = """
import resource, signal, sys
sys.path.insert(0, {tests!r})
import possibly.experiments.reproduce as rp
rp.STUDIES["toy"] = ("fake_study", "a toy figure", 3)
limit = int(sys.argv[2])
if limit:  # a full disk, in effect: writing past `limit` bytes fails
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
rp.reproduce("toy", sys.argv[1], seed=1, repeats=5000)
"""


def test_cache_write_cut_short_leaves_no_truncated_file(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    script = SCRIPT.format(tests=str(Path(__file__).parents[1]))
    out = tmp_path / "out"
    first = subprocess.run([sys.executable, "-c", script, str(out), "20000"],
                           capture_output=True, text=True, timeout=300)
    assert first.returncode != 0  # the write failed
    for f in (out / ".cache").iterdir():  # what is there is whole (temporary files removed)
        json.loads(f.read_text())
    second = subprocess.run([sys.executable, "-c", script, str(out), "0"],
                            capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr
    (cache,) = (out / ".cache").iterdir()
    assert len(json.loads(cache.read_text())["result"]["values"]) == 5000


def test_cli_out_must_be_a_directory(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "file").write_text("mine")
    for out in ("-", "file"):
        assert main(["reproduce", "kalman", "--quick", "--out", out]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "is not a directory" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]
    assert (tmp_path / "file").read_text() == "mine"
