"""An MLP on scikit-learn's bundled 8x8 digits (1797 images, no download) to >= 97 % test accuracy.

    python examples/digits.py                 # 40 epochs, a few seconds
    python examples/digits.py --epochs 60 --seed 3

Prints a progress bar (tqdm) with the running loss, then the test accuracy, and saves the
loss curve to examples/out/digits_loss.png.

The model is 64-128-128-10 with ReLU and dropout, trained with softmax cross-entropy and
SGD with Nesterov momentum in float32, minibatches of 64, with a cosine learning-rate
schedule. Pixels are standardised with the training set's statistics. A quarter of each
class is held out for testing.
"""
from __future__ import annotations

import argparse
import contextlib
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
# 40 epochs at lr 0.1: >= 97 % test accuracy for every seed tried (--seed 0..7 picks both the
# split and the initialisation: 97.3 % to 99.1 %, mean 98.2 %; seed 0, the default, 97.8 %).
# Fewer epochs or a smaller rate sit right at 97 % on some.
EPOCHS = 40
LR = 0.1


def load_data(test_fraction: float = 0.25, seed: int = 0, limit: int | None = None):
    """(X_train, y_train, X_test, y_test): float32 pixels standardised with the training set's
    mean and spread, a stratified split."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X = (X / 16.0).astype(np.float32)
    y = y.astype(np.int64)
    rng = np.random.default_rng(seed)
    test = np.zeros(len(y), dtype=bool)
    for c in np.unique(y):  # the same share of every class in the test set
        idx = rng.permutation(np.flatnonzero(y == c))
        test[idx[: int(round(len(idx) * test_fraction))]] = True
    Xtr, ytr, Xte, yte = X[~test], y[~test], X[test], y[test]
    mu, sd = Xtr.mean(axis=0), Xtr.std(axis=0) + 0.2  # + 0.2: border pixels are almost constant
    Xtr, Xte = ((Xtr - mu) / sd).astype(np.float32), ((Xte - mu) / sd).astype(np.float32)
    if limit is not None:
        Xtr, ytr, Xte, yte = Xtr[:limit], ytr[:limit], Xte[:limit], yte[:limit]
    return Xtr, ytr, Xte, yte


def make_model(hidden: int = 128, dropout: float = 0.3, seed: int = 0) -> nn.Module:
    mg.manual_seed(seed)  # the initial weights and the dropout masks
    return nn.Sequential(
        nn.Linear(64, hidden), nn.ReLU(), nn.Dropout(dropout),
        nn.Linear(hidden, hidden), nn.ReLU(), nn.Dropout(dropout),
        nn.Linear(hidden, 10),
    )


def blas_threads(n: int | None):
    """Cap BLAS at ``n`` threads (threadpoolctl, which scikit-learn brings along; None: leave it).

    These matrices are small (64 x 128): more threads only add synchronisation, and where
    another program holds a core they wait for it. On a two-core machine with one core busy,
    one thread trains the digits MLP at about 0.5 ms per step, OpenBLAS's default two at 20.
    """
    if n is None:
        return contextlib.nullcontext()
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limits=n, user_api="blas")


def accuracy(model, X, y) -> float:
    model.eval()
    with mg.no_grad():
        pred = model(mg.tensor(X)).argmax(axis=1).numpy()
    model.train()
    return float((pred == y).mean())


def train(model, Xtr, ytr, epochs: int = EPOCHS, batch_size: int = 64, lr: float = LR, seed: int = 0,
          progress: bool = True, steps: int | None = None, drop_last: bool = False, compile: bool = False):  # noqa: A002
    """Minibatch training; returns (the loss of every step, the optimizer, the step function).
    ``steps`` caps the total (smoke tests). ``drop_last`` skips each epoch's last, smaller batch
    (a few samples: a noisy step). ``compile``: capture the step with ``mg.compile``
    (docs/compile.md); its ``.stats`` say how its calls ran."""
    opt = mg.optim.SGD(model.parameters(), lr=lr, momentum=0.9, nesterov=True, weight_decay=1e-4)
    n = len(ytr)
    if drop_last and n >= batch_size:
        n -= n % batch_size
    per_epoch = (n + batch_size - 1) // batch_size
    total = per_epoch * epochs if steps is None else min(steps, per_epoch * epochs)
    sched = mg.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(total, 1))

    def train_step(x, y):  # the batch comes in as arguments: a compiled step replays on what it is given
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        sched.step()
        return loss

    train_step = mg.compile(train_step) if compile else train_step
    rng = np.random.default_rng(seed)
    losses = []
    bar = _progress(total, progress)
    x_all, y_all = mg.tensor(Xtr), mg.tensor(ytr)
    for _epoch in range(epochs):
        order = rng.permutation(len(ytr))
        for i in range(0, n, batch_size):
            idx = order[i:i + batch_size]
            loss = train_step(x_all[idx], y_all[idx])
            losses.append(loss.item())  # outside the step: a compiled step cannot read values
            bar.update(1)
            if len(losses) % 10 == 0:
                bar.set_postfix(loss=f"{np.mean(losses[-10:]):.4f}")
            if len(losses) >= total:
                bar.close()
                return losses, opt, train_step
    bar.close()
    return losses, opt, train_step


class _Quiet:
    def update(self, n):
        pass

    def set_postfix(self, **kw):
        pass

    def close(self):
        pass


def _progress(total, show):
    if not show:
        return _Quiet()
    try:
        from tqdm.auto import tqdm
    except ImportError:
        print("(install tqdm for a progress bar: pip install tqdm)")
        return _Quiet()
    return tqdm(total=total, desc="training", unit="step", ncols=90)


def plot_losses(losses, path: Path, title: str = "digits MLP: training loss") -> Path | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: skipping the loss curve (pip install matplotlib)")
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(losses, lw=0.6, alpha=0.5, label="per step")
    k = max(1, len(losses) // 50)
    if len(losses) >= 2 * k:
        smooth = np.convolve(losses, np.ones(k) / k, mode="valid")
        ax.plot(np.arange(k - 1, len(losses)), smooth, lw=1.8, label=f"mean of {k}")
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main(epochs: int = EPOCHS, batch_size: int = 64, lr: float = LR, steps: int | None = None,
         limit: int | None = None, out_dir: Path | str | None = None, plot: bool = True, progress: bool = True,
         seed: int = 0, threads: int | None = 1, compile: bool = False) -> dict:  # noqa: A002
    """Train and evaluate; returns {"test_accuracy", "train_accuracy", "losses", "seconds", "figure", "model",
    "optimizer", "compile_stats"}. ``threads``: BLAS threads while training (see ``blas_threads``);
    ``compile``: capture the training step with ``mg.compile``."""
    out_dir = OUT if out_dir is None else Path(out_dir)
    Xtr, ytr, Xte, yte = load_data(seed=seed, limit=limit)
    print(f"digits: {len(ytr)} training and {len(yte)} test images of 8x8 pixels, 10 classes")
    model = make_model(seed=seed)
    print(model)
    t0 = time.perf_counter()
    with blas_threads(threads):
        losses, opt, step = train(model, Xtr, ytr, epochs=epochs, batch_size=batch_size, lr=lr, seed=seed,
                                  progress=progress, steps=steps, compile=compile)
    dt = time.perf_counter() - t0
    train_acc = accuracy(model, Xtr, ytr)
    test_acc = accuracy(model, Xte, yte)
    print(f"trained {len(losses)} steps in {dt:.1f}s ({dt / max(len(losses), 1) * 1e3:.2f} ms/step); "
          f"final loss {np.mean(losses[-10:]):.4f}")
    fig = plot_losses(losses, out_dir / "digits_loss.png") if plot else None
    if fig:
        print(f"loss curve: {fig}")
    print(f"train accuracy {train_acc:.2%}")
    print(f"test accuracy: {test_acc:.2%}")
    return {"test_accuracy": test_acc, "train_accuracy": train_acc, "losses": losses, "seconds": dt,
            "figure": fig, "model": model, "optimizer": opt, "compile_stats": step.stats if compile else None}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description="Train an MLP on the 8x8 digits.", formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--epochs", type=int, default=EPOCHS, help="passes over the training set")
    ap.add_argument("--batch-size", type=int, default=64, help="images per batch")
    ap.add_argument("--lr", type=float, default=LR, help="SGD's learning rate (cosine schedule)")
    ap.add_argument("--seed", type=int, default=0, help="the split and the initialisation")
    ap.add_argument("--threads", type=int, default=1, help="BLAS threads while training (0: the library's default)")
    ap.add_argument("--compile", action="store_true", help="capture the training step with mg.compile")
    a = ap.parse_args()
    main(epochs=a.epochs, batch_size=a.batch_size, lr=a.lr, seed=a.seed, threads=a.threads or None,
         compile=a.compile)
