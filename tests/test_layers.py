"""minigrad's import graph is layered (docs/architecture.md): no module imports a layer above its
own, at module level or inside a function, except the one documented place; and no modules
import each other, directly or through others. The guide says so where it can stay true: its
layer table names every file under its layer, and its picture (docs/img/layers.dot) is what
scripts/layers_dot.py draws from the imports read here."""
from __future__ import annotations

import ast
import importlib.util
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent / "minigrad"

# the layers of docs/architecture.md's table, bottom up (a package's modules take its layer:
# testing/'s, the CPU stand-in for CuPy, are layer 0); every other module is "above" (5)
LAYERS = {"backend": 0, "_xp": 0, "kernels": 0, "testing": 0, "errors": 0, "_util": 0, "_pytree": 0, "_state": 1, "_batched": 1, "grad_mode": 1, "threads": 1,
          "tensor": 2, "tensor_methods": 2, "creation": 2, "engine": 3, "backward": 3, "forward_ad": 3, "batching": 3, "ops": 4}
ABOVE, PACKAGE = 5, 6
# the documented exception: ops/__init__.py binds Tensor's methods, two of which hand a dense
# tensor to the sparse package
ALLOWED = {("minigrad.ops", "minigrad.sparse")}
# the layers' names, as docs/architecture.md's table and the picture scripts/layers_dot.py draws
# (docs/img/layers.dot) call them, by number
NAMES = ("backend", "state", "tensor", "tape", "ops", "above", "package")


