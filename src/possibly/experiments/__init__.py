"""Reproductions of the paper's figures and numbers, one module per study.

Each module exposes ``run(repeats=..., seed=..., quick=False, progress=False) -> dict`` (a
JSON-serialisable summary) and ``plot(result, path)`` (PNG files; needs matplotlib).
"""
