"""Head-to-head: possibly's robust Kalman filter against the generalised-Bayes and variational
robust filters, on WoLF's 2-D tracking experiment (Duran-Martin et al., ICML 2024).

Setting (the authors' ``experiments/datagen.py``): constant velocity in 2-D, state
``(x, y, ẋ, ẏ)``, Δ = 0.1, Q = 0.1·I₄, R = 10·I₂, z₀ = (0, 0, 1, 1), T = 1000 steps;
observation noise either multivariate Student-t with ν = 2.01 (scale R, one gamma draw per
observation), or Gaussian R with, with probability 0.05, mean 2·H z instead of H z.
Metric: RMSE of the x position per trial (filtered mean); median and mean over trials, and
the number of trials whose RMSE_x exceeds 10 ("lost": the Kalman filter's median is ≈ 3).

Peers (``robust_peers.py``) start from WoLF's prior z₀ ~ N((0, 0, 1, 1), I₄) and are run
at two hyper-parameter settings:

* "WoLF protocol": tuned on trial 0 only, minimising the largest per-component error, as the
  authors' script does (they use 10 steps of Bayesian optimisation over c ∈ (0, 20]; here a
  grid over the same range), so the value differs from theirs;
* "tuned": the grid value minimising the median RMSE_x over all the trials (an oracle).

possibly's filter is run at defaults (uninformative prior, dim = 4, robust start on), without
the robust start, with WoLF's prior (predicted to the first observation), with τ = 0.1, and
given R 10x too large or too small, without and with the noise scale learned
(``learn_noise_scale=True``). Every peer is checked first on the Gaussian case (no outliers), where
it must come close to the Kalman filter.

Run: .venv/bin/python benchmarks/bench_filtering.py [--trials 100] [--steps 1000] [--seed 0]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import robust_peers as rp
from timing import best_of

import possibly as ps

DT, Q_SCALE, R_SCALE = 0.1, 0.1, 10.0
Z0 = np.array([0.0, 0.0, 1.0, 1.0])
LOST = 10.0


def model():
    F = np.eye(4)
    F[0, 2] = F[1, 3] = DT
    H = np.eye(2, 4)
    return F, Q_SCALE * np.eye(4), H, R_SCALE * np.eye(2)


def simulate(kind: str, trials: int, steps: int, seed: int):
    """True states (B, T, 4) and observations (B, T, 2); kind in gauss / student / mixture."""
    F, Q, H, R = model()
    rng = np.random.default_rng(seed)
    q = rng.multivariate_normal(np.zeros(4), Q, size=(trials, steps))
    z = np.empty((trials, steps, 4))
    prev = np.broadcast_to(Z0, (trials, 4))
    for t in range(steps):
        prev = prev @ F.T + q[:, t]
        z[:, t] = prev
    e = rng.multivariate_normal(np.zeros(2), R, size=(trials, steps))
    hz = z @ H.T
    if kind == "student":
        nu = 2.01
        w = rng.gamma(nu / 2, 2 / nu, size=(trials, steps, 1))
        ys = hz + e / np.sqrt(w)
    elif kind == "mixture":
        out = rng.uniform(size=(trials, steps, 1)) < 0.05
        ys = np.where(out, 2.0 * hz, hz) + e
    else:
        ys = hz + e
    return z, ys


def rmse_x(mean, z):
    return np.sqrt(np.mean((mean[..., 0] - z[..., 0]) ** 2, axis=-1))


def wolf_score(mean, z):
    """The authors' tuning objective on one trial: the largest per-component error norm."""
    return np.sqrt(((mean - z) ** 2).sum(axis=-2)).max(axis=-1)


PEERS = {
    "WoLF-IMQ": (rp.wolf_imq, [{"soft_threshold": c} for c in np.geomspace(0.05, 20, 24)]),
    "WoLF-MD": (rp.wolf_md, [{"threshold": c} for c in np.geomspace(0.2, 20, 24)]),
    "KF-B (Wang 2018)": (rp.bernoulli_kf, [
        {"alpha": a, "beta": b, "n_inner": k}
        for a in (0.1, 1.0, 2.5, 5.0) for b in (0.1, 1.0, 2.5, 5.0) for k in (1, 3, 10)]),
    "KF-IW (Agamennoni 2012)": (rp.inverse_wishart_kf, [
        {"noise_scaling": s, "n_inner": k}
        for s in (0.01, 0.1, 0.5, 1.0, 2.0, 5.0, 20.0) for k in (1, 3, 10)]),
}


def sanity(steps: int) -> None:
    """With Gaussian noise and lax hyper-parameters every peer is (close to) the Kalman filter."""
    mod = model()
    P0 = np.eye(4)
    z, ys = simulate("gauss", 5, min(steps, 300), seed=12345)
    ref = rp.kalman(ys, mod, Z0, P0)
    checks = {
        "WoLF-IMQ c=1e6": rp.wolf_imq(ys, mod, Z0, P0, 1e6),
        "WoLF-MD thr=1e6": rp.wolf_md(ys, mod, Z0, P0, 1e6),
        "KF-B α=1e12": rp.bernoulli_kf(ys, mod, Z0, P0, 1e12, 1e-6, 3),
        "KF-IW s=1e6": rp.inverse_wishart_kf(ys, mod, Z0, P0, 1e6, 3),
    }
    for name, got in checks.items():
        err = np.abs(got - ref).max()
        assert err < 1e-3, (name, err)
    # and the Kalman filter of the peers is possibly's standard filter from the same prior
    F, Q, _, _ = mod
    prior = ps.MultivariateNormal(Z0 @ F.T, np.linalg.inv(F @ P0 @ F.T + Q))
    ours = ps.KalmanFilter(*mod, robust=False).filter(ys, prior=prior).mean
    assert np.allclose(ours, ref, atol=1e-9), np.abs(ours - ref).max()