def _name(path: pathlib.Path, root: pathlib.Path = ROOT) -> str:
    parts = list(path.with_suffix("").relative_to(root.parent).parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _layer(module: str) -> int:
    parts = module.split(".")
    return PACKAGE if len(parts) == 1 else LAYERS.get(parts[1], ABOVE)


def _imports(path: pathlib.Path, module: str | None = None):
    """(imported module, line) for every import of a minigrad module in ``path`` (the module
    ``module``), wherever it is: at module level or inside a function."""
    module = module or _name(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [target] if node.module else [f"{target}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            if name == "minigrad" or name.startswith("minigrad."):
                yield name, node.lineno


def test_no_module_imports_a_layer_above_its_own():
    upward = []
    for path in sorted(ROOT.rglob("*.py")):
        src = _name(path)
        for dst, line in _imports(path):
            if _layer(dst) > _layer(src) and (src, dst) not in ALLOWED:
                upward.append(f"{path.relative_to(ROOT.parent)}:{line} imports {dst}")
    assert not upward, "imports of a higher layer:\n" + "\n".join(upward)


def test_the_checker_sees_function_level_imports(tmp_path):
    f = tmp_path / "probe.py"
    f.write_text("def f():\n    from .. import sparse\n    import minigrad as mg\n")
    assert [d for d, _ in _imports(f, "minigrad.ops.probe")] == ["minigrad.sparse", "minigrad"]
    assert _layer("minigrad.sparse") > _layer("minigrad.ops.probe") < _layer("minigrad")


def _graph(root: pathlib.Path = ROOT) -> dict:
    """Each module of the package at ``root`` -> the set of its modules it imports (anywhere in it).
    Importing a name from a package counts as importing the package."""
    paths = {_name(p, root): p for p in root.rglob("*.py")}

    def module_of(name):
        while name not in paths and "." in name:
            name = name.rsplit(".", 1)[0]
        return name

    return {m: {module_of(d) for d, _ in _imports(p, m)} - {m} for m, p in paths.items()}


def _cycles(graph: dict) -> list:
    """The import cycles of ``graph`` (strongly connected sets of two or more modules), each as a
    sorted list of module names."""
    index, low, stack, on, found = {}, {}, [], set(), []
    for root in graph:  # Tarjan's algorithm with an explicit stack (no recursion)
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def test_no_import_cycle():
    # docs/architecture.md: no modules import each other, directly or through others, at module
    # level or inside a function (the sparse classes get their methods that build sparse tensors
    # bound in sparse/__init__.py, as Tensor gets its methods in ops/__init__.py)
    cycles = _cycles(_graph())
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_the_checker_sees_cycles(tmp_path):
    # a function-level import closes a cycle through three modules; a module that only imports
    # into the cycle, and one that imports itself, are in none
    pkg = tmp_path / "minigrad"
    (pkg / "sub").mkdir(parents=True)
    for name, text in {"__init__.py": "", "sub/__init__.py": "from . import a\n",
                       "sub/a.py": "from . import b\nimport minigrad\n",
                       "sub/b.py": "def f():\n    from .c import g\n",
                       "sub/c.py": "from .a import x\nimport minigrad.sub.c\n",
                       "sub/d.py": "from .a import x\n"}.items():
        (pkg / name).write_text(text)
    graph = _graph(pkg)
    assert graph["minigrad.sub.b"] == {"minigrad.sub.c"} and graph["minigrad.sub.c"] == {"minigrad.sub.a"}
    assert _cycles(graph) == [["minigrad.sub.a", "minigrad.sub.b", "minigrad.sub.c"]]
    assert _cycles({"x": {"y"}, "y": {"x"}, "z": set()}) == [["x", "y"]]


# -- the picture: docs/img/layers.dot is drawn from the imports by scripts/layers_dot.py ------------

def _layers_dot():
    spec = importlib.util.spec_from_file_location("layers_dot", ROOT.parent / "scripts" / "layers_dot.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_layers_picture_is_drawn_from_the_imports():
    drawn = (ROOT.parent / "docs" / "img" / "layers.dot").read_text(encoding="utf-8")
    assert drawn == _layers_dot().dot_source(), (
        "docs/img/layers.dot is stale (a module was added, moved or imports another layer now): run "
        "`python scripts/layers_dot.py`, which redraws it from the imports (and layers.svg with Graphviz's dot)")


def test_the_picture_draws_the_upward_import_where_it_is():
    # the one documented upward import starts at ops/__init__.py, in a box of its own, and ends
    # at the sparse package; every other arrow joins two layers, the importer's above the imported's
    boxes, layer_edges, upward = _layers_dot().graph()
    assert upward == {("ops/__init__.py", "sparse/")}
    assert "ops/__init__.py" in boxes[LAYERS["ops"]] and "sparse/" in boxes[ABOVE]
    assert all(src > dst for src, dst in layer_edges) and (LAYERS["ops"], LAYERS["engine"]) in layer_edges
    drawn = {path for layer in boxes.values() for paths in layer.values() for path in paths}
    assert drawn == {p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*.py")}


def test_the_script_check_fails_on_a_stale_picture(tmp_path, monkeypatch, capsys):
    script = _layers_dot()
    stale = tmp_path / "layers.dot"
    stale.write_text(script.dot_source().replace("kernels.py", "kernel.py"), encoding="utf-8")
    monkeypatch.setattr(script, "DOT", stale)
    monkeypatch.setattr(script, "REPO", tmp_path)
    assert script.main(["--check"]) == 1 and "python scripts/layers_dot.py" in capsys.readouterr().err
    stale.write_text(script.dot_source(), encoding="utf-8")
    assert script.main(["--check"]) == 0


# -- the table: docs/architecture.md's layer table names every file, under its layer ----------------

GUIDE = ROOT.parent / "docs" / "architecture.md"
_SPAN = re.compile(r"`([^`]+)`")


def _table(text: str) -> dict:
    """The files docs/architecture.md's layer table names -> the layer of their row. A row is
    ``| layer | file | what it holds |``: its file is a path under minigrad/ (``ops/math.py``), or
    a package (``sparse/``) whose files its third cell names (``coo.py``)."""
    section = text.split("\n## The layers\n", 1)[1].split("\n## ", 1)[0]
    named = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) != 3 or cells[0] in ("layer", "---"):
            continue
        layer, (file,), holds = cells[0], _SPAN.findall(cells[1]), cells[2]
        paths = [file] if not file.endswith("/") else [
            file + f for f in _SPAN.findall(holds) if f.endswith(".py") and "/" not in f]
        for path in paths:
            assert path not in named, f"docs/architecture.md's layer table names {path} twice"
            named[path] = layer
    return named


def test_the_layer_table_names_every_file_under_its_layer():
    named = _table(GUIDE.read_text(encoding="utf-8"))
    files = {p.relative_to(ROOT).as_posix(): p for p in ROOT.rglob("*.py")}
    missing = sorted(set(files) - set(named))
    gone = sorted(set(named) - set(files))
    wrong = sorted(f"{path}: the table says {layer}, LAYERS says {NAMES[_layer(_name(files[path]))]}"
                   for path, layer in named.items() if path in files and layer != NAMES[_layer(_name(files[path]))])
    assert not (missing or gone or wrong), (
        "docs/architecture.md's layer table is out of date (a row per file: | layer | `ops/math.py` | what it "
        "holds |; a package's row names its files):\n" + "\n".join(
            [f"  no row: {p}" for p in missing] + [f"  no such file: {p}" for p in gone] + [f"  {w}" for w in wrong]))


def test_the_table_reader_sees_files_and_packages():
    text = ("# Guide\n\n## The layers\n\n| layer | file | what it holds |\n|---|---|---|\n| tape | `engine.py` | `Op`, `run_op.py` |\n"
            "| above | `nn/` | `module.py` (`Module`), `layers.py`; `ops/x.py` |\n## Next\n| ops | `ops/y.py` | z |\n")
    assert _table(text) == {"engine.py": "tape", "nn/module.py": "above", "nn/layers.py": "above"}
