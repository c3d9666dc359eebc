"""The public drawing functions: DOT text, a graphviz.Digraph, a file (``dot`` run for svg/png/pdf)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from ..errors import MinigradError
from . import _style as S
from ._build import build

INSTALL_HINT = (
    "rendering a graph needs the Graphviz 'dot' program, which was not found on PATH. Install it with "
    "`sudo apt-get install graphviz` (Debian/Ubuntu), `brew install graphviz` (macOS), "
    "`conda install -c conda-forge graphviz`, or run `bash scripts/install-system-deps.sh` from the "
    "minigrad repository (the README's set-up command). The DOT text itself needs no Graphviz: "
    "mg.viz.dot_source(t), or save to a .dot file"
)


class GraphvizNotFoundError(MinigradError, RuntimeError):
    """The Graphviz ``dot`` program is missing; the message says how to install it."""


def _source(name, gattr, nattr, eattr, body) -> str:
    head = [f"digraph {name} {{\n", f"\tgraph [{S.attr_list(gattr)}]\n", f"\tnode [{S.attr_list(nattr)}]\n",
            f"\tedge [{S.attr_list(eattr)}]\n"]
    return "".join(head) + "".join(body) + "}\n"


def dot_source(t, rankdir: str = "TB", show_tensors: bool = True, collapse_modules: bool = False,
               max_nodes: int | None = 500, params=None, title: str | None = None, highlight=None,
               color_by: str | None = None) -> str:
    """The DOT text of the graph that produced ``t`` (no Graphviz needed).

    Args:
        t: a Tensor (or a list of Tensors: one graph for all of them).
        rankdir: "TB" (top-down) or "LR" (left to right).
        show_tensors: draw a node for every intermediate tensor (shape, dtype); with
            False, ops connect directly and edges carry the shapes. Leaves and the
            output are always drawn.
        collapse_modules: draw each module (parameters grouped by name prefix, e.g.
            ``fc1.weight`` and ``fc1.bias``) as one box; otherwise a module's ops are
            framed in a cluster.
        max_nodes: above this many ops, summarise: collapse linear chains and keep the
            ``max_nodes`` units nearest the output. None draws everything.
        params: names for parameters: a Module, ``dict(model.named_parameters())``,
            or any mapping / iterable of (name, Tensor).
        title: a caption on top of the picture.
        highlight: an op of the graph (a node of ``mg.autograd.tape(t)``, or the
            ``err.node`` of an ``AnomalyError``), a tensor of it (its op; a leaf: the
            leaf itself), or a list of them: drawn in red with every op and tensor on
            the way to the output.
        color_by: "grad": after ``backward()``, fill the tensor nodes that hold a
            gradient (leaves, retained non-leaves) by its norm on a log scale, pale to
            dark, with a legend; zero gradients white and dashed, nan/inf black.

    Returns:
        the DOT text (``graph(t).source`` is the same text).

    >>> x = mg.tensor([1.0, 2.0], requires_grad=True)
    >>> "sum" in mg.viz.dot_source((x * x).sum())
    True
    """
    return _source(*build(t, rankdir=rankdir, show_tensors=show_tensors, collapse_modules=collapse_modules,
                          max_nodes=max_nodes, params=params, title=title, highlight=highlight,
                          color_by=color_by))


def graph(t, rankdir: str = "TB", show_tensors: bool = True, collapse_modules: bool = False,
          max_nodes: int | None = 500, params=None, title: str | None = None, highlight=None,
          color_by: str | None = None):
    """A ``graphviz.Digraph`` of the graph that produced ``t`` (see ``dot_source`` for the arguments).

    Needs the ``graphviz`` Python package (``pip install graphviz``, or minigrad's
    ``viz`` extra); rendering it (``.render()``, ``.pipe()``, Jupyter display) needs
    the Graphviz ``dot`` program, and raises ``GraphvizNotFoundError`` saying how to
    install it where that is missing; a Jupyter cell then shows the graph page
    (``mg.viz.html``) instead, which needs no ``dot``.

    >>> g = mg.viz.graph(loss, params=dict(model.named_parameters()))
    >>> g.render("loss", format="svg")      # or just `g` as a Jupyter cell's value
    >>> mg.viz.graph(loss, highlight=mg.autograd.tape(loss)[3])   # op 3 and its path, in red
    >>> mg.viz.graph(loss, color_by="grad")                       # after loss.backward()
    """
    try:
        import graphviz
    except ImportError:
        raise ImportError(
            "mg.viz.graph needs the graphviz Python package: pip install graphviz (or pip install "
            "'minigrad[viz]'). mg.viz.dot_source(t) gives the DOT text without it"
        ) from None
    name, gattr, nattr, eattr, body = build(
        t, rankdir=rankdir, show_tensors=show_tensors, collapse_modules=collapse_modules, max_nodes=max_nodes,
        params=params, title=title, highlight=highlight, color_by=color_by)
    d = _digraph_class(graphviz)(name=name, graph_attr=gattr, node_attr=nattr, edge_attr=eattr)
    d.body.extend(body)
    d._page = _page_maker(t, params)
    return d


def _page_maker(t, params):
    """A function making the graph page of ``t`` while ``t`` lives (weak references: a drawing
    keeps no graph alive), or returning None: a notebook's fallback where ``dot`` is missing."""
    import weakref

    many = isinstance(t, (list, tuple))
    try:
        refs = [weakref.ref(x) for x in (t if many else [t])]
    except TypeError:
        return lambda: None
    del t  # the closure below must not hold it

    def make():
        xs = [r() for r in refs]
        if any(x is None for x in xs):
            return None
        from ._html import html

        return html(xs if many else xs[0], params=params)

    return make


