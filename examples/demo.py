"""The README demo: train an MLP on the bundled 8x8 digits and look at what it computed.

    python examples/demo.py
    python examples/demo.py --no-compile     # the same numbers, each step run eagerly

1. trains the digits MLP (examples/digits.py) with a progress bar and prints its test accuracy;
   the training step runs through ``mg.compile`` (docs/compile.md): captured once, then replayed;
2. saves the loss curve: examples/out/digits_loss.png;
3. saves the graph of one training step's loss, after backward (every parameter with its
   gradient's shape and norm): examples/out/digits_step_graph.svg, via ``mg.viz``, and the
   same step as an interactive page, examples/out/step.html (``mg.viz.html``: no Graphviz
   needed; open it in a browser). Where Graphviz's ``dot`` program is missing it writes the
   DOT text (.dot) and says how to install ``dot``; where ``mg.viz`` itself is missing it skips this step with a message.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
if __package__ in (None, ""):  # run from a checkout without installing
    sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import digits  # noqa: E402

import minigrad as mg  # noqa: E402

OUT = HERE / "out"


def step_graph(model, X, y, out_dir: Path, batch: int = 64):
    """Run one training step's forward and backward on a batch and draw its loss graph."""
    try:
        from minigrad import viz
    except ImportError:
        print("graph: mg.viz is not available in this version of minigrad; skipping the graph of a training step")
        return None
    x = mg.tensor(X[:batch])
    model.zero_grad()
    with mg.autograd.profile() as prof:  # the page shows each op's times and the line that made it
        loss = mg.nn.functional.cross_entropy(model(x), y[:batch])
        loss.backward()  # the drawing shows every parameter's gradient: draw before zero_grad()
    out_dir.mkdir(parents=True, exist_ok=True)
    svg = out_dir / "digits_step_graph.svg"
    title = f"one training step of the digits MLP: loss {loss.item():.4f}"
    if hasattr(viz, "html"):  # the graph page: one HTML file, no Graphviz needed
        page = viz.html(prof, out_dir / "step.html", params=model, title=title)
        print(f"graph page of one training step: {out_dir / 'step.html'} (open it in a browser; "
              f"{page.n_ops} ops, built in {page.build_s:.2f}s)")
    try:
        try:
            return viz.save(loss, svg, params=model, title=title)
        except viz.GraphvizNotFoundError as e:
            dot = viz.save(loss, svg.with_suffix(".dot"), params=model, title=title)
            print(f"graph: {e}")
            print(f"graph: wrote the DOT text instead: {dot}")
            return dot
    finally:
        model.zero_grad()  # leave no gradients behind


def main(epochs: int = digits.EPOCHS, steps: int | None = None, limit: int | None = None, out_dir: Path | str | None = None,
         progress: bool = True, compile: bool = True) -> dict:  # noqa: A002
    """Train, evaluate and draw; returns digits.main's result plus {"graph"}. ``compile``: capture
    the training step with ``mg.compile`` (digits.main's ``compile``): on by default, as it gives
    the same numbers bitwise in about three quarters of the time a step."""
    out_dir = OUT if out_dir is None else Path(out_dir)
    t0 = time.perf_counter()
    res = digits.main(epochs=epochs, steps=steps, limit=limit, out_dir=out_dir, progress=progress, compile=compile)
    Xtr, ytr, _, _ = digits.load_data(limit=limit)
    g = step_graph(res["model"], Xtr, ytr, out_dir)
    if g is not None:
        print(f"graph of one training step: {g}")
    print(f"demo finished in {time.perf_counter() - t0:.1f}s; test accuracy {res['test_accuracy']:.2%}")
    res["graph"] = g
    return res


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description="Train the digits MLP, then draw its loss curve and one step's graph.", formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--no-compile", action="store_true", help="train eagerly instead of through mg.compile")
    a = ap.parse_args()
    np.set_printoptions(precision=4)
    main(compile=not a.no_compile)
