"""The reference in docs/ covers the public surface, and its examples run.

1. Every public name of ``minigrad`` and of ``mg.nn``, ``mg.nn.functional``, ``mg.optim``,
   ``mg.sparse``, ``mg.viz``, ``mg.autograd``, ``mg.func`` and ``mg.distributions`` appears as code somewhere in docs/*.md
   (in a `code span` or a fenced block). The names are each module's ``__all__`` where it
   has one, else its public non-module attributes (for ``minigrad`` itself also the names
   its lazy ``__getattr__`` serves), less NumPy's dtype aliases and ``__future__`` imports.
2. Every ```python block in docs/ runs. Convention: blocks run in order within a page, in
   one fresh process per page, started in an empty temporary directory; a block whose first
   line is ``# doctest: skip`` (followed by the reason) is not run. A block whose first line is
   ``# doctest: scratch ops NAME ...`` (then the reason) registers the ops NAME...: it runs with
   each ``"NAME"`` string made ``"scratch_NAME"``, so that the example's op never clashes with a
   real op of its name (docs/architecture.md's "Adding an op").
"""
from __future__ import annotations

import ast
import importlib
import inspect
import json
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
SKIP_MARK = "# doctest: skip"
SCRATCH_MARK = "# doctest: scratch ops"

NAMESPACES = ["minigrad", "minigrad.nn", "minigrad.nn.functional", "minigrad.optim", "minigrad.sparse",
              "minigrad.viz", "minigrad.autograd", "minigrad.func", "minigrad.distributions"]

# Genuinely internal names that the fallback (no __all__) picks up. Keep it short.
ALLOWLIST = {
    # the engine entry behind Tensor.backward and mg.grad (users call those)
    ("minigrad.autograd", "run_backward"),
}

# which page a missing name belongs on: by the module that defines it, longest prefix first
PAGE_BY_MODULE = [
    ("minigrad.nn", "nn.md"), ("minigrad.optim", "nn.md"), ("minigrad.sparse", "sparse.md"),
    ("minigrad.distributions", "distributions.md"),
    ("minigrad.viz", "viz.md"), ("minigrad.strided", "viz.md"), ("minigrad.io", "io.md"),
    ("minigrad.gradcheck", "gradcheck.md"), ("minigrad.func", "func.md"), ("minigrad.ops.reduce", "ops.md"), ("minigrad.ops", "ops.md"),
    ("minigrad.autograd", "autograd.md"), ("minigrad.profile", "autograd.md"),
    ("minigrad.backend", "devices.md"), ("minigrad.creation", "tensors.md"), ("minigrad.tensor", "tensors.md"),
]
PAGE_BY_NAME = {
    "sum": "sum.md", "AxisError": "sum.md", "GradcheckError": "gradcheck.md", "MinigradError": "index.md",
    "einsum": "einsum.md", "set_num_threads": "threads.md", "get_num_threads": "threads.md",
}


def _is_numpy_dtype_alias(v) -> bool:
    return isinstance(v, type) and issubclass(v, np.generic)


def _lazy_names(mod) -> list[str]:
    """String constants in a module's ``__getattr__`` (the names it serves on demand)."""
    ga = mod.__dict__.get("__getattr__")
    if ga is None:
        return []
    try:
        tree = ast.parse(inspect.getsource(ga).strip())
    except (OSError, TypeError, SyntaxError):
        return []
    return [n.value for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.isidentifier()]


def public_names(modname: str) -> list[str]:
    mod = importlib.import_module(modname)
    if hasattr(mod, "__all__"):
        candidates = list(mod.__all__)
    else:
        candidates = [n for n in dir(mod) if not n.startswith("_")]
        candidates += [n for n in _lazy_names(mod) if not n.startswith("_") and n not in candidates]
    out = []
    for name in candidates:
        try:
            value = getattr(mod, name)
        except (AttributeError, ImportError):  # a lazy name that is not there
            if hasattr(mod, "__all__"):
                out.append(name)  # promised by __all__ but missing: still documented
            continue
        if isinstance(value, types.ModuleType) or _is_numpy_dtype_alias(value):
            continue
        if type(value).__module__ == "__future__":  # from __future__ import annotations
            continue
        if (modname, name) in ALLOWLIST:
            continue
        out.append(name)
    return out


