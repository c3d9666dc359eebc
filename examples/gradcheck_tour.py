"""A tour of gradcheck: prove a custom op's backward, and see what a wrong one looks like.

    python examples/gradcheck_tour.py

1. A user-defined op, ``mg.autograd.Function`` (PyTorch's habit): softplus,
   log(1 + e^x), computed stably, with a hand-written backward.
2. ``mg.gradcheck`` compares that backward with central finite differences in float64,
   element by element; ``mg.gradgradcheck`` does the same for the second derivative.
3. The same op with a classic bug in backward (the sigmoid of -x instead of x): gradcheck
   raises ``mg.GradcheckError`` naming the input, the element, and the analytic and
   numeric values, so you know where to look.
4. The op inside a model: a layer that uses it trains like any built-in one.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import minigrad as mg  # noqa: E402

nn = mg.nn
F = mg.nn.functional


class Softplus(mg.autograd.Function):
    """softplus(x) = log(1 + e^x) = max(x, 0) + log(1 + e^-|x|); its derivative is sigmoid(x)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return mg.maximum(x, 0.0) + mg.log(1 + mg.exp(-abs(x)))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * mg.sigmoid(x)  # written with minigrad ops: second derivatives work too


class BuggySoftplus(Softplus):
    """The same forward; backward uses sigmoid(-x), a sign slip that is easy to make."""

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * mg.sigmoid(-x)


class SoftplusMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(2, 16)
        self.fc2 = nn.Linear(16, 1)

    def forward(self, x):
        return self.fc2(Softplus.apply(self.fc1(x)))


def main(steps: int = 200, seed: int = 0, compile: bool = False) -> dict:  # noqa: A002
    """Run the tour; returns {"good": bool, "bad_message": str, "final_loss": float, "losses", "model",
    "optimizer", "compile_stats"}. ``compile``: capture part 4's training step with ``mg.compile``
    (a Function's ops are captured like any others)."""
    rng = np.random.default_rng(seed)
    x = mg.tensor(rng.standard_normal((3, 4)) * 3, requires_grad=True)  # float64 for gradcheck

    print("1. a custom op: Softplus(mg.autograd.Function)")
    y = Softplus.apply(x)
    ref = np.logaddexp(0, x.detach().numpy())
    print(f"   forward matches log(1 + e^x): max error {np.abs(y.detach().numpy() - ref).max():.1e}")

    print("2. gradcheck: analytic backward vs central finite differences (float64)")
    good = mg.gradcheck(Softplus.apply, (x,))
    print(f"   mg.gradcheck(Softplus.apply, (x,)) -> {good}")
    good2 = mg.gradgradcheck(Softplus.apply, (x,))
    print(f"   mg.gradgradcheck(Softplus.apply, (x,)) -> {good2}   (second derivatives: backward is differentiable)")
    fast = mg.gradcheck(Softplus.apply, (x,), fast=True)
    print(f"   fast=True checks one random direction instead of every element -> {fast}")

    print("3. a wrong backward: BuggySoftplus uses sigmoid(-x)")
    try:
        mg.gradcheck(BuggySoftplus.apply, (x,))
        bad_message = ""
        print("   (unexpectedly passed)")
    except mg.GradcheckError as e:
        bad_message = str(e)
        print("   mg.GradcheckError:")
        print("   " + bad_message)
    ok = mg.gradcheck(BuggySoftplus.apply, (x,), raise_exception=False)
    print(f"   raise_exception=False returns {ok} instead of raising")

    print("4. the op in a model: a 2-16-1 network with Softplus, fit to y = sin(x0) * x1")
    mg.manual_seed(seed)
    model = SoftplusMLP()
    X = rng.uniform(-2, 2, (256, 2)).astype(np.float32)
    t = (np.sin(X[:, :1]) * X[:, 1:]).astype(np.float32)
    opt = mg.optim.Adam(model.parameters(), lr=0.02)
    xt, tt = mg.tensor(X), mg.tensor(t)

    def train_step(x, t):  # the batch comes in as arguments: a compiled step replays on what it is given
        opt.zero_grad()
        loss = F.mse_loss(model(x), t)
        loss.backward()
        opt.step()
        return loss

    train_step = mg.compile(train_step) if compile else train_step
    losses = []
    for step in range(1, steps + 1):
        losses.append(train_step(xt, tt).item())  # outside the step: a compiled step cannot read values
        if step % max(1, steps // 4) == 0 or step == steps:
            print(f"   step {step:4d}  mse {losses[-1]:.4f}")
    final = losses[-1] if losses else float("nan")
    print(f"gradients verified: {good and good2}; the buggy backward was caught: {bool(bad_message)}; "
          f"final training mse: {final:.4f}")
    return {"good": bool(good and good2), "bad_message": bad_message, "final_loss": final, "losses": losses,
            "model": model, "optimizer": opt, "compile_stats": train_step.stats if compile else None}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description="A tour of gradcheck, ending with a small model trained with a custom op.", formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--steps", type=int, default=200, help="training steps of the small model at the end")
    ap.add_argument("--seed", type=int, default=0, help="the data and the initialisation")
    ap.add_argument("--compile", action="store_true", help="capture the training step with mg.compile")
    a = ap.parse_args()
    main(steps=a.steps, seed=a.seed, compile=a.compile)
