"""Two moons: a 2-16-16-1 MLP learns a curved decision boundary (>= 97 % accuracy).

    python examples/moons.py                  # a second or two
    python examples/moons.py --steps 2000 --noise 0.2

Generates the data itself (no download, no scikit-learn needed), trains with
binary cross-entropy on logits and Adam, prints progress and the accuracy on held-out
points, and saves the decision boundary to examples/out/moons.png.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import minigrad as mg  # noqa: E402

nn = mg.nn
F = mg.nn.functional
OUT = Path(__file__).resolve().parent / "out"


def make_moons(n: int = 400, noise: float = 0.1, seed: int = 0):
    """Two interleaving half circles (what sklearn.datasets.make_moons draws): X (n, 2) float32, y (n,) 0/1."""
    rng = np.random.default_rng(seed)
    n0 = n // 2
    n1 = n - n0
    t0 = np.linspace(0, np.pi, n0)
    t1 = np.linspace(0, np.pi, n1)
    X = np.concatenate([
        np.stack([np.cos(t0), np.sin(t0)], axis=1),
        np.stack([1 - np.cos(t1), 0.5 - np.sin(t1)], axis=1),
    ])
    y = np.concatenate([np.zeros(n0), np.ones(n1)])
    X += rng.normal(scale=noise, size=X.shape)
    perm = rng.permutation(n)
    return X[perm].astype(np.float32), y[perm].astype(np.float32)


def make_model(seed: int = 0) -> nn.Module:
    mg.manual_seed(seed)
    return nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 1))


def accuracy(model, X, y) -> float:
    with mg.no_grad():
        logits = model(mg.tensor(X)).numpy()[:, 0]
    return float(((logits > 0) == (y > 0.5)).mean())


def plot_boundary(model, X, y, path: Path, acc: float) -> Path | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: skipping the picture (pip install matplotlib)")
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    lo, hi = X.min(axis=0) - 0.5, X.max(axis=0) + 0.5
    gx, gy = np.meshgrid(np.linspace(lo[0], hi[0], 300), np.linspace(lo[1], hi[1], 300))
    grid = np.stack([gx.ravel(), gy.ravel()], axis=1).astype(np.float32)
    with mg.no_grad():
        p = mg.sigmoid(model(mg.tensor(grid))).numpy().reshape(gx.shape)
    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    cs = ax.contourf(gx, gy, p, levels=np.linspace(0, 1, 11), cmap="RdBu_r", alpha=0.6)
    ax.contour(gx, gy, p, levels=[0.5], colors="k", linewidths=1.5)
    ax.scatter(X[:, 0], X[:, 1], c=y, cmap="RdBu_r", edgecolors="k", s=14, linewidths=0.4)
    fig.colorbar(cs, ax=ax, label="P(class 1)")
    ax.set_title(f"two moons, 2-16-16-1 MLP: test accuracy {acc:.1%}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main(steps: int = 1000, n: int = 400, noise: float = 0.1, lr: float = 0.01, seed: int = 0,
         out_dir: Path | str | None = None, plot: bool = True, log_every: int = 100,
         compile: bool = False) -> dict:  # noqa: A002
    """Train and evaluate; returns {"accuracy", "train_accuracy", "losses", "figure", "model", "optimizer",
    "compile_stats"}. ``compile``: capture the training step with ``mg.compile`` (docs/compile.md)."""
    out_dir = OUT if out_dir is None else Path(out_dir)
    X, y = make_moons(n, noise, seed)
    Xte, yte = make_moons(n, noise, seed + 1)  # fresh points from the same distribution
    print(f"two moons: {n} training points, {n} test points, noise {noise}")
    model = make_model(seed)
    print(model)
    opt = mg.optim.Adam(model.parameters(), lr=lr)
    x, t = mg.tensor(X), mg.tensor(y.reshape(-1, 1))

    def train_step(x, t):  # the batch comes in as arguments: a compiled step replays on what it is given
        opt.zero_grad()
        loss = F.binary_cross_entropy_with_logits(model(x), t)
        loss.backward()
        opt.step()
        return loss

    train_step = mg.compile(train_step) if compile else train_step
    losses = []
    t0 = time.perf_counter()
    for step in range(1, steps + 1):
        loss = train_step(x, t)  # full batch
        losses.append(loss.item())  # outside the step: a compiled step cannot read values
        if step % log_every == 0 or step == steps:
            print(f"step {step:5d}  loss {losses[-1]:.4f}  train accuracy {accuracy(model, X, y):.1%}")
    dt = time.perf_counter() - t0
    acc = accuracy(model, Xte, yte)
    train_acc = accuracy(model, X, y)
    fig = plot_boundary(model, Xte, yte, out_dir / "moons.png", acc) if plot else None
    print(f"trained {steps} steps in {dt:.1f}s")
    if fig:
        print(f"decision boundary: {fig}")
    print(f"test accuracy: {acc:.2%}")
    return {"accuracy": acc, "train_accuracy": train_acc, "losses": losses, "figure": fig, "model": model,
            "optimizer": opt, "compile_stats": train_step.stats if compile else None}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description="Train a small MLP on two moons.", formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--steps", type=int, default=1000, help="training steps")
    ap.add_argument("--n", type=int, default=400, help="number of points")
    ap.add_argument("--noise", type=float, default=0.1, help="noise of the moons")
    ap.add_argument("--lr", type=float, default=0.01, help="Adam's learning rate")
    ap.add_argument("--seed", type=int, default=0, help="the data and the initialisation")
    ap.add_argument("--compile", action="store_true", help="capture the training step with mg.compile")
    a = ap.parse_args()
    main(steps=a.steps, n=a.n, noise=a.noise, lr=a.lr, seed=a.seed, compile=a.compile)
