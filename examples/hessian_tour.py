"""A tour of second derivatives with mg.func: Newton's method, and the Hessian of a network's loss.

    python examples/hessian_tour.py                 # a second or two; the picture in examples/out/
    python examples/hessian_tour.py --out h.png --no-plot

1. Newton's method on the Rosenbrock function from (-1.2, 1): each step solves H p = -g with
   the gradient from ``mg.func.grad_and_value`` and the Hessian from ``mg.func.hessian``
   (forward over reverse), halving the step until the loss drops. About twenty steps reach the
   minimum at (1, 1) to machine precision, where a thousand steps of gradient descent are still
   crawling along the valley.
2. A 2-8-1 tanh network (33 parameters, held in one flat vector) is fitted to a small
   regression, and the Hessian of its loss is taken at the fitted point: 33 forward-over-reverse
   passes. It is checked against reverse over reverse (``jacrev(jacrev(loss))``) and against a
   Hessian-vector product (``mg.func.hvp``), and drawn as a heat map with its layers' blocks
   marked (matplotlib, headless).
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

F = mg.func
OUT = Path(__file__).resolve().parent / "out"
SIZES = (2, 8, 1)  # the network: 2 inputs, 8 tanh units, 1 output
GD_STEPS = 1000  # gradient descent on Rosenbrock, for comparison


# -- 1. Newton's method -----------------------------------------------------------------------------

def rosenbrock(x):
    """(1 - x0)² + 100 (x1 - x0²)²: a curved valley whose minimum is at (1, 1)."""
    return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2


def newton(f, x0, steps: int = 40, tol: float = 1e-12):
    """Damped Newton: p solves H p = -g (H shifted to positive definite where it is not), then
    the step is halved until the loss drops enough (Armijo). Returns the losses and the points."""
    x = mg.tensor(np.asarray(x0, dtype=np.float64))
    value_and_grad = F.grad_and_value(f)
    hess = F.hessian(f)
    losses, points = [], [x.numpy().copy()]
    for _ in range(steps):
        g, loss = value_and_grad(x)
        losses.append(loss.item())
        g = g.numpy()
        if np.linalg.norm(g) < tol:
            break
        H = hess(x).numpy()
        lo = np.linalg.eigvalsh(H)[0]
        if lo <= 0:  # not a minimum's curvature here: shift the spectrum up
            H = H + (1e-3 - lo) * np.eye(len(g))
        p = np.linalg.solve(H, -g)
        t = 1.0
        while t > 1e-10 and f(x + t * mg.tensor(p)).item() > losses[-1] + 1e-4 * t * (g @ p):
            t /= 2
        x = x + t * mg.tensor(p)
        points.append(x.numpy().copy())
    return losses, points


def gradient_descent(f, x0, steps: int, lr: float = 1e-3):
    """Plain gradient descent with the largest step that stays stable here, for comparison."""
    x = mg.tensor(np.asarray(x0, dtype=np.float64))
    g = F.grad(f)
    for _ in range(steps):
        x = x - lr * g(x)
    return f(x).item()


# -- 2. the Hessian of a network's loss ---------------------------------------------------------------

def layout(sizes=SIZES):
    """[(name, slice of the flat vector, shape)] for each layer's weight and bias."""
    out, at = [], 0
    for k, (i, o) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
        for name, shape in ((f"W{k + 1}", (i, o)), (f"b{k + 1}", (o,))):
            n = int(np.prod(shape))
            out.append((name, slice(at, at + n), shape))
            at += n
    return out


def mlp_loss(theta, x, y, sizes=SIZES):
    """Mean squared error of a tanh network whose parameters are the flat vector ``theta``."""
    parts = {name: theta[s].reshape(shape) for name, s, shape in layout(sizes)}
    h = x
    for k in range(1, len(sizes)):
        h = h @ parts[f"W{k}"] + parts[f"b{k}"]
        if k < len(sizes) - 1:
            h = mg.tanh(h)
    return ((h[:, 0] - y) ** 2).mean()


def make_data(n: int = 48, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.5, 1.5, (n, 2))
    y = np.sin(2 * x[:, 0]) * x[:, 1] + 0.05 * rng.standard_normal(n)
    return mg.tensor(x), mg.tensor(y)


def fit(x, y, steps: int = 300, lr: float = 0.2, seed: int = 0):
    """Gradient descent on the flat parameter vector; returns it and the losses."""
    rng = np.random.default_rng(seed)
    theta = np.concatenate([rng.standard_normal(s.stop - s.start) * (1 / np.sqrt(shape[0]) if len(shape) == 2 else 0.0)
                            for _, s, shape in layout()])
    theta = mg.tensor(theta)
    step = F.grad_and_value(mlp_loss)
    losses = []
    for _ in range(steps):
        g, loss = step(theta, x, y)
        losses.append(loss.item())
        theta = theta - lr * g
    return theta, losses


