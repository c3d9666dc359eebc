"""A training curve: a small MLP fits a noisy sine with plain SGD; loss per step.

    python visualize/training_curve.py       # visualize/out/training_curve.png (+ .csv)

The plot needs matplotlib (the `examples` extra); without it only the CSV is written.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import command_line, mg, outdir_of  # noqa: E402

import numpy as np  # noqa: E402


def train(steps=300, lr=0.1, hidden=32, seed=0) -> list[float]:
    """Fit y = sin(3x) + noise with a 1-hidden-layer tanh MLP; returns the loss per step."""
    rng = np.random.default_rng(seed)
    xs = rng.uniform(-1, 1, (128, 1)).astype(np.float32)
    ys = (np.sin(3 * xs) + 0.05 * rng.standard_normal(xs.shape)).astype(np.float32)
    x, y = mg.tensor(xs), mg.tensor(ys)
    shapes = {"w1": (1, hidden), "b1": (hidden,), "w2": (hidden, 1), "b2": (1,)}
    params = {k: mg.tensor(rng.standard_normal(s) * (0.0 if k[0] == "b" else 1.0 / np.sqrt(s[0])),
                           dtype=mg.float32, requires_grad=True) for k, s in shapes.items()}
    losses = []
    for _ in range(steps):
        pred = (x @ params["w1"] + params["b1"]).tanh() @ params["w2"] + params["b2"]
        loss = ((pred - y) ** 2).mean()
        loss.backward()
        losses.append(loss.item())
        with mg.no_grad():  # a plain SGD step: new leaves, no graph
            params = {k: (p - lr * p.grad).requires_grad_() for k, p in params.items()}
    return losses


def main(outdir=None, steps=300) -> list[Path]:
    out = outdir_of(outdir)
    losses = train(steps)
    csv = out / "training_curve.csv"
    csv.write_text("step,loss\n" + "".join(f"{i},{v:.6g}\n" for i, v in enumerate(losses)), encoding="utf-8")
    paths = [csv]
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("training_curve: matplotlib is not installed (pip install matplotlib); wrote the CSV only")
        return paths
    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=100)
    ax.plot(losses, color="#3d85c6")
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("mean squared error")
    ax.set_title("MLP fitting sin(3x) with SGD (minigrad)")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    png = out / "training_curve.png"
    fig.savefig(png)
    plt.close(fig)
    paths.append(png)
    print(f"training_curve: loss {losses[0]:.4f} -> {losses[-1]:.4f} in {len(losses)} steps; wrote {png}")
    return paths


if __name__ == "__main__":
    a = command_line("Fit a noisy sine with a small MLP and plain SGD; draw the loss per step (a CSV without "
                     "matplotlib).", lambda ap: ap.add_argument("--steps", type=int, default=300, help="SGD steps"))
    main(outdir=a.out_dir, steps=a.steps)
