"""The graphs of a sparse sum and of einsums, after backward: where the gradient flows.

    python visualize/sparse_einsum_graph.py  # pictures in visualize/out/

sparse_sum.svg: a COO matrix summed over its columns, then weighted and summed;
the gradient reaches the stored values only (one entry per stored element).
einsum.svg: attention-style scores in NumPy grammar, then einops grammar; the
orange boxes say which labels each contraction sums over.
Each part is skipped, with a message, where mg.sparse or mg.einsum is missing.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import command_line, draw, mg, outdir_of, write_text  # noqa: E402

import numpy as np  # noqa: E402


def _feature(module: str, name: str):
    """``minigrad.<module>.<name>``, or None where that has not landed yet."""
    import importlib

    try:
        return getattr(importlib.import_module(f"minigrad.{module}"), name)
    except (ImportError, AttributeError):
        return None


def sparse_sum(out: Path) -> list[Path]:
    coo_tensor = _feature("sparse", "coo_tensor")
    if coo_tensor is None:
        print("sparse_einsum_graph: mg.sparse is not available yet; skipping the sparse sum graph")
        return []
    indices = np.array([[0, 0, 1, 2, 2, 3], [0, 2, 1, 0, 3, 3]])
    values = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], dtype=np.float32)
    s = coo_tensor(indices, values, shape=(4, 4), requires_grad=True)
    w = mg.tensor([1.0, -1.0, 0.5, 2.0], requires_grad=True)
    rows = mg.sparse.sum(s, axis=1)                     # sparse in its row dim
    rows = rows.to_dense() if hasattr(rows, "to_dense") else rows
    loss = (rows * w).sum()
    loss.backward()
    paths = draw(loss, out, "sparse_sum", params={"s": s, "w": w}, title="sum of a sparse COO matrix over axis 1")
    paths.append(write_text(out, "sparse_sum_tape.txt", str(mg.autograd.tape(loss))))
    return paths


def einsums(out: Path) -> list[Path]:
    try:
        einsum = mg.einsum
    except (ImportError, AttributeError):
        einsum = None
    if einsum is None:
        print("sparse_einsum_graph: mg.einsum is not available yet; skipping the einsum graph")
        return []
    rng = np.random.default_rng(0)
    q = mg.tensor(rng.standard_normal((2, 3, 4)), dtype=mg.float32, requires_grad=True)
    k = mg.tensor(rng.standard_normal((2, 5, 4)), dtype=mg.float32, requires_grad=True)
    v = mg.tensor(rng.standard_normal((2, 5, 4)), dtype=mg.float32, requires_grad=True)
    scores = einsum("bid,bjd->bij", q, k).softmax(axis=-1)              # NumPy grammar
    ctx = einsum(scores, v, "batch query key, batch key d -> batch query d")  # einops grammar
    loss = (ctx * ctx).sum()
    loss.backward()
    paths = draw(loss, out, "einsum", params={"q": q, "k": k, "v": v}, title="attention with two einsums")
    paths.append(write_text(out, "einsum_tape.txt", str(mg.autograd.tape(loss))))
    return paths


def main(outdir=None) -> list[Path]:
    out = outdir_of(outdir)
    paths = sparse_sum(out) + einsums(out)
    print(f"sparse_einsum_graph: wrote {len(paths)} files to {out}")
    return paths


if __name__ == "__main__":
    main(outdir=command_line("Draw a sparse sum and einsums after backward: where the gradient flows.").out_dir)
