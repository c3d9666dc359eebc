"""Per-sample gradients and model ensembles with ``mg.func.vmap``, on digits.py's MLP and data.

    python examples/per_sample_grads.py               # a couple of seconds
    python examples/per_sample_grads.py --steps 400 --noise 0.8

Two uses of vmap, written as PyTorch's torch.func tutorials write them:

1. **DP-SGD.** ``vmap(grad(loss_fn), in_dims=(None, 0, 0))(params, x, y)`` gives every example's
   gradient in one batched pass (``loss_fn`` runs the model on one example through
   ``functional_call``). Each example's gradient is clipped to norm ``--clip`` before they are
   summed, and Gaussian noise of ``--noise`` times that norm is added: DP-SGD's step (Abadi et
   al., 2016). No privacy accounting is done here; the point is the per-example clipping,
   which a batch's gradient cannot give.
2. **An ensemble.** ``stack_module_state`` stacks five models' parameters on a new leading axis;
   ``vmap(functional_call, in_dims=(0, 0, None))`` runs all five on one batch at once, and one
   ``backward()`` trains them together with one optimizer over the stacked leaves.

The MLP is digits.py's (64-128-128-10, ReLU; dropout off: a per-example gradient has no use for
it), in float32, on the same split.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import minigrad as mg  # noqa: E402
from digits import load_data, make_model  # noqa: E402

F = mg.nn.functional
vmap, grad, functional_call = mg.func.vmap, mg.func.grad, mg.func.functional_call


def per_sample_grads(model, params, x, y):
    """Every example's gradient of the loss: a dict of Tensors shaped ``(batch,) + parameter.shape``."""

    def loss_fn(p, xi, yi):  # one example, as a batch of one
        return F.cross_entropy(functional_call(model, p, (xi[None],)), yi[None])

    return vmap(grad(loss_fn), in_dims=(None, 0, 0))(params, x, y)


def dp_sgd_step(model, params, x, y, lr, clip, noise):
    """One DP-SGD step: per-example gradients clipped to norm ``clip``, summed, noised, averaged."""
    g = per_sample_grads(model, params, x, y)
    n = len(y)
    sq = sum((v.reshape(n, -1) ** 2).sum(1) for v in g.values())  # each example's squared norm
    scale = mg.clamp(clip / (sq.sqrt() + 1e-6), max=1.0)
    new = {}
    for k, v in g.items():
        clipped = (v * scale.reshape((n,) + (1,) * (v.ndim - 1))).sum(0)
        noisy = clipped + mg.randn(*clipped.shape, dtype=clipped.dtype) * (noise * clip)
        new[k] = params[k] - lr * noisy / n
    return new, float(sq.sqrt().mean())


def accuracy(logits, y) -> float:
    return float((logits.argmax(axis=-1).numpy() == y).mean())


