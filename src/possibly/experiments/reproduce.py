"""Reproduce the paper's figures and numbers, with a report next to the paper's values.

Each study is a module of :mod:`possibly.experiments` with ``run(repeats, seed, quick,
progress) -> dict`` and ``plot(result, out_dir) -> list of paths``; it may also provide
``summary(result) -> list of rows`` where a row is a dict with keys ``quantity``, ``paper``,
``ours`` and ``verdict``. Results are cached under ``OUT/.cache`` by a key made of the
parameters and the source of the study module, so a re-run only recomputes what changed.
Every file is written atomically (a temporary file renamed over it); a cache file that cannot
be read (cut short, edited) is recomputed, with a warning naming it.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from possibly import __version__
from possibly._files import write_text_atomic

__all__ = ["STUDIES", "StudyOutcome", "reproduce", "run_study", "source_digest", "write_report"]

#: name -> (module, the paper's figure or section, default repeats from the paper)
STUDIES: dict[str, tuple[str, str, int]] = {
    "feature": ("possibly.experiments.feature_study", "§5.1, Figure 1 (extended feature)", 1000),
    "kalman": ("possibly.experiments.kalman_study", "§5.2, Figure 2 (robust Kalman filter)", 500),
    "changepoint": ("possibly.experiments.changepoint_study",
                    "§5.3, Figure 3 (well-log change points)", 1),
    "normal": ("possibly.experiments.normal_study",
               "Appendix A, Figure 4 (unknown mean and precision)", 1000),
    "normal-mmd": ("possibly.experiments.normal_mmd_study",
                   "Appendix A, Figure 5 (known precision, MMD)", 1000),
    "soft-uniform": ("possibly.experiments.soft_uniform_study",
                     "Appendix B, Figure 6 (soft uniform)", 1000),
}


@dataclass
class StudyOutcome:
    """What one study produced: its result, figures, timing and whether it came from cache."""

    name: str
    params: dict
    result: dict
    figures: list[str] = field(default_factory=list)
    seconds: float = 0.0
    cached: bool = False
    rows: list[dict] = field(default_factory=list)


def _module(name: str):
    if name not in STUDIES:
        raise ValueError(f"study must be one of {', '.join(STUDIES)} or 'all', got {name!r}")
    return importlib.import_module(STUDIES[name][0])


def source_digest(root: str | Path | None = None) -> str:
    """SHA-256 over every ``.py`` file under ``root`` (default: the installed package).

    Each file enters with its path relative to ``root``, so renaming or moving a module
    changes the digest too.
    """
    root = Path(root) if root is not None else Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(path.relative_to(root).as_posix().encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def _cache_key(name: str, params: dict) -> str:
    # the study module's own source too: a study may live outside the package (tests do)
    study = hashlib.sha256(inspect.getsource(_module(name)).encode()).hexdigest()
    blob = json.dumps({"study": name, "params": params, "version": __version__,
                       "source": study, "library": source_digest()}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _rows(mod, result: dict) -> list[dict]:
    if hasattr(mod, "summary"):
        return list(mod.summary(result))
    if isinstance(result.get("summary"), list):
        return list(result["summary"])
    rows = []
    for key, value in result.items():
        if isinstance(value, (int, float, str)):
            rows.append({"quantity": key, "paper": "", "ours": value, "verdict": ""})
    return rows


def run_study(name: str, out_dir: str | Path, *, repeats: int | None = None, seed: int = 0,
              quick: bool = False, progress: bool = False, use_cache: bool = True
              ) -> StudyOutcome:
    """Run (or load from cache) one study, write its JSON and figures under ``out_dir/name``."""
    mod = _module(name)
    if repeats is not None and repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    params: dict[str, Any] = {
        "repeats": repeats if repeats is not None else STUDIES[name][2], "seed": seed,
        "quick": quick}
    if quick and repeats is None:
        params["repeats"] = None  # each study's own quick size
    out = Path(out_dir)
    study_dir = out / name
    study_dir.mkdir(parents=True, exist_ok=True)
    cache = out / ".cache" / f"{name}-{_cache_key(name, params)}.json"
    stored = _read_json(cache, ("result", "seconds")) if use_cache else None
    if stored is not None:
        result, seconds, cached = stored["result"], stored["seconds"], True
    else:
        kwargs = {"seed": seed, "quick": quick, "progress": progress}
        if params["repeats"] is not None:
            kwargs["repeats"] = params["repeats"]
        start = time.perf_counter()
        result = mod.run(**kwargs)
        seconds = time.perf_counter() - start
        cached = False
        cache.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"params": params, "seconds": seconds, "result": result},
                          default=_jsonable)
        write_text_atomic(cache, text)
        result = json.loads(text)["result"]
    write_text_atomic(study_dir / "result.json", json.dumps(result, indent=1, default=_jsonable))
    figures = [str(p) for p in (mod.plot(result, study_dir) or [])]
    outcome = StudyOutcome(name=name, params=params, result=result, figures=figures,
                           seconds=seconds, cached=cached, rows=_rows(mod, result))
    # what the report needs, so that a later run of other studies can rebuild the whole report
    write_text_atomic(study_dir / "outcome.json", json.dumps(
        {"params": params, "seconds": seconds, "cached": cached, "rows": outcome.rows,
         "figures": [Path(f).name for f in figures]}, indent=1, default=_jsonable))
    return outcome


def _read_json(path: Path, keys: tuple[str, ...]) -> dict | None:
    """The JSON object stored at ``path`` with ``keys``; None if there is no such file, or
    (with a warning naming the file) if it cannot be read: a cache miss, never an error."""
    if not path.is_file():
        return None
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
        missing = [k for k in keys if not isinstance(stored, dict) or k not in stored]
        if missing:
            raise ValueError(f"no {missing[0]!r} entry")
    except (OSError, ValueError) as exc:  # UnicodeDecodeError and JSONDecodeError included
        warnings.warn(f"cache file {path} is unreadable ({exc}): ignored, recomputed",
                      RuntimeWarning, stacklevel=3)
        return None
    return stored


def _jsonable(obj):
    try:
        import numpy as np

        if isinstance(obj, np.ndarray):
            return obj.tolist()
        if isinstance(obj, np.generic):
            return obj.item()
    except ImportError:  # pragma: no cover
        pass
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _stored_outcome(name: str, out: Path) -> StudyOutcome | None:
    stored = _read_json(out / name / "outcome.json",
                        ("params", "seconds", "cached", "rows", "figures"))
    if stored is None:
        return None
    return StudyOutcome(name=name, params=stored["params"], result={},
                        figures=[str(out / name / f) for f in stored["figures"]],
                        seconds=stored["seconds"], cached=stored["cached"], rows=stored["rows"])


def write_report(outcomes: list[StudyOutcome], out_dir: str | Path) -> Path:
    """Write ``out_dir/report.md``: per study, the paper's values next to ours.

    Studies run earlier into the same directory (and not in ``outcomes``) keep their section.
    """
    out = Path(out_dir)
    given = {oc.name: oc for oc in outcomes}
    found = [given.get(name) or _stored_outcome(name, out) for name in STUDIES]
    outcomes = [oc for oc in found if oc is not None]
    lines = ["# Reproduction of Houssineau & Nott, *Robust Bayesian inference in complex models "
             "with possibility theory*", "",
             f"Generated by `possibly reproduce` (possibly {__version__}). Each section gives "
             "the repeats, seed and wall time, then the paper's value next to ours with a "
             "one-line verdict.", ""]
    for oc in outcomes:
        where = STUDIES[oc.name][1]
        reps = oc.params["repeats"] if oc.params["repeats"] is not None else "quick"
        lines += [f"## {oc.name}: {where}", "",
                  f"repeats: {reps}, seed: {oc.params['seed']}, quick: {oc.params['quick']}, "
                  f"wall time: {oc.seconds:.1f} s{' (from cache)' if oc.cached else ''}", ""]
        if oc.rows:
            lines += ["| quantity | paper | ours | verdict |", "|---|---|---|---|"]
            for row in oc.rows:
                lines.append(f"| {row.get('quantity', '')} | {_fmt(row.get('paper', ''))} | "
                             f"{_fmt(row.get('ours', ''))} | {row.get('verdict', '')} |")
            lines.append("")
        for fig in oc.figures:
            rel = Path(fig).resolve().relative_to(out.resolve())
            lines += [f"![{rel.stem}]({rel.as_posix()})", ""]
    path = out / "report.md"
    write_text_atomic(path, "\n".join(lines))
    return path


def _run_one(args):
    name, out_dir, kwargs = args
    return run_study(name, out_dir, **kwargs)


def reproduce(studies: list[str] | str, out_dir: str | Path, *, repeats: int | None = None,
              seed: int = 0, quick: bool = False, jobs: int = 1, progress: bool = False,
              use_cache: bool = True) -> Path:
    """Run the studies (``"all"`` for every one) and write the report; returns its path.

    ``jobs > 1`` runs studies in parallel processes.
    """
    names = list(STUDIES) if studies in ("all", ["all"]) else (
        [studies] if isinstance(studies, str) else list(studies))
    if repeats is not None and repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    for n in names:
        _module(n)
    kwargs = {"repeats": repeats, "seed": seed, "quick": quick, "progress": progress,
              "use_cache": use_cache}
    tasks = [(n, out_dir, kwargs) for n in names]
    if jobs == 1 or len(names) == 1:
        outcomes = [_run_one(t) for t in tasks]
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            outcomes = list(pool.map(_run_one, tasks))
    return write_report(outcomes, out_dir)
