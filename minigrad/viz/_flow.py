"""grad_flow: per parameter, how big its gradient is (mean and max |grad|), on a log axis."""
from __future__ import annotations

import math
from pathlib import Path

_MAX_COLOR, _MEAN_COLOR = "#9ecae1", "#3182bd"
_ZERO_COLOR, _HIGH_COLOR, _NONE_COLOR = "#cc0000", "#e69138", "#999999"


def _named(params) -> list[tuple[str, object]]:
    """(name, tensor) pairs from a Module, a mapping, or an iterable of pairs (or of bare tensors)."""
    if hasattr(params, "named_parameters"):
        items = list(params.named_parameters())
    elif hasattr(params, "items"):
        items = list(params.items())
    else:
        items = list(params)
    out = []
    for i, item in enumerate(items):
        if isinstance(item, tuple) and len(item) == 2:
            out.append((str(item[0]), item[1]))
        elif hasattr(item, "grad"):
            out.append((f"[{i}]", item))
        else:
            raise TypeError(f"viz.grad_flow: expected (name, tensor) pairs, got {type(item).__name__} at {i}")
    if not out:
        raise ValueError("viz.grad_flow: no parameters given")
    return out


def grad_stats(g) -> tuple[float, float] | None:
    """(mean |g|, max |g|) of a gradient (dense, or a sparse one's stored values); None without one."""
    if g is None:
        return None
    layout = getattr(g, "layout", None)
    if isinstance(layout, str) and layout != "strided":
        g = g.values() if callable(getattr(g, "values", None)) else g.values
    arr = getattr(g, "data", g)
    if arr.size == 0:
        return 0.0, 0.0
    from .. import backend as _be

    a = _be.array_module(arr).abs(arr)
    return float(a.mean()), float(a.max())


def _axis_floor(stats, threshold) -> tuple[float, float]:
    """(bottom, top) of the log axis: a decade under the smallest nonzero value, above the largest."""
    vals = [v for s in stats if s for v in s if v > 0 and math.isfinite(v)]
    if threshold:
        vals.append(threshold)
    lo, hi = (min(vals), max(vals)) if vals else (1e-8, 1.0)
    return 10 ** (math.floor(math.log10(lo)) - 1), 10 ** (math.ceil(math.log10(hi)) + 0.3)


def grad_flow(params, path=None, threshold: float | None = 10.0, title: str | None = None):
    """Per parameter, in order, the mean and max ``|grad|`` on a log axis: where gradients vanish or explode.

    Args:
        params: a Module (its ``named_parameters()``), a dict name -> Tensor, or an
            iterable of (name, Tensor) pairs.
        path: where to save the figure (any format matplotlib writes: .png, .svg, .pdf).
        threshold: draw this |grad| as a dashed line and mark every parameter whose max
            is above it (orange triangle); None for neither.
        title: the figure's title.

    Returns:
        the matplotlib ``Figure`` (not registered with pyplot: nothing stays open).
        Light bars: max |grad|; dark bars: mean |grad|. A zero gradient gets a red
        marker at the bottom, a parameter without one (``.grad is None``) a grey x.

    Raises:
        ImportError: matplotlib is missing (the message says ``pip install matplotlib``).

    >>> loss.backward()
    >>> mg.viz.grad_flow(model, path="grads.png")
    """
    try:
        from matplotlib.figure import Figure
    except ImportError as e:
        raise ImportError(
            "mg.viz.grad_flow draws with matplotlib, which is not installed: pip install matplotlib"
        ) from e
    named = _named(params)
    stats = [grad_stats(getattr(p, "grad", None)) for _, p in named]
    fig = _figure_class(Figure)(figsize=(max(6.0, 0.35 * len(named) + 2.0), 4.5), layout="constrained")
    ax = fig.add_subplot()
    _draw_flow(ax, [n for n, _ in named], stats, threshold)
    ax.set_title(title or "gradient flow: |grad| per parameter")
    if path is not None:
        fig.savefig(Path(path), dpi=120)
    return fig


_FIGURE = None  # the Figure subclass, made on first use (matplotlib is optional)


def _figure_class(Figure):
    """matplotlib's Figure with ``_repr_png_``: a notebook shows it without ``%matplotlib inline``
    (a Figure made outside pyplot has no display formatter until pyplot's inline backend loads)."""
    global _FIGURE
    if _FIGURE is None:
        class FlowFigure(Figure):
            def _repr_png_(self) -> bytes:
                import io

                buf = io.BytesIO()
                self.savefig(buf, format="png", dpi=100)
                return buf.getvalue()

        FlowFigure.__module__ = "minigrad.viz"
        _FIGURE = FlowFigure
    return _FIGURE


def _draw_flow(ax, names, stats, threshold) -> None:
    """Bars for max and mean, markers for zero / missing / too big gradients, on a log axis."""
    x = list(range(len(names)))
    bottom, top = _axis_floor(stats, threshold)
    nan = float("nan")
    maxes = [s[1] if s and s[1] > 0 else nan for s in stats]
    means = [s[0] if s and s[0] > 0 else nan for s in stats]
    ax.set_yscale("log")
    ax.bar(x, maxes, width=0.8, color=_MAX_COLOR, label="max |grad|")
    ax.bar(x, means, width=0.5, color=_MEAN_COLOR, label="mean |grad|")
    _marks(ax, [i for i, s in enumerate(stats) if s and s[1] == 0], bottom, "v", _ZERO_COLOR, "zero gradient")
    _marks(ax, [i for i, s in enumerate(stats) if s is None], bottom, "x", _NONE_COLOR, "no gradient (None)")
    if threshold:
        ax.axhline(threshold, color=_HIGH_COLOR, linestyle="--", linewidth=1, label=f"threshold {threshold:g}")
        high = [i for i, s in enumerate(stats) if s and not s[1] <= threshold]  # nan/inf count as too big
        _marks(ax, high, [min(maxes[i], top) if math.isfinite(maxes[i]) else top for i in high], "^",
               _HIGH_COLOR, f"max |grad| > {threshold:g}")
    ax.set_ylim(bottom, top)
    ax.set_xlim(-0.6, len(names) - 0.4)
    ax.set_xticks(x)
    ax.set_xticklabels(names, rotation=90, fontsize=8)
    ax.set_ylabel("|grad| (log scale)")
    ax.grid(axis="y", which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))


def _marks(ax, idx, y, marker, color, label) -> None:
    if not idx:
        return
    ys = list(y) if isinstance(y, list) else [y] * len(idx)
    ax.plot(idx, ys, linestyle="none", marker=marker, markersize=9, color=color, label=label, clip_on=False)