def _page_for(modname: str, name: str) -> str:
    if name in PAGE_BY_NAME and modname == "minigrad":
        return PAGE_BY_NAME[name]
    value = getattr(importlib.import_module(modname), name, None)
    where = getattr(value, "__module__", None) or modname
    if not str(where).startswith("minigrad"):
        where = modname
    for prefix, page in PAGE_BY_MODULE:
        if str(where) == prefix or str(where).startswith(prefix + "."):
            return page
    for prefix, page in PAGE_BY_MODULE:
        if modname == prefix or modname.startswith(prefix + "."):
            return page
    return "index.md"


_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
_SPAN = re.compile(r"`([^`\n]+)`")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def documented_identifiers() -> set[str]:
    """Every identifier that appears inside code (spans or fenced blocks) in docs/*.md."""
    found = set()
    for page in sorted(DOCS.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        for block in _FENCE.findall(text):
            found.update(_IDENT.findall(block))
        for span in _SPAN.findall(_FENCE.sub("", text)):
            found.update(_IDENT.findall(span))
    return found


def test_docs_pages_exist():
    pages = {p.name for p in DOCS.glob("*.md")}
    for page in ("index.md", "tensors.md", "ops.md", "sum.md", "autograd.md", "gradcheck.md", "sparse.md",
                 "einsum.md", "nn.md", "io.md", "viz.md", "devices.md", "threads.md", "func.md",
                 "distributions.md"):
        assert page in pages, f"docs/{page} is missing"


def test_every_public_name_is_documented():
    have = documented_identifiers()
    missing = {}
    for modname in NAMESPACES:
        for name in public_names(modname):
            if name not in have:
                missing.setdefault(_page_for(modname, name), []).append(f"{modname}.{name}")
    if missing:
        lines = [f"  docs/{page}: {', '.join(sorted(names))}" for page, names in sorted(missing.items())]
        pytest.fail("public names missing from docs/*.md (write each as `code` on the page named):\n"
                    + "\n".join(lines))


def _runnable_blocks(page: Path) -> list[str]:
    blocks = re.findall(r"^```python\n(.*?)^```", page.read_text(encoding="utf-8"), re.S | re.M)
    return [_scratch(b) for b in blocks if not b.lstrip().startswith(SKIP_MARK)]


def _scratch(block: str) -> str:
    """``block`` with the ops its ``# doctest: scratch ops NAME ... (reason)`` line names registered
    as ``scratch_NAME`` (each ``"NAME"`` string renamed); any other block as it is."""
    first = block.lstrip().split("\n", 1)[0]
    if not first.startswith(SCRATCH_MARK):
        return block
    for name in first[len(SCRATCH_MARK):].split("(", 1)[0].split():
        block = block.replace(f'"{name}"', f'"scratch_{name}"')
    return block


PAGES = sorted(DOCS.glob("*.md"))


# Runs the pages' scripts. NumPy and minigrad are imported once, then each page runs in a
# forked child (its own process state, cwd and namespace) where fork exists, else in a
# fresh interpreter: most of a page's time would otherwise be spent importing.
_DRIVER = r"""
import json, os, subprocess, sys, traceback
jobs = json.loads(sys.argv[1])
results = {}
if hasattr(os, "fork"):
    import numpy, minigrad, minigrad.nn, minigrad.optim, minigrad.sparse, minigrad.viz  # noqa: F401
    kids = {}
    for name, script, cwd in jobs:
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                sys.stdout = open(os.devnull, "w")  # the examples' prints are not needed
                os.chdir(cwd)
                src = open(script, encoding="utf-8").read()
                exec(compile(src, script, "exec"), {"__name__": "__main__"})
            except BaseException:
                code = 1
                with open(os.path.join(cwd, "error.txt"), "w", encoding="utf-8") as f:
                    f.write(traceback.format_exc())
            os._exit(code)
        kids[name] = (pid, cwd)
    for name, (pid, cwd) in kids.items():
        _, status = os.waitpid(pid, 0)
        err = os.path.join(cwd, "error.txt")
        text = open(err, encoding="utf-8").read() if os.path.exists(err) else ""
        results[name] = [os.waitstatus_to_exitcode(status), text]
else:
    for name, script, cwd in jobs:
        r = subprocess.run([sys.executable, script], cwd=cwd, capture_output=True, text=True)
        results[name] = [r.returncode, r.stderr]
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def example_runs(tmp_path_factory):
    """``page name -> (returncode, traceback)`` for every page with runnable blocks."""
    jobs = []
    for page in PAGES:
        blocks = _runnable_blocks(page)
        if not blocks:
            continue
        # one script per page: the blocks in order, each labelled so a failure says which
        script = "".join(f"# --- {page.name}, block {i + 1}\n{b}\n" for i, b in enumerate(blocks))
        cwd = tmp_path_factory.mktemp(page.stem)
        path = cwd / f"{page.stem}_examples.py"
        path.write_text(script, encoding="utf-8")
        jobs.append((page.name, str(path), str(cwd)))
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("MINIGRAD_DEVICE", None)
    res = subprocess.run([sys.executable, "-c", _DRIVER, json.dumps(jobs)], env=env, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, f"the docs example driver failed:\n{res.stderr[-3000:]}"
    return {name: tuple(v) for name, v in json.loads(res.stdout.strip().splitlines()[-1]).items()}


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_examples_run(page, example_runs):
    if page.name not in example_runs:
        pytest.skip(f"{page.name} has no runnable python block")
    rc, err = example_runs[page.name]
    assert rc == 0, (
        f"a python block in docs/{page.name} failed (the traceback's script labels each block "
        f"'# --- {page.name}, block N'):\n{err[-3000:]}"
    )


def test_the_guide_s_new_op_runs_in_both_modes():
    # docs/architecture.md's "Adding an op" registers its example ops under scratch names (never
    # skipped), and the page's next block gradchecks them in both modes to order 2 (test_examples_run)
    blocks = _runnable_blocks(DOCS / "architecture.md")
    at = [i for i, b in enumerate(blocks) if 'sumsq = row("scratch_sumsq"' in b]
    assert at, "docs/architecture.md: the sumsq row of 'Adding an op' is not run (or not under a scratch name)"
    check = blocks[at[0] + 1]
    assert "jvp=" in blocks[at[0]] and "sumsq(" in check and 'modes=("rev", "fwd"), order=2' in check


# -- docs/pytorch.md's table of PyTorch names, written from the registry by scripts/pytorch_table.py ---------


def _pytorch_table():
    import importlib.util  # noqa: PLC0415

    spec = importlib.util.spec_from_file_location("pytorch_table", ROOT / "scripts" / "pytorch_table.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_pytorch_table_is_what_the_registry_gives():
    torch = pytest.importorskip("torch")
    script = _pytorch_table()
    text = (DOCS / "pytorch.md").read_text(encoding="utf-8")
    assert script.rewritten(text, torch) == text, (
        "docs/pytorch.md's table of PyTorch names is stale (an op was added, renamed or given a torch oracle): "
        "run `python scripts/pytorch_table.py`")
    rows = script.rows(torch)  # a name PyTorch spells otherwise is found through the op's oracle
    assert any(("torch", "clamp") in theirs and ("mg", "clip") in ours for theirs, ours in rows)
    assert any(("torch", "cat") in theirs and ("mg", "concatenate") in ours for theirs, ours in rows)


def test_names_with_two_meanings_stay_listed_by_hand():
    # split, sort, median, unique and repeat mean different things in NumPy and PyTorch: the hand-written
    # sections of docs/pytorch.md say which spelling gives which (the generated table alone would not)
    script = _pytorch_table()
    text = (DOCS / "pytorch.md").read_text(encoding="utf-8")
    by_hand = text.split(script.BEGIN)[0] + text.split(script.END)[1]
    spans = " ".join(_SPAN.findall(_FENCE.sub("", by_hand)))
    for name in ("split", "sort", "median", "unique", "repeat"):
        assert re.search(rf"\b{name}\b", spans), f"docs/pytorch.md no longer says what {name} gives in each library"


def test_the_table_script_check_fails_on_a_stale_table(tmp_path, monkeypatch, capsys):
    torch = pytest.importorskip("torch")
    script = _pytorch_table()
    page = tmp_path / "pytorch.md"
    good = script.rewritten((DOCS / "pytorch.md").read_text(encoding="utf-8"), torch)
    page.write_text(good.replace("| `torch.gather`, `t.gather` | `mg.gather`, `t.gather` |\n", ""), encoding="utf-8")
    monkeypatch.setattr(script, "DOC", page)
    monkeypatch.setattr(script, "REPO", tmp_path)
    assert script.main(["--check"]) == 1 and "python scripts/pytorch_table.py" in capsys.readouterr().err
    assert script.main([]) == 0 and page.read_text(encoding="utf-8") == good
    assert script.main(["--check"]) == 0
