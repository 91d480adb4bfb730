"""A tiny stand-in study for testing the reproduce machinery (counts its runs)."""

import numpy as np

CALLS = {"run": 0}


def run(repeats=3, seed=0, quick=False, progress=False):
    CALLS["run"] += 1
    x = np.random.default_rng(seed).normal(size=repeats)
    return {"mean": float(x.mean()), "repeats": repeats, "values": x}


def summary(result):
    return [{"quantity": "mean", "paper": 0.0, "ours": result["mean"], "verdict": "toy"}]


def plot(result, out_dir):
    path = out_dir / "toy.png"
    path.write_bytes(b"\x89PNG\r\n\x1a\n")  # a placeholder file; plotting is tested elsewhere
    return [path]