def draw(H, newton_losses, gd_loss, path: Path, eig) -> Path | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.colors import SymLogNorm
    except ImportError:
        print("matplotlib is not installed: skipping the picture (pip install matplotlib)")
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(11, 4.8), gridspec_kw={"width_ratios": [1, 1.25]})
    ax0.semilogy(np.maximum(newton_losses, 1e-32), "o-", ms=4, label="Newton (mg.func.hessian)")
    ax0.axhline(gd_loss, color="gray", ls="--", label=f"gradient descent after {GD_STEPS} steps")
    ax0.set_xlabel("Newton step")
    ax0.set_ylabel("Rosenbrock loss")
    ax0.set_title("Newton's method from (-1.2, 1)")
    ax0.legend(fontsize=8)
    m = float(np.abs(H).max())
    im = ax1.imshow(H, cmap="RdBu_r", norm=SymLogNorm(linthresh=m * 1e-3, vmin=-m, vmax=m))
    ticks, labels = [], []
    for name, s, _ in layout():
        ax1.axhline(s.stop - 0.5, color="k", lw=0.6)
        ax1.axvline(s.stop - 0.5, color="k", lw=0.6)
        ticks.append((s.start + s.stop - 1) / 2)
        labels.append(name)
    ax1.set_xticks(ticks, labels)
    ax1.set_yticks(ticks, labels)
    fig.colorbar(im, ax=ax1, label="∂²loss / ∂θi ∂θj (symlog)")
    neg = int((eig < -1e-9 * abs(eig).max()).sum())
    ax1.set_title(f"Hessian of a 2-8-1 network's loss ({H.shape[0]} parameters)\n"
                  f"eigenvalues {eig.min():.2g} .. {eig.max():.2g}, {neg} negative")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(out: Path | str | None = None, plot: bool = True, seed: int = 0, fit_steps: int = 300) -> dict:
    """Run the tour; returns {"newton_losses", "newton_x", "gd_loss", "fit_losses", "hessian" (NumPy),
    "eigenvalues", "symmetry_error", "reverse_error", "hvp_error", "figure"}."""
    t0 = time.perf_counter()
    print("1. Newton's method on Rosenbrock's valley, from (-1.2, 1)")
    losses, points = newton(rosenbrock, [-1.2, 1.0])
    for k in sorted({0, 1, 2, len(losses) // 2, len(losses) - 1}):
        print(f"   step {k:2d}  loss {losses[k]:.3e}  x = ({points[k][0]:+.6f}, {points[k][1]:+.6f})")
    gd = gradient_descent(rosenbrock, [-1.2, 1.0], steps=GD_STEPS)
    print(f"   {len(losses) - 1} Newton steps reach loss {losses[-1]:.1e}; {GD_STEPS} steps of gradient "
          f"descent reach {gd:.1e}")

    print("2. the Hessian of a 2-8-1 tanh network's loss over its flat parameter vector")
    x, y = make_data(seed=seed)
    theta, fit_losses = fit(x, y, steps=fit_steps, seed=seed)
    print(f"   fitted by gradient descent ({fit_steps} steps of mg.func.grad_and_value): mse {fit_losses[0]:.3f} -> "
          f"{fit_losses[-1]:.3f}")

    def loss(theta):
        return mlp_loss(theta, x, y)

    H = F.hessian(loss)(theta).numpy()
    n = H.shape[0]
    print(f"   mg.func.hessian(loss)(theta): shape {H.shape} ({n} forward-over-reverse passes)")
    sym = float(np.abs(H - H.T).max())
    rr = float(np.abs(H - F.jacrev(F.jacrev(loss))(theta).numpy()).max())
    v = np.random.default_rng(seed).standard_normal(n)
    _, (hv,) = F.hvp(loss, (theta,), (mg.tensor(v),))
    hv_err = float(np.abs(hv.numpy() - H @ v).max())
    eig = np.linalg.eigvalsh((H + H.T) / 2)
    print(f"   max |H - Hᵀ| = {sym:.1e}; against reverse over reverse (jacrev(jacrev)): {rr:.1e}; "
          f"hvp(v) against H v: {hv_err:.1e}")
    print(f"   eigenvalues from {eig.min():.3g} to {eig.max():.3g} (condition {abs(eig).max() / abs(eig).min():.2g})")
    path = Path(out) if out is not None else OUT / "hessian_tour.png"
    figure = draw(H, losses, gd, path, eig) if plot else None
    if figure is not None:
        print(f"   heat map: {figure}")
    print(f"done in {time.perf_counter() - t0:.1f} s")
    return {"newton_losses": losses, "newton_x": points[-1], "gd_loss": gd, "fit_losses": fit_losses,
            "hessian": H, "eigenvalues": eig, "symmetry_error": sym, "reverse_error": rr, "hvp_error": hv_err,
            "figure": figure}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description="Newton's method and the Hessian of a small network's loss, "
                                             "with mg.func.hessian.",
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--out", default=str(OUT / "hessian_tour.png"), help="where to save the heat map (PNG)")
    ap.add_argument("--no-plot", action="store_true", help="skip the picture")
    ap.add_argument("--seed", type=int, default=0, help="the data and the initialisation")
    ap.add_argument("--fit-steps", type=int, default=300, help="gradient-descent steps fitting the network")
    a = ap.parse_args()
    main(out=a.out, plot=not a.no_plot, seed=a.seed, fit_steps=a.fit_steps)