def tune(fn, grid, ys, z, mod, P0):
    """(params at the WoLF protocol, params tuned on all trials) over the grid."""
    best0, best_all = (np.inf, None), (np.inf, None)
    for params in grid:
        with np.errstate(all="ignore"):
            mean = fn(ys, mod, Z0, P0, **params)
        s0 = wolf_score(mean[:1], z[:1])[0]
        s_all = np.median(rmse_x(mean, z))
        if np.isfinite(s0) and s0 < best0[0]:
            best0 = (s0, params)
        if np.isfinite(s_all) and s_all < best_all[0]:
            best_all = (s_all, params)
    return best0[1], best_all[1]


def fmt(params):
    return ", ".join(f"{k}={v:.3g}" for k, v in params.items())


def run_setting(kind: str, trials: int, steps: int, seed: int, repeats: int, do_tune: bool):
    mod = model()
    F, Q, H, R = mod
    P0 = np.eye(4)
    z, ys = simulate(kind, trials, steps, seed)
    prior = ps.MultivariateNormal(Z0 @ F.T, np.linalg.inv(F @ P0 @ F.T + Q))
    robust = ps.KalmanFilter(*mod)
    thresh = ps.KalmanFilter(*mod, tau=0.1)
    rows = {
        "Kalman filter": (lambda y: rp.kalman(y, mod, Z0, P0), ""),
    }
    if do_tune:
        for name, (fn, grid) in PEERS.items():
            p0, p_all = tune(fn, grid, ys, z, mod, P0)
            rows[f"{name}, WoLF protocol"] = (
                (lambda f, p: lambda y: f(y, mod, Z0, P0, **p))(fn, p0), fmt(p0))
            rows[f"{name}, tuned on trials"] = (
                (lambda f, p: lambda y: f(y, mod, Z0, P0, **p))(fn, p_all), fmt(p_all))
    plain = ps.KalmanFilter(*mod, robust_start=False)
    rows.update({
        "possibly, default (flat prior)": (lambda y: robust.filter(y).mean,
                                           "robust start on"),
        "possibly, flat prior, no robust start": (lambda y: plain.filter(y).mean, ""),
        "possibly, WoLF's prior": (lambda y: robust.filter(y, prior=prior).mean, ""),
        "possibly, τ = 0.1, WoLF's prior": (lambda y: thresh.filter(y, prior=prior).mean, ""),
    })
    for factor in (10.0, 0.1):
        wrong = ps.KalmanFilter(F, Q, H, factor * R)
        learn = ps.KalmanFilter(F, Q, H, factor * R, learn_noise_scale=True)
        rows[f"possibly, R x {factor:g}"] = ((lambda k: lambda y: k.filter(y).mean)(wrong),
                                            "flat prior")
        rows[f"possibly, R x {factor:g}, scale learned"] = (
            (lambda k: lambda y: k.fit(y).mean)(learn), "flat prior")
    print(f"\n{kind}: {trials} trials x {steps} steps, seed {seed}")
    head = (f"{'method':<40} {'median':>7} {'mean':>7} {'q90':>7} {'lost':>5} "
            f"{'batch ms':>9} {'1 trial ms':>10}  params")
    print(head)
    print("-" * len(head))
    results = {}
    for name, (fn, params) in rows.items():
        with np.errstate(all="ignore"):
            err = rmse_x(fn(ys), z)
        t_batch = best_of(lambda f=fn: f(ys), repeats) if repeats else np.nan
        t_one = best_of(lambda f=fn: f(ys[:1]), repeats) if repeats else np.nan
        results[name] = err
        print(f"{name:<40} {np.median(err):7.3f} {np.mean(err):7.3f} "
              f"{np.quantile(err, 0.9):7.3f} {int((err > LOST).sum()):5d} "
              f"{1e3 * t_batch:9.1f} {1e3 * t_one:10.1f}  {params}")
    return results


def figure(results: dict, path: str) -> None:
    """Box plots of the per-trial RMSE_x, one panel per setting (values above 5 clipped and
    counted)."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(6.5 * len(results), 6), squeeze=False)
    for ax, (kind, res) in zip(axes[0], results.items(), strict=True):
        names = [n for n in res if n != "Kalman filter"]
        data = [np.minimum(res[n], 5.0) for n in names]
        ax.boxplot(data, orientation="horizontal", whis=(5, 95), flierprops={"ms": 2})
        labels = [f"{n}  [{int((res[n] > 5).sum())} > 5]" if (res[n] > 5).any() else n
                  for n in names]
        ax.set_yticks(range(1, len(names) + 1), labels, fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel("RMSE of the x position per trial (clipped at 5)")
        ax.set_title(f"{kind}: {len(res[names[0]])} trials "
                     f"(Kalman filter median {np.median(res['Kalman filter']):.2f})")
        ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3, help="best of, for timings (0: none)")
    parser.add_argument("--settings", default="student,mixture")
    parser.add_argument("--no-tune", action="store_true", help="skip the peers (fast)")
    parser.add_argument("--figure", help="save box plots of RMSE_x per method to this file")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    sanity(args.steps)
    print("sanity: every peer reduces to the Kalman filter with lax hyper-parameters; "
          "possibly's standard filter equals the peers' Kalman filter")
    results = {}
    for kind in args.settings.split(","):
        results[kind] = run_setting(kind, args.trials, args.steps, args.seed, args.repeats,
                                    not args.no_tune)
    if args.figure:
        figure(results, args.figure)
    print(f"\ntotal {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
