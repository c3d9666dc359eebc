"""How things look: node and edge styles, the highlight, the gradient palette, DOT quoting."""
from __future__ import annotations

import re

OP_STYLE = 'shape=box style="rounded,filled" fillcolor="#eeeeee" color="#888888"'
REDUCE_STYLE = 'shape=box style="rounded,filled" fillcolor="#fce5cd" color="#e69138"'
BCAST_STYLE = 'shape=box style="rounded,filled" fillcolor="#cfe2f3" color="#3d85c6"'
CONST_STYLE = 'shape=ellipse style="filled" fillcolor="#f3f3f3" color="#cccccc" fontcolor="#666666" fontsize=9'
TENSOR_STYLE = 'shape=ellipse style=filled fillcolor="#ffffff" color="#999999" fontsize=9'
LEAF_STYLE = 'shape=ellipse style=filled fillcolor="#d9ead3" color="#6aa84f"'
OUT_STYLE = 'shape=ellipse style=filled fillcolor="#fff2cc" color="#bf9000" peripheries=2'
RUN_STYLE = 'shape=box style="filled,dashed" fillcolor="#f3f3f3" color="#666666"'
MOD_STYLE = 'shape=box3d style=filled fillcolor="#ead1dc" color="#a64d79"'
NOTE_STYLE = 'shape=note style=filled fillcolor="#ffffff" color="#999999" fontcolor="#666666"'
BCAST_EDGE = 'color="#3d85c6" fontcolor="#3d85c6" penwidth=2'
REF_STYLE = 'shape=ellipse style="dashed,filled" fillcolor="#ffffff" color="#999999" fontcolor="#555555" fontsize=8'
LEAF_REF_STYLE = 'shape=ellipse style="dashed,filled" fillcolor="#f4f9f1" color="#6aa84f" fontcolor="#38761d" fontsize=8'
CLUSTER_STYLE = 'style="rounded,dashed" color="#a64d79" fontcolor="#a64d79"'
# a node feeding more than this many drawn ops gets a small copy (↪) beside each further use: one node
# with edges to ops far apart in the picture makes `dot` route long edges (minutes for a few hundred)
FANOUT = 8

# highlight=: the chosen op and its path to the output
HIGHLIGHT = {"color": '"#cc0000"', "penwidth": "2.5", "fontcolor": '"#cc0000"'}

# color_by="grad": gradient norms on a log scale, pale to dark (ColorBrewer Purples)
GRAD_PALETTE = ("#f2f0f7", "#dadaeb", "#bcbddc", "#9e9ac8", "#756bb1", "#54278f")
GRAD_DARK = 4                # from this bin on the text is white
ZERO_GRAD = {"style": '"filled,dashed"', "fillcolor": '"#ffffff"', "color": '"#000000"'}
BAD_GRAD = {"fillcolor": '"#000000"', "fontcolor": '"#ffffff"'}   # nan or inf

_ATTR = re.compile(r'([A-Za-z_]+)=("(?:[^"\\]|\\.)*"|\S+)')


def restyle(attrs: str | None, changes: dict) -> str:
    """``attrs`` (DOT ``k=v`` text) with the keys of ``changes`` replaced or added."""
    items = dict(_ATTR.findall(attrs or ""))
    items.update(changes)
    return " ".join(f"{k}={v}" for k, v in items.items())


def shp(s) -> str:
    s = tuple(s)
    return "(" + ", ".join(map(str, s)) + ("," if len(s) == 1 else "") + ")"


def q(s) -> str:
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


_ID = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*|-?(\.[0-9]+|[0-9]+(\.[0-9]*)?))$")
_KEYWORDS = {"node", "edge", "graph", "digraph", "subgraph", "strict"}


def dot_id(s) -> str:
    """An attribute value the way the graphviz package writes it (bare when it may be)."""
    s = str(s)
    return s if _ID.match(s) and s.lower() not in _KEYWORDS else q(s)


def attr_list(d: dict) -> str:
    return " ".join(f"{k}={dot_id(v)}" for k, v in sorted(d.items()))


def dtype_str(d) -> str:
    return str(d) if d is not None else "?"


def clip(v, n=40) -> str:
    s = str(v)
    return s if len(s) <= n else s[: n - 3] + "..."