def train_dp(model, Xtr, ytr, Xte, yte, steps, batch_size, lr, clip, noise, seed, log):
    params = {k: v.detach() for k, v in model.named_parameters()}
    rng = np.random.default_rng(seed)
    x_all, y_all = mg.tensor(Xtr), mg.tensor(ytr)
    # the per-example gradients add up to the batch's gradient (a check of vmap(grad))
    x0, y0 = x_all[:batch_size], y_all[:batch_size]
    g = per_sample_grads(model, params, x0, y0)
    whole = grad(lambda p: F.cross_entropy(functional_call(model, p, (x0,)), y0, reduction="sum"))(params)
    check = max(float(np.abs(g[k].sum(0).numpy() - whole[k].numpy()).max()) for k in g)
    norms = []
    for step in range(steps):
        idx = rng.choice(len(ytr), batch_size, replace=False)
        params, norm = dp_sgd_step(model, params, x_all[idx], y_all[idx], lr, clip, noise)
        norms.append(norm)
        if log and (step + 1) % max(steps // 4, 1) == 0:
            log(f"  step {step + 1:4d}: mean per-example gradient norm {np.mean(norms[-20:]):.3f}")
    with mg.no_grad():
        acc = accuracy(functional_call(model, params, (mg.tensor(Xte),)), yte)
    return params, acc, check, norms


def train_ensemble(models, Xtr, ytr, Xte, yte, steps, batch_size, lr, seed, log):
    params, buffers = mg.func.stack_module_state(models)  # leaves shaped (5, ...)
    base = models[0]  # its structure runs every member: functional_call swaps the tensors in

    def run(p, b, x):
        return functional_call(base, (p, b), (x,))

    ensemble = vmap(run, in_dims=(0, 0, None))  # (models, batch, classes)
    opt = mg.optim.SGD(params.values(), lr=lr, momentum=0.9)
    rng = np.random.default_rng(seed)
    x_all, y_all = mg.tensor(Xtr), mg.tensor(ytr)
    k = len(models)
    for step in range(steps):
        idx = rng.choice(len(ytr), batch_size, replace=False)
        logits = ensemble(params, buffers, x_all[idx])
        targets = mg.cat([y_all[idx]] * k)  # the batch's labels, once per model
        loss = F.cross_entropy(logits.reshape(-1, 10), targets) * k  # each model's mean loss, summed
        opt.zero_grad()
        loss.backward()
        opt.step()
        if log and (step + 1) % max(steps // 4, 1) == 0:
            log(f"  step {step + 1:4d}: summed loss {loss.item():.4f}")
    with mg.no_grad():
        logits = ensemble(params, buffers, mg.tensor(Xte))
    each = [accuracy(logits[i], yte) for i in range(k)]
    return params, each, accuracy(logits.mean(0), yte)


def main(steps: int = 150, ensemble_steps: int = 150, batch_size: int = 64, lr: float = 0.5, clip: float = 1.0,
         noise: float = 0.5, members: int = 5, seed: int = 0, limit: int | None = None, log=print) -> dict:
    """Both parts; returns {"dp_accuracy", "sum_check", "grad_norms", "member_accuracies",
    "ensemble_accuracy", "seconds"}."""
    Xtr, ytr, Xte, yte = load_data(seed=seed, limit=limit)
    log = log or (lambda *a: None)
    mg.manual_seed(seed)
    t0 = time.perf_counter()
    log(f"DP-SGD: {steps} steps of {batch_size} examples, each example's gradient clipped to {clip}, "
        f"noise {noise} x {clip}")
    model = make_model(dropout=0.0, seed=seed)
    _, dp_acc, check, norms = train_dp(model, Xtr, ytr, Xte, yte, steps, batch_size, lr, clip, noise, seed, log)
    log(f"  per-example gradients sum to the batch's gradient: max difference {check:.1e}")
    log(f"  test accuracy: {dp_acc:.2%}")
    t1 = time.perf_counter()
    log(f"an ensemble of {members} models trained at once (stack_module_state + vmap), {ensemble_steps} steps")
    models = [make_model(dropout=0.0, seed=seed + 1 + i) for i in range(members)]
    _, each, ens = train_ensemble(models, Xtr, ytr, Xte, yte, ensemble_steps, batch_size, 0.05, seed, log)
    log("  members' test accuracy: " + ", ".join(f"{a:.2%}" for a in each))
    log(f"  the ensemble's (mean logits): {ens:.2%}")
    dt = time.perf_counter() - t0
    log(f"{dt:.1f}s ({t1 - t0:.1f}s DP-SGD, {dt - (t1 - t0):.1f}s the ensemble)")
    return {"dp_accuracy": dp_acc, "sum_check": check, "grad_norms": norms, "member_accuracies": each,
            "ensemble_accuracy": ens, "seconds": dt}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description="Per-sample gradients (DP-SGD) and an ensemble with mg.func.vmap.",
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--steps", type=int, default=150, help="DP-SGD steps")
    ap.add_argument("--ensemble-steps", type=int, default=150, help="the ensemble's training steps")
    ap.add_argument("--batch-size", type=int, default=64, help="examples per step")
    ap.add_argument("--lr", type=float, default=0.5, help="DP-SGD's learning rate")
    ap.add_argument("--clip", type=float, default=1.0, help="each example's gradient norm is clipped to this")
    ap.add_argument("--noise", type=float, default=0.5, help="the noise's standard deviation, in units of --clip")
    ap.add_argument("--members", type=int, default=5, help="models in the ensemble")
    ap.add_argument("--seed", type=int, default=0, help="the split, the initialisations, the batches and the noise")
    a = ap.parse_args()
    main(steps=a.steps, ensemble_steps=a.ensemble_steps, batch_size=a.batch_size, lr=a.lr, clip=a.clip,
         noise=a.noise, members=a.members, seed=a.seed)
