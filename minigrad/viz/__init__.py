"""Seeing a computation: the graph that produced a tensor, as DOT text or a Graphviz object.

``dot_source(t)`` builds the DOT text with plain Python (no Graphviz needed, no
recursion: a 100 000-op chain is fine). ``graph(t)`` wraps the same text in a
``graphviz.Digraph`` (the optional ``graphviz`` package, imported there only),
which renders itself in Jupyter. ``save(t, "g.svg")`` runs the ``dot`` program.

What the picture shows:

* op nodes (rounded boxes): the op name and the attributes that matter (axis,
  keepdims, pattern...). Reductions are orange ("Σ"): their backward broadcasts
  the gradient back over the reduced axes. Broadcasts are blue: their backward
  sums the gradient back (``sum_to``). An input that an elementwise op or a
  matmul broadcast implicitly gets a blue edge saying so: that is where the
  gradient is summed back to the input's shape.
* tensor nodes (ellipses): shape and dtype; an input that needs no grad (a data batch)
  is a grey "no grad" ellipse. Leaves (green) are where gradients
  land; after ``backward()`` they show the gradient's shape and norm. Names come
  from ``params=`` (``dict(model.named_parameters())``, a Module, or a dict of
  name -> Tensor) or a tensor's ``.name``.
* big graphs (more than ``max_nodes`` ops) are summarised: linear chains of ops
  become one box listing their ops, and only the ``max_nodes`` drawn units
  nearest the output are kept, with a note saying how many were left out.
* a tensor that feeds more than ``FANOUT`` (8) drawn ops (an RNN's weight, used
  at every step) is drawn once, at its first use, and as a small dashed copy
  (``↪ W (8, 8)``) beside each further use: long edges across the picture are
  what makes ``dot`` take minutes on a graph of a few hundred ops.

Following a gradient:

* ``graph(t, highlight=node)``: ``node`` (an op from ``mg.autograd.tape(t)``, the
  ``err.node`` of an ``AnomalyError``, a tensor of the graph, or a list of them)
  and every op, tensor and edge on its way to ``t`` are drawn in red: the path
  its gradient takes back.
* ``graph(t, color_by="grad")``: after ``backward()``, tensor nodes that hold a
  gradient (leaves; non-leaves with ``retain_grad()``) are filled by the
  gradient's norm on a log scale, pale (small) to dark (large), with a legend
  giving the range; a zero gradient is white and dashed, a nan/inf one black.
  Before backward the graph is drawn as usual, with a note saying so.
* ``grad_flow(model)``: per parameter, in order, the mean and max ``|grad|`` on
  a log axis (matplotlib): vanishing gradients sink, exploding ones rise above
  the threshold line; zero gradients get a red marker at the bottom. Returns
  the figure; ``path=`` saves it.

The graph page:

* ``html(t, path=None, params=None)``: one self-contained HTML file (no network, no ``dot``:
  the layout library, dagre, is inside it) that a browser opens to zoom, pan, search, fold
  and unfold modules, chains and repeated blocks, and click an op for its shapes, dtypes,
  ``file:line``, value and gradient summaries, saved bytes and profile times. Also from a
  profile or a compiled step's ``step.tape()``; a Jupyter cell shows it inline.

Nothing here is cached: the graph is read once and only text is kept.

The package, in pipeline order: ``_read`` (everything read of the engine: Nodes,
the tape walk, how ops are classified), ``_graph`` (the graph as plain lists;
names, modules, chains, paths), ``_labels`` and ``_style`` (what nodes say and
look like), ``_gradcolor`` (``color_by="grad"``), ``_build`` (units, nodes,
edges, text), ``_render`` (``dot_source``, ``graph``, ``save``), ``_flow``
(``grad_flow``); for the page, ``_page`` (its data and folds) and ``_html`` (the file).
"""
from __future__ import annotations

import shutil  # noqa: F401  (mg.viz.shutil: tests swap shutil.which through it to hide `dot`)

from ._flow import grad_flow
from ._html import GraphPage, html
from ._render import INSTALL_HINT, GraphvizNotFoundError, dot_source, graph, save
from ._style import FANOUT

GraphvizNotFoundError.__module__ = __name__

__all__ = ["graph", "dot_source", "save", "grad_flow", "html", "GraphPage", "GraphvizNotFoundError", "INSTALL_HINT", "FANOUT"]
