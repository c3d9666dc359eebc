"""Draw minigrad's layers from its imports: docs/img/layers.dot, and docs/img/layers.svg with
Graphviz's ``dot`` where it is installed.

The picture is read from the code, never drawn by hand: each layer of tests/test_layers.py's
``LAYERS`` table (the table of docs/architecture.md) is a cluster holding its files; an arrow
from one layer to another means some module of the first imports one of the second, at module
level or inside a function (tests/test_layers.py's ``_imports`` reads them); the documented
upward import (``ALLOWED``) is drawn dashed from the module that makes it to the module it
imports. tests/test_layers.py fails when docs/img/layers.dot is not what this script writes.

    python scripts/layers_dot.py           # write docs/img/layers.dot (and layers.svg where `dot` is)
    python scripts/layers_dot.py --check   # exit 1 when docs/img/layers.dot is stale
"""
from __future__ import annotations

import argparse
import pathlib
import shutil
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
from test_layers import ALLOWED, NAMES, ROOT, _imports, _layer, _name  # noqa: E402 - the layers' one definition

DOT = REPO / "docs" / "img" / "layers.dot"
SVG = DOT.with_suffix(".svg")
COLOURS = {"backend": ("#d9ead3", "#6aa84f"), "state": ("#d9ead3", "#6aa84f"), "tensor": ("#cfe2f3", "#3d85c6"),
           "tape": ("#cfe2f3", "#3d85c6"), "ops": ("#fce5cd", "#e69138"), "above": ("#eeeeee", "#888888"),
           "package": ("#eeeeee", "#888888")}
WIDTH = 34  # characters per line of a box's list of files
NOTES = {"__init__.py": "the package: mg.*", "ops/__init__.py": "binds Tensor's methods\\nand operators from the registry"}


def _files(root: pathlib.Path = ROOT) -> dict:
    """Each module of the package at ``root`` -> its file, relative to the package (``ops/math.py``)."""
    return {_name(p, root): p.relative_to(root).as_posix() for p in sorted(root.rglob("*.py"))}


def _file_of(module: str, files: dict) -> str:
    """The file of an imported name (``minigrad.ops.math``, or ``minigrad.sparse``: its ``__init__.py``)."""
    while module not in files and "." in module:
        module = module.rsplit(".", 1)[0]
    return files[module]


def _box(path: str, own: set) -> str:
    """The box a file is drawn in: its top-level package's (``sparse/``), or its layer's box of the
    package's own modules; a file that makes a documented upward import has a box of its own, so
    that the dashed arrow starts where it really is."""
    if path in own or path == "__init__.py":
        return path
    return path.split("/")[0] + "/" if "/" in path else "files"


def _wrap(names: list) -> str:
    """Names joined by two spaces, broken into lines of about WIDTH characters (DOT's ``\\n``)."""
    lines, line = [], ""
    for n in names:
        if line and len(line) + 2 + len(n) > WIDTH:
            lines.append(line)
            line = n
        else:
            line = f"{line}  {n}" if line else n
    return "\\n".join(lines + [line])


def _quote(s: str) -> str:
    return '"' + s.replace('"', '\\"') + '"'


def graph(root: pathlib.Path = ROOT):
    """What the picture shows: per layer its boxes (box -> its files, sorted), the pairs of layers
    (importer, imported) that some import joins, and the documented upward imports as (file, box)."""
    files = _files(root)
    own = {files[src] for src, _ in ALLOWED if src in files}
    boxes: dict = {}  # layer -> {box: [files]}
    for module, path in files.items():
        boxes.setdefault(_layer(module), {}).setdefault(_box(path, own), []).append(path)
    layer_edges, upward = set(), set()
    for module, path in files.items():
        for target, _ in _imports(root / path, module):
            if (module, target) in ALLOWED:
                upward.add((path, _box(_file_of(target, files), own)))
            elif _layer(module) > _layer(target):
                layer_edges.add((_layer(module), _layer(target)))
    return boxes, layer_edges, upward


def _label(box: str, paths: list) -> str:
    if box == "files":
        return _wrap(paths)
    if box.endswith("/"):
        return box + "\\n" + _wrap([p[len(box):] for p in paths])
    return box + ("\\n" + NOTES[box] if box in NOTES else "")


def dot_source(root: pathlib.Path = ROOT) -> str:
    """The DOT text of the picture (the same text for the same imports: everything is sorted)."""
    boxes, layer_edges, upward = graph(root)
    out = ["// written by scripts/layers_dot.py from minigrad's imports: do not edit it, run the script",
           "digraph layers {",
           '  graph [rankdir=TB compound=true newrank=true fontname=Helvetica nodesep=0.25 ranksep=0.45 labelloc=t '
           'label="minigrad\'s layers: an arrow, some module of one imports some module of the other"]',
           '  node [shape=box style="rounded,filled" fontname=Helvetica fontsize=10]',
           '  edge [color="#888888" arrowsize=0.7]']
    anchor = {}
    for layer in sorted(boxes):
        name = NAMES[layer]
        fill, line = COLOURS[name]
        out.append(f"  subgraph cluster_{name} {{")
        out.append(f'    label="{name}" fontname=Helvetica fontsize=12 style=rounded color="{line}"')
        nodes = []
        for box, paths in sorted(boxes[layer].items(), key=lambda kv: (kv[0] != "files", kv[0])):
            nodes.append(_quote(box if box != "files" else f"{name} files"))  # the first: the layer's arrows
            out.append(f'    {nodes[-1]} [label={_quote(_label(box, paths))} fillcolor="{fill}" color="{line}"]')
        out.append(f"    {{rank=same {' '.join(nodes)}}}")
        out.append("  }")
        anchor[layer] = nodes[0]
    layers = sorted(boxes)
    for lo, hi in zip(layers, layers[1:], strict=False):  # the layers stacked even where no import joins two neighbours
        if (hi, lo) not in layer_edges:
            out.append(f"  {anchor[hi]} -> {anchor[lo]} [style=invis]")
    for src, dst in sorted(layer_edges, reverse=True):
        out.append(f"  {anchor[src]} -> {anchor[dst]} [ltail=cluster_{NAMES[src]} lhead=cluster_{NAMES[dst]}]")
    for src, dst in sorted(upward):
        out.append(f'  {_quote(src)} -> {_quote(dst)} [style=dashed color="#bf9000" fontcolor="#bf9000" fontsize=9 '
                   'constraint=false label=" the documented upward import"]')
    out.append("}")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 when docs/img/layers.dot differs from what the imports give")
    args = ap.parse_args(argv)
    text = dot_source()
    if args.check:
        if not DOT.exists() or DOT.read_text(encoding="utf-8") != text:
            print(f"{DOT.relative_to(REPO)} is stale: run `python scripts/layers_dot.py` to redraw it "
                  "(and layers.svg)", file=sys.stderr)
            return 1
        return 0
    DOT.write_text(text, encoding="utf-8")
    print(f"wrote {DOT.relative_to(REPO)}")
    if shutil.which("dot") is None:
        print(f"Graphviz's dot is not installed: {SVG.relative_to(REPO)} was not redrawn", file=sys.stderr)
        return 0
    subprocess.run(["dot", "-Tsvg", str(DOT), "-o", str(SVG)], check=True)
    print(f"wrote {SVG.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
