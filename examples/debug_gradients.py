"""Debugging gradients: find the wrong rule, the NaN, and the layer where gradients vanish.

    python examples/debug_gradients.py          # writes into examples/out/

1. A wrong backward. A small MLP uses a hand-written ``Swish`` (an ``autograd.Function``)
   whose backward forgets a term. ``mg.gradcheck`` fails, and with ``locate=True`` (the
   default) its message begins with the op that is wrong, its position on the tape and the
   line of this file that called it; ``mg.autograd.check_ops`` prints the whole table.
2. A NaN. A hand-written normalisation divides by the standard deviation of each row,
   with the epsilon outside the square root; one input row is all zeros, so its std is
   sqrt(0): the loss is finite, its gradient is not (sqrt'(0) = inf). Under
   ``mg.autograd.detect_anomaly()`` backward stops at the first op whose gradient turns
   NaN/inf and names its line; the graph is saved with that op and its path in red.
   Without any epsilon the NaN appears already in forward (0 / 0): ``check_forward=True``
   names that op.
3. Vanishing gradients. A deep tanh network with small weights: the gradient shrinks layer
   after layer. ``mg.viz.grad_flow`` draws |grad| per parameter on a log axis.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import minigrad as mg  # noqa: E402

OUT = Path(__file__).resolve().parent / "out"


# -- 1. a wrong backward ------------------------------------------------------------------

class Swish(mg.autograd.Function):
    """swish(x) = x sigmoid(x); its derivative is s + x s (1 - s). The bug: backward returns g s."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x.sigmoid()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        s = x.sigmoid()
        return g * s  # BUG: should be g * (s + x * s * (1 - s))


def mlp_loss(x, w1, b1, w2):
    h = Swish.apply(x @ w1 + b1)
    return ((h @ w2).tanh() ** 2).mean()


def wrong_backward(log, batch=4, hidden=5):
    rng = np.random.default_rng(0)
    x = mg.tensor(rng.standard_normal((batch, 3)))
    w1 = mg.tensor(rng.standard_normal((3, hidden)), requires_grad=True)
    b1 = mg.tensor(rng.standard_normal(hidden), requires_grad=True)
    w2 = mg.tensor(rng.standard_normal((hidden, 2)), requires_grad=True)
    try:
        mg.gradcheck(mlp_loss, (x, w1, b1, w2))
        raise AssertionError("gradcheck passed a wrong backward")
    except mg.GradcheckError as e:
        message = str(e)
    log("1. gradcheck(locate=True) on an MLP with a wrong Swish backward:")
    log("   " + message.splitlines()[0])
    report = mg.autograd.check_ops(mlp_loss, x, w1, b1, w2)
    log("   every op checked alone (mg.autograd.check_ops):")
    log("\n".join("   " + line for line in str(report).splitlines()))
    return message, report


# -- 2. a NaN -----------------------------------------------------------------------------

def normalise(h):
    mu = h.mean(axis=1, keepdims=True)
    std = ((h - mu) ** 2).mean(axis=1, keepdims=True).sqrt()  # BUG: sqrt'(0) is inf
    return (h - mu) / (std + 1e-5)  # the epsilon belongs inside the sqrt


def normalise_no_eps(h):
    mu = h.mean(axis=1, keepdims=True)
    std = ((h - mu) ** 2).mean(axis=1, keepdims=True).sqrt()
    return (h - mu) / std  # BUG: a constant row gives 0 / 0 already in forward


def nan_model(out_dir, log):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 3))
    x[2] = 0.0  # an all-zero row (padding, a dead sensor...): its activations are constant
    x = mg.tensor(x)
    w = mg.tensor(rng.standard_normal((3, 6)), requires_grad=True)
    with mg.autograd.detect_anomaly():
        loss = (normalise((x @ w).relu()) ** 2).mean()  # the loss is finite...
        try:
            loss.backward()                                # ...its gradient is not
            raise AssertionError("no anomaly found")
        except mg.AnomalyError as err:
            error = err
    log("2. detect_anomaly on a model whose gradient is NaN (the loss is finite):")
    log("   " + str(error).splitlines()[0])
    if shutil.which("dot"):
        path = mg.viz.save(loss, Path(out_dir) / "nan_graph.svg", highlight=error.node)
    else:
        path = mg.viz.save(loss, Path(out_dir) / "nan_graph.dot", highlight=error.node)
        log("   (Graphviz's dot is not installed: saved the DOT text instead)")
    log(f"   the graph, with that op and its path in red: {path}")
    # without any epsilon the NaN appears in forward: check_forward=True names its op
    try:
        with mg.autograd.detect_anomaly(check_forward=True):
            (normalise_no_eps((x @ w).relu()) ** 2).mean().backward()
        raise AssertionError("no anomaly found")
    except mg.AnomalyError as err:
        forward_error = err
    log("   with check_forward=True, the same model without epsilon:")
    log("   " + str(forward_error).splitlines()[0])
    return error, path, forward_error


# -- 3. vanishing gradients ---------------------------------------------------------------

def vanishing(out_dir, log, depth=12, width=16, plot=True):
    mg.manual_seed(0)
    layers = []
    for _ in range(depth):
        lin = mg.nn.Linear(width, width)
        with mg.no_grad():
            lin.weight.data[...] *= 0.5  # small weights: each layer shrinks the gradient
        layers += [lin, mg.nn.Tanh()]
    model = mg.nn.Sequential(*layers, mg.nn.Linear(width, 1))
    x = mg.randn(8, width, seed=2)
    loss = model(x).pow(2).mean()
    loss.backward()
    norms = [float(np.linalg.norm(mg.backend.to_numpy(p.grad.data))) for n, p in model.named_parameters()
             if n.endswith("weight")]
    log(f"3. a {depth}-layer tanh network: |grad| of the first layer's weight is "
        f"{norms[0] / norms[-1]:.1e} times the last one's")
    path = None
    if plot:
        try:
            path = Path(out_dir) / "grad_flow.png"
            mg.viz.grad_flow(model, path=path, title=f"{depth} tanh layers: vanishing gradients")
            log(f"   gradient flow per parameter: {path}")
        except ImportError:
            path = None
            log("   (matplotlib is not installed: skipped the gradient-flow picture)")
    return norms, path


def main(out_dir=OUT, depth=12, plot=True, log=print):
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    message, report = wrong_backward(log)
    log("")
    error, graph_path, forward_error = nan_model(out_dir, log)
    log("")
    norms, flow_path = vanishing(out_dir, log, depth=depth, plot=plot)
    return {"message": message, "report": report, "error": error, "forward_error": forward_error,
            "graph": graph_path, "norms": norms,
            "grad_flow": flow_path}


if __name__ == "__main__":
    import argparse
    import warnings

    ap = argparse.ArgumentParser(description="Debugging gradients: find a wrong backward (gradcheck, check_ops), "
                                             "a NaN (detect_anomaly) and vanishing gradients (grad_flow).",
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--out-dir", default=str(OUT), help="where the graph and the grad-flow picture go")
    ap.add_argument("--depth", type=int, default=12, help="layers of the deep tanh network")
    ap.add_argument("--no-plot", action="store_true", help="skip the grad-flow picture (matplotlib)")
    a = ap.parse_args()
    warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's "invalid value" is what we are hunting
    main(out_dir=a.out_dir, depth=a.depth, plot=not a.no_plot)
