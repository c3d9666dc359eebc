"""Draw the strided walk that sums one dim of a tensor over its flat buffer.

    python visualize/strided_walk.py 2 3 2 4 --dim 1
    python visualize/strided_walk.py 4 3 --dim 0 --strides 1 4        # a transposed (3, 4)
    python visualize/strided_walk.py 2 3 2 4 --dim 2 --png            # also visualize/out/*.png

Prints the six numbers of ``mg.strided.sum_plan`` and the walk as text: the windows
(the buffer elements one output cell adds, ``+stride`` apart), the ``+step`` from one
window to the next, the ``+shift`` from one block of windows to the next, and a map of
the buffer (one row per output cell, ``o`` where its window starts, ``+`` for each
``+stride`` jump). With ``--strides`` (in elements) and ``--offset`` it walks a
non-contiguous layout with the loops of ``mg.strided.loops``. ``--png`` also draws the
map with matplotlib into ``visualize/out/`` (git-ignored).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(HERE.parent))

import numpy as np  # noqa: E402

import minigrad as mg  # noqa: E402

OUT = HERE / "out"


def windows(shape, dim, strides=None, offset=0):
    """Per output cell (C order of the kept dims), the buffer offsets it adds: an int array (cells, nstride)."""
    shape = tuple(shape)
    d = dim + len(shape) if dim < 0 else dim
    if strides is None:
        p = mg.strided.sum_plan(shape, d)
        starts = p.starts() + offset
        return starts[:, None] + np.arange(p.nstride, dtype=np.int64)[None, :] * p.stride
    outer, (n, s) = mg.strided.loops(shape, d, strides)
    starts = np.full(1, offset, dtype=np.int64)
    for count, st in outer:
        starts = (starts[:, None] + np.arange(count, dtype=np.int64)[None, :] * st).reshape(-1)
    return starts[:, None] + np.arange(n, dtype=np.int64)[None, :] * s


def render(shape, dim, strides=None, offset=0, max_cells=24, width=96) -> str:
    """The walk as text (what ``main`` prints)."""
    shape = tuple(int(n) for n in shape)
    d = dim + len(shape) if dim < 0 else dim
    size = int(np.prod(shape)) if shape else 1
    out_shape = shape[:d] + shape[d + 1:]
    lines = [f"sum over dim {d} of shape {shape} ({size} elements) -> output shape {out_shape}"]
    if strides is None:
        p = mg.strided.sum_plan(shape, d)
        mprev, mnext = int(np.prod(shape[:d])), int(np.prod(shape[d + 1:]))
        lines.append(f"  mprev = prod(shape[:{d}]) = {mprev}    mnext = prod(shape[{d + 1}:]) = {mnext}")
        lines.append(f"  stride={p.stride} nstride={p.nstride} | step={p.step} nstep={p.nstep} | "
                     f"shift={p.shift} nshift={p.nshift}")
        lines.append(f"  cell s*{p.nstep}+j adds buf[s*{p.shift} + j*{p.step} + k*{p.stride}], "
                     f"k < {p.nstride}, j < {p.nstep}, s < {p.nshift}")
        loops = [(p.nshift, p.shift), (p.nstep, p.step)]
        win = (p.nstride, p.stride)
    else:
        strides = tuple(int(s) for s in strides)
        outer, win = mg.strided.loops(shape, d, strides)
        lines.append(f"  strides {strides} (elements), offset {offset}: a non-contiguous layout")
        loops = [(1, 0)] * (2 - len(outer)) + outer if len(outer) <= 2 else outer
        lines.append("  loops over output cells (count, +move): "
                     + ", ".join(f"({c}, +{m})" for c, m in outer) + f"; window ({win[0]}, +{win[1]})")
    w = windows(shape, d, strides, offset)
    ncell = w.shape[0]
    lines.append("")
    lines.append("the walk (each window adds nstride elements, +stride apart):")
    inner_count = loops[-1][0] if loops else 1
    inner_move = loops[-1][1] if loops else 0
    outer_move = loops[-2][1] if len(loops) >= 2 else 0
    shown = min(ncell, max_cells)
    for c in range(shown):
        if c and inner_count and c % inner_count == 0:
            lines.append(f"  +shift {outer_move}" if strides is None else f"  +{outer_move} (next outer block)")
        elif c:
            lines.append(f"  +step {inner_move}" if strides is None else f"  +{inner_move}")
        jumps = f" -(+{win[1]})-> ".join(f"[{int(i)}]" for i in w[c])
        lines.append(f"    cell {c:>3}: {jumps if w.shape[1] else '(empty window: 0)'}")
    if shown < ncell:
        lines.append(f"    ... {ncell - shown} more cells")
    lines.append("")
    lines.append("the buffer (one row per output cell: o = window start, + = each +stride jump):")
    lines.extend(_map(w[:shown], width))
    return "\n".join(lines)


def _map(w, width):
    if w.size == 0:
        return ["  (nothing to walk)"]
    lo, hi = int(w.min()), int(w.max())
    lo = min(lo, 0)
    span = hi - lo + 1
    cut = span > width
    cols = min(span, width)
    ruler_tens = "".join(str(((lo + i) // 10) % 10) if (lo + i) % 10 == 0 else " " for i in range(cols))
    ruler_ones = "".join(str((lo + i) % 10) for i in range(cols))
    rows = [f"  {'':>9}  {ruler_tens}", f"  {'index':>9}  {ruler_ones}"]
    for c, win in enumerate(w):
        row = ["."] * cols
        for k, i in enumerate(win):
            j = int(i) - lo
            if j < cols:
                row[j] = "o" if k == 0 else "+"
        rows.append(f"  {'cell ' + str(c):>9}  {''.join(row)}")
    if cut:
        rows.append(f"  (buffer indices {lo}..{hi}; shown up to {lo + cols - 1})")
    return rows


def picture(shape, dim, strides=None, offset=0, outdir=None, max_cells=48) -> Path | None:
    """The buffer map as a PNG (matplotlib); None where matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("  matplotlib is not installed: no picture (pip install matplotlib)")
        return None
    w = windows(shape, dim, strides, offset)[:max_cells]
    if w.size == 0:
        return None
    lo, hi = min(0, int(w.min())), int(w.max())
    grid = np.full((w.shape[0], hi - lo + 1), np.nan)
    for c, win in enumerate(w):
        grid[c, win - lo] = c
    fig, ax = plt.subplots(figsize=(min(2 + 0.25 * grid.shape[1], 24), min(1.5 + 0.3 * grid.shape[0], 16)))
    ax.imshow(grid, aspect="auto", cmap="tab20", interpolation="nearest")
    for c, win in enumerate(w):
        for a, b in zip(win[:-1], win[1:], strict=True):
            ax.annotate("", xy=(b - lo, c), xytext=(a - lo, c), arrowprops=dict(arrowstyle="->", lw=0.8))
    _label_moves(ax, w, lo, shape, dim, strides)
    ax.set_xlabel("buffer index")
    ax.set_ylabel("output cell")
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    what = (f"strides {tuple(strides)}, offset {offset}" if strides is not None
            else " ".join(f"{k}={v}" for k, v in mg.strided.sum_plan(shape, dim)._asdict().items()))
    ax.set_title(f"sum over dim {dim} of {tuple(shape)}: {what}", fontsize=9)
    d = OUT if outdir is None else Path(outdir)
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"strided_walk_{'x'.join(map(str, shape))}_dim{dim}.png"
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def _label_moves(ax, w, lo, shape, dim, strides):
    """Name the three moves on the picture: the first +stride jump, the first +step from one window
    to the next, the first +shift from one block of windows to the next (red, dashed)."""
    if strides is None:
        p = mg.strided.sum_plan(shape, dim)
        stride, (step, nstep), (shift, nshift) = p.stride, (p.step, p.nstep), (p.shift, p.nshift)
    else:
        outer, (_, stride) = mg.strided.loops(shape, dim, strides)
        outer = [(1, 0)] * (2 - len(outer)) + outer[-2:]
        (nshift, shift), (nstep, step) = outer
    starts = w[:, 0]
    if w.shape[1] > 1:
        ax.annotate(f"+stride {stride}", xy=((w[0, 0] + w[0, 1]) / 2 - lo, 0), xytext=(0, 9),
                    textcoords="offset points", ha="center", fontsize=8)
    moves = []
    if nstep > 1 and len(starts) > 1:
        moves.append((0, 1, f"+step {step}"))
    if nshift > 1 and len(starts) > nstep:
        moves.append((0, nstep, f"+shift {shift}"))
    for a, b, text in moves:
        ax.annotate("", xy=(starts[b] - lo, b), xytext=(starts[a] - lo, a),
                    arrowprops=dict(arrowstyle="->", lw=1.2, color="#cc0000", linestyle="--"))
        ax.annotate(text, xy=(starts[b] - lo, b), xytext=(6, -2), textcoords="offset points",
                    color="#cc0000", fontsize=8, va="top")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Draw the strided walk of a sum over one dim.",
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("shape", nargs="*", type=int, default=[2, 3, 2, 4], help="the tensor's shape")
    ap.add_argument("--dim", type=int, default=None, help="the dim to sum (None: every dim in turn)")
    ap.add_argument("--strides", type=int, nargs="+", default=None, help="strides in elements (non-contiguous)")
    ap.add_argument("--offset", type=int, default=0, help="buffer index of the first element (with --strides)")
    ap.add_argument("--max-cells", type=int, default=24, help="output cells to draw at most")
    ap.add_argument("--png", action="store_true", help="also draw a picture into visualize/out/ (matplotlib)")
    ap.add_argument("--out", default=None, help="folder for the picture (None: visualize/out); the text is written there too")
    args = ap.parse_args(argv)
    shape = tuple(args.shape)
    dims = range(len(shape)) if args.dim is None else [args.dim]
    texts = []
    for k, d in enumerate(dims):
        if k:
            print("\n" + "=" * 72 + "\n")
        texts.append(render(shape, d, args.strides, args.offset, args.max_cells))
        print(texts[-1])
        # the walk must agree with NumPy: check it on the spot
        if args.strides is None:
            buf = np.arange(int(np.prod(shape)), dtype=np.float64)
            ok = np.array_equal(mg.strided.sum(buf, shape, d), buf.reshape(shape).sum(d))
        else:
            n = int(windows(shape, d, args.strides, args.offset).max(initial=0)) + 1
            buf = np.arange(n, dtype=np.float64)
            view = np.lib.stride_tricks.as_strided(buf[args.offset:], shape, tuple(s * 8 for s in args.strides))
            ok = np.array_equal(mg.strided.sum(buf, shape, d, args.strides, args.offset), view.sum(d))
        print(f"\nmg.strided.sum agrees with numpy's sum: {ok}")
        if args.png:
            p = picture(shape, d, args.strides, args.offset, args.out)
            if p is not None:
                print(f"picture: {p}")
    if args.out is not None:  # the text too, beside the pictures
        d = Path(args.out)
        d.mkdir(parents=True, exist_ok=True)
        txt = d / f"strided_walk_{'x'.join(map(str, shape))}.txt"
        txt.write_text(("\n\n" + "=" * 72 + "\n\n").join(texts) + "\n", encoding="utf-8")
        print(f"text: {txt}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
