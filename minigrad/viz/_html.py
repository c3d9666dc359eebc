"""``mg.viz.html``: one self-contained HTML page of a graph, no Graphviz program anywhere.

The page is one file: the graph's data as JSON (``_page``), the layout library (dagre, MIT,
shipped in ``static/`` with its licence) and minigrad's own script and style, all inline. A
Content-Security-Policy in the page forbids every network request, so it opens offline and
in a notebook's sandboxed frame alike. The layout runs in the browser when the page opens.
"""
from __future__ import annotations

import html as _html
import json
import time
from pathlib import Path

from ._page import page_data

_STATIC = Path(__file__).with_name("static")
_CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:"


def _static(name: str) -> str:
    text = (_STATIC / name).read_text(encoding="utf-8")
    if name.endswith(".js"):  # a source-map comment would make a browser's devtools ask the network
        text = "\n".join(ln for ln in text.splitlines() if not ln.startswith("//# sourceMappingURL"))
    return text


class GraphPage:
    """The page ``mg.viz.html`` returns: ``.source`` (the HTML text), ``.save(path)``, and
    ``_repr_html_`` so that a Jupyter cell shows it inline (in a sandboxed frame).

    ``.build_s`` is how long reading the graph and writing the page took; ``.n_ops`` how
    many ops it holds.
    """

    def __init__(self, source: str, title: str, n_ops: int, build_s: float):
        self.source = source
        self.title = title
        self.n_ops = n_ops
        self.build_s = build_s

    def save(self, path) -> Path:
        """Write the page to ``path`` (UTF-8) and return the path."""
        path = Path(path)
        path.write_text(self.source, encoding="utf-8")
        return path

    def __repr__(self) -> str:
        return f"<mg.viz graph page: {self.title!r}, {self.n_ops} ops, {len(self.source) // 1024} KiB>"

    def _repr_html_(self) -> str:
        return (f'<iframe srcdoc="{_html.escape(self.source, quote=True)}" sandbox="allow-scripts" '
                'style="width:100%;height:640px;border:1px solid #ddd" title="minigrad graph"></iframe>')


def render_page(data: dict) -> str:
    """The page's HTML text for ``data`` (what ``_page.page_data`` returns)."""
    payload = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    payload = payload.replace("</", "<\\/").replace("<!--", "<\\!--")
    title = _html.escape(data["title"])
    s = data["stats"]
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{_CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="minigrad mg.viz.html">
<title>{title}</title>
<style>
{_static("page.css")}
</style>
</head>
<body>
<div id="bar">
<h1>{title}</h1>
<input id="search" type="search" placeholder="find an op by name" aria-label="find an op by name">
<span id="count" aria-live="polite"></span>
<button id="fit" type="button">fit</button>
<span id="visible"></span>
<span id="hint">wheel: zoom · drag: pan · click: details · ▸ box: open</span>
</div>
<div id="main">
<svg id="view" role="img" aria-label="computation graph of {s['ops']} ops">
<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="9" markerHeight="9" markerUnits="userSpaceOnUse" orient="auto-start-reverse">
<path d="M0,0L10,5L0,10z" fill="#999"></path></marker></defs>
<g id="scene"></g>
</svg>
<aside id="side"><ul id="results"></ul><div id="panel" aria-live="polite"></div></aside>
</div>
<div id="legend"><span><i style="background:#eee"></i>op</span><span><i style="background:#fce5cd"></i>reduction (grad broadcast back)</span><span><i style="background:#cfe2f3"></i>broadcast (grad summed back)</span><span><i style="background:#d9ead3"></i>leaf</span><span><i style="background:#fff2cc"></i>output</span><span><i style="background:#ead1dc"></i>module (▸ opens)</span><span><i style="background:#f3f3f3"></i>chain / repeated block</span><span><i style="border:2px solid #d00"></i>NaN/inf or anomaly</span><span><i style="background:#fff59d"></i>search match</span></div>
<script type="application/json" id="graph-data">{payload}</script>
<script>
{_static("dagre.min.js")}
</script>
<script>
{_static("page.js")}
</script>
</body>
</html>
"""


def html(t, path=None, params=None, highlight=None, title: str | None = None) -> GraphPage:
    """One self-contained, interactive HTML page of the graph that produced ``t``.

    No network and no Graphviz program: the layout is computed in the page (dagre, inside
    the file), and every script and style is inline. In a browser the wheel zooms, dragging
    pans, a click on a box shows its op, input and output shapes and dtypes, the ``file:line``
    that created it, value and gradient summaries (min, mean, max, norm, NaN/inf count), bytes
    saved for backward and, from a profile, forward and backward times, and draws its path to
    the output in red; folded boxes (modules, long chains, repeated blocks) open on a click;
    the search box finds ops by name. NaN/inf gradients and values are outlined in red.

    Args:
        t: a Tensor, a list of Tensors (one graph for all), a ``mg.autograd.profile()``
            result (the ops it recorded, with their times and ``file:line``, drawn from the
            profile's record: the step's tensors may be gone), or a compiled step's
            ``step.tape()`` (its array steps).
        path: where to write the page (``.html``); None writes nothing.
        params: names for parameters (a Module, ``dict(model.named_parameters())`` or
            (name, Tensor) pairs); a Module's submodules fold into boxes.
        highlight: an op (a node of ``mg.autograd.tape(t)``), a tensor of the graph, or an
            ``AnomalyError`` (its op is marked as the failure): selected when the page opens.
        title: the page's heading.

    Returns:
        a ``GraphPage``: ``.source`` (the HTML), ``.save(path)``; a Jupyter cell shows it inline.

    ``file:line`` is known for ops recorded inside ``mg.autograd.detect_anomaly()`` or
    ``mg.autograd.profile()``; an intermediate value only while the graph still holds it.

    >>> page = mg.viz.html(loss, "loss.html", params=model)   # open loss.html in a browser
    """
    if path is not None and not isinstance(path, (str, Path)):
        raise TypeError(f"viz.html: path must be a str or a Path (or None), got {type(path).__name__}")
    t0 = time.perf_counter()
    data = page_data(t, params=params, highlight=highlight, title=title)
    source = render_page(data)
    page = GraphPage(source, data["title"], data["stats"]["ops"], time.perf_counter() - t0)
    if path is not None:
        page.save(path)
    return page