_DIGRAPH = None  # the graphviz.Digraph subclass, made on first use (graphviz is optional)


def _digraph_class(graphviz):
    global _DIGRAPH
    if _DIGRAPH is not None:
        return _DIGRAPH
    missing = graphviz.ExecutableNotFound

    class Digraph(graphviz.Digraph):
        """graphviz.Digraph whose rendering says how to install ``dot`` when it is missing."""

        def render(self, *args, **kwargs):
            try:
                return super().render(*args, **kwargs)
            except missing:
                raise GraphvizNotFoundError(INSTALL_HINT) from None

        def pipe(self, *args, **kwargs):
            try:
                return super().pipe(*args, **kwargs)
            except missing:
                raise GraphvizNotFoundError(INSTALL_HINT) from None

        def view(self, *args, **kwargs):
            try:
                return super().view(*args, **kwargs)
            except missing:
                raise GraphvizNotFoundError(INSTALL_HINT) from None

        def _repr_mimebundle_(self, include=None, exclude=None, **kwargs):
            try:
                return super()._repr_mimebundle_(include=include, exclude=exclude, **kwargs)
            except (missing, GraphvizNotFoundError):  # pipe() has already turned one into the other
                bundle = {"text/plain": INSTALL_HINT + "\n\n" + self.source}
                make = getattr(self, "_page", None)
                page = make() if make is not None else None
                if page is not None:  # the graph page needs no dot: show it instead
                    bundle["text/html"] = page._repr_html_()
                return bundle

    Digraph.__module__ = "minigrad.viz"
    _DIGRAPH = Digraph
    return Digraph


_FORMATS = ("svg", "png", "pdf")


def save(t, path, format: str | None = None, **kwargs) -> Path:
    """Draw the graph that produced ``t`` into a file; the format follows the extension.

    Args:
        t: a Tensor (or a list of Tensors).
        path: where to write: ``.svg``, ``.png``, ``.pdf`` (rendered with Graphviz's
            ``dot``), or ``.dot`` / ``.gv`` (the DOT text, no Graphviz needed).
        format: overrides the extension.
        **kwargs: the options of ``dot_source`` (rankdir, show_tensors, params,
            highlight, color_by, ...).

    Returns:
        the path written.

    Raises:
        GraphvizNotFoundError: rendering was asked for and ``dot`` is missing (the
            message says how to install it).

    >>> mg.viz.save(loss, "loss.svg", rankdir="LR")
    """
    path = Path(path)
    fmt = (format or path.suffix.lstrip(".")).lower()
    if fmt not in _FORMATS + ("dot", "gv"):
        raise ValueError(
            f"viz.save: cannot tell the format of {str(path)!r}: use a .svg, .png, .pdf, .dot or .gv "
            f"path, or format= one of {', '.join(_FORMATS + ('dot',))}"
        )
    src = dot_source(t, **kwargs)
    if fmt in ("dot", "gv"):
        path.write_text(src, encoding="utf-8")
        return path
    exe = shutil.which("dot")
    if exe is None:
        raise GraphvizNotFoundError(INSTALL_HINT)
    res = subprocess.run([exe, f"-T{fmt}", "-o", str(path)], input=src.encode("utf-8"), capture_output=True)
    if res.returncode != 0:
        raise RuntimeError(f"viz.save: dot failed writing {str(path)!r}: {res.stderr.decode(errors='replace').strip()}")
    return path
