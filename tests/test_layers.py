"""minigrad's import graph is layered (docs/architecture.md): no module imports a layer above its
own, at module level or inside a function, except the one documented place."""
from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent / "minigrad"

# the layers of docs/architecture.md's table, bottom up (a package's modules take its layer:
# _fakecupy/'s are layer 0); every other module is "above" (5)
LAYERS = {"backend": 0, "_fakecupy": 0, "errors": 0, "_util": 0, "_state": 1, "threads": 1,
          "tensor": 2, "engine": 3, "backward": 3, "ops": 4}
ABOVE, PACKAGE = 5, 6
# the documented exception: ops/__init__.py binds Tensor's methods, two of which hand a dense
# tensor to the sparse package
ALLOWED = {("minigrad.ops", "minigrad.sparse")}


def _name(path: pathlib.Path) -> str:
    parts = list(path.with_suffix("").relative_to(ROOT.parent).parts)
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


def _cycles():
    """The import cycles among minigrad's modules (strongly connected sets of two or more), each
    as a sorted list of module names. Importing a name from a package counts as importing it."""
    paths = {_name(p): p for p in ROOT.rglob("*.py")}

    def module_of(name):
        while name not in paths and "." in name:
            name = name.rsplit(".", 1)[0]
        return name

    graph = {m: {module_of(d) for d, _ in _imports(p)} - {m} for m, p in paths.items()}
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


def test_the_one_import_cycle_is_inside_sparse():
    # docs/architecture.md: a sparse tensor's methods call the sparse functions that build sparse
    # tensors (function-level imports); no other modules import each other
    cycles = _cycles()
    assert all(all(m.startswith("minigrad.sparse.") for m in c) for c in cycles), cycles
    assert len(cycles) <= 1, cycles
