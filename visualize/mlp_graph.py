"""The graph of a small MLP's loss, before and after backward; its tape and its profile.

    python visualize/mlp_graph.py            # pictures in visualize/out/

Writes mlp_before.svg (ops, shapes, where gradients are summed back), mlp_after.svg
(the same graph after backward: every parameter shows its gradient's shape and
norm), mlp_modules.svg (each layer collapsed into one box), mlp_tape.txt and
mlp_profile.txt. Uses mg.nn when it is there, plain tensors otherwise.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import command_line, draw, mg, outdir_of, write_text  # noqa: E402

import numpy as np  # noqa: E402


def make_mlp(sizes=(4, 8, 3), seed=0):
    """(forward, params): mg.nn.Sequential of Linear/ReLU when mg.nn exists, else plain tensors."""
    try:
        from minigrad import nn

        mg.manual_seed(seed)
        layers = []
        for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
            layers.append(nn.Linear(a, b))
            if i < len(sizes) - 2:
                layers.append(nn.ReLU())
        model = nn.Sequential(*layers)
        return model, model
    except (ImportError, AttributeError):
        pass
    rng = np.random.default_rng(seed)
    params = {}
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
        params[f"fc{i + 1}.weight"] = mg.tensor(rng.standard_normal((a, b)) / np.sqrt(a), dtype=mg.float32,
                                                requires_grad=True)
        params[f"fc{i + 1}.bias"] = mg.tensor(np.zeros(b), dtype=mg.float32, requires_grad=True)
    n = len(sizes) - 1

    def forward(x):
        for i in range(n):
            x = x @ params[f"fc{i + 1}.weight"] + params[f"fc{i + 1}.bias"]
            if i < n - 1:
                x = x.relu()
        return x

    return forward, params


def cross_entropy(logits, y):
    try:
        return mg.nn.functional.cross_entropy(logits, y)
    except (ImportError, AttributeError):
        return -logits.log_softmax(axis=-1)[mg.arange(len(y)), y].mean()


def main(outdir=None) -> list[Path]:
    out = outdir_of(outdir)
    rng = np.random.default_rng(0)
    x = mg.tensor(rng.standard_normal((16, 4)), dtype=mg.float32)
    y = mg.tensor(rng.integers(0, 3, 16))
    forward, params = make_mlp()
    prof = mg.autograd.profile()
    with prof:
        loss = cross_entropy(forward(x), y)
    paths = draw(loss, out, "mlp_before", params=params, title="MLP loss, before backward")
    paths.append(write_text(out, "mlp_tape.txt", str(mg.autograd.tape(loss))))
    with prof:  # the same profile again: forward and backward in one table
        loss.backward()
    paths += draw(loss, out, "mlp_after", params=params, title="MLP loss, after backward")
    paths += draw(loss, out, "mlp_modules", params=params, collapse_modules=True, rankdir="LR",
                  title="MLP loss, one box per layer")
    paths.append(write_text(out, "mlp_profile.txt", prof.table()))
    print(f"mlp_graph: loss {loss.item():.4f}; wrote {len(paths)} files to {out}")
    return paths


if __name__ == "__main__":
    main(outdir=command_line("Draw a small MLP's loss graph before and after backward; write its tape and profile.")
         .out_dir)
