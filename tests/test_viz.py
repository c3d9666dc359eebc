"""mg.viz (DOT text, graphviz objects, rendering) and the tape as text."""
import gc
import re
import shutil
import time
import weakref
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import minigrad as mg
from conftest import leaf, to_np

HAS_DOT = shutil.which("dot") is not None
needs_dot = pytest.mark.skipif(not HAS_DOT, reason="Graphviz 'dot' is not installed")


def mlp_loss():
    x = leaf((4, 3), seed=1)
    w = leaf((3, 5), seed=2)
    b = leaf((5,), seed=3)
    loss = (x @ w + b).relu().sum(axis=1, keepdims=True).mean()
    return loss, x, w, b


def unit_lines(src):
    """The op / chain / module boxes drawn."""
    return [ln for ln in src.splitlines() if re.match(r"\s*(op|run|mod)\d+ \[", ln)]


# -- the DOT text ---------------------------------------------------------------------------------

def test_dot_has_op_names_shapes_dtypes_and_attributes():
    loss, *_ = mlp_loss()
    src = mg.viz.dot_source(loss)
    assert src.startswith("digraph minigrad {") and src.rstrip().endswith("}")
    for op in ("matmul", "add", "relu", "sum", "div"):
        assert f'label="{op}' in src
    for shape in ("(4, 3)", "(3, 5)", "(5,)", "(4, 5)", "(4, 1)", "()"):
        assert shape in src
    assert "float64" in src
    assert "axis=(1,) keepdims=True" in src
    assert "leaf · requires_grad" in src
    assert 'output\\n() float64' in src


def test_reductions_and_broadcasts_are_marked():
    loss, *_ = mlp_loss()
    src = mg.viz.dot_source(loss)
    assert "Σ reduces · grad broadcast back" in src          # sum
    assert "broadcast (5,) → (4, 5)" in src                  # the bias added to every row
    assert "Σ grad summed back" in src
    y = mg.broadcast_to(leaf((1, 3)), (4, 3)).sum()
    src = mg.viz.dot_source(y)
    assert "broadcast · grad summed back" in src and "shape=(4, 3)" in src
    # a weight shared across a batch: matmul broadcasts it, its gradient is summed over the batch
    y = (leaf((2, 3, 4)) @ leaf((4, 5))).sum()
    assert "batch broadcast () → (2,)" in mg.viz.dot_source(y)
    # no false alarm where shapes match
    assert "summed back" not in mg.viz.dot_source((leaf((3,)) * leaf((3,), seed=1)).sum())


def test_einsum_pattern_shows_the_contracted_labels():
    pytest.importorskip("minigrad.ops.einsum")
    y = mg.einsum("ij,jk->ik", leaf((2, 3)), leaf((3, 4))).sum()
    src = mg.viz.dot_source(y)
    assert "pattern=" in src and "Σ over" in src


def test_after_backward_leaves_show_grad_shape_and_norm():
    loss, x, w, b = mlp_loss()
    assert "‖g‖" not in mg.viz.dot_source(loss)
    loss.backward()
    src = mg.viz.dot_source(loss)
    norm = np.linalg.norm(to_np(w.grad))
    assert f"grad (3, 5) ‖g‖={norm:.4g}" in src
    assert "grad (5,) ‖g‖=" in src and "grad (4, 3) ‖g‖=" in src


def test_retained_intermediate_grad_is_shown():
    x = leaf((3,))
    h = x * 2.0
    h.retain_grad()
    y = h.sum()
    y.backward()
    assert mg.viz.dot_source(y).count("grad (3,) ‖g‖=") == 2  # the leaf and h


def test_parameter_names_from_a_dict_pairs_or_tensor_name():
    loss, x, w, b = mlp_loss()
    src = mg.viz.dot_source(loss, params={"fc.weight": w, "fc.bias": b})
    assert "fc.weight" in src and "fc.bias" in src
    assert "subgraph cluster_0" in src and 'label="fc"' in src      # grouped by module prefix
    src2 = mg.viz.dot_source(loss, params=[("fc.weight", w), ("fc.bias", b)])
    assert src2 == src
    x.name = "inputs"
    assert "inputs\\n(4, 3)" in mg.viz.dot_source(loss)


def test_collapse_modules_draws_one_box_per_module():
    loss, x, w, b = mlp_loss()
    loss.backward()
    src = mg.viz.dot_source(loss, params={"fc.weight": w, "fc.bias": b}, collapse_modules=True)
    boxes = [ln for ln in unit_lines(src) if ln.strip().startswith("mod")]
    assert len(boxes) == 1
    assert "weight (3, 5) · grad (3, 5)" in boxes[0] and "ops: matmul, add" in boxes[0]
    assert "op0 [" not in src and "op1 [" not in src          # matmul and add are inside the box
    assert "relu" in src


def test_params_from_a_module_like_object():
    loss, x, w, b = mlp_loss()

    class Lin:
        def named_parameters(self):
            return [("0.weight", w), ("0.bias", b)]

        def named_modules(self):
            return [("", self), ("0", self)]

    src = mg.viz.dot_source(loss, params=Lin())
    assert "0.weight" in src and 'label="0 (Lin)"' in src


def test_show_tensors_false_and_rankdir():
    loss, *_ = mlp_loss()
    full = mg.viz.dot_source(loss)
    lean = mg.viz.dot_source(loss, show_tensors=False, rankdir="LR")
    assert "rankdir=LR" in lean and "rankdir=TB" in full
    assert "t0 [" in full and "t0 [" not in lean
    assert 'op0 -> op1 [label="(4, 5)"]' in lean               # edges carry the shapes instead
    assert "output" in lean                                      # the output is always drawn
    with pytest.raises(ValueError, match="rankdir"):
        mg.viz.dot_source(loss, rankdir="sideways")
    with pytest.raises(ValueError, match="max_nodes"):
        mg.viz.dot_source(loss, max_nodes=0)


def test_tensor_used_twice_by_one_op():
    x = leaf((3,))
    h = x + 1.0
    src = mg.viz.dot_source((h * h).sum())
    assert 't0 -> op1 [taillabel="×2"]' in src


def test_multi_output_function():
    class Split(mg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x[:2] * 1.0, x[2:] * 1.0

        @staticmethod
        def backward(ctx, ga, gb):
            return mg.concatenate([ga, gb])

    x = leaf((5,))
    a, b = Split.apply(x)
    y = a.sum() + (b * 2.0).sum()
    src = mg.viz.dot_source(y)
    assert "Split" in src and "t0_1 [" in src and "(3,)" in src
    y.backward()
    assert "grad (5,)" in mg.viz.dot_source(y)


def test_several_roots_and_a_leaf_root():
    x = leaf((3,))
    y1, y2 = (x * 2.0).sum(), (x * 3.0).sum()
    src = mg.viz.dot_source([y1, y2])
    assert src.count("output") == 2 and src.count("leaf0 [") == 1
    assert "output · leaf" in mg.viz.dot_source(x)


def test_labels_are_escaped():
    x = leaf((2,))
    x.name = 'say "hi" \\ there'
    src = mg.viz.dot_source((x * x).sum())
    assert 'say \\"hi\\" \\\\ there' in src
    if HAS_DOT:
        import subprocess

        assert subprocess.run(["dot", "-Tsvg"], input=src.encode(), capture_output=True).returncode == 0


def test_deep_chain_dot_text_no_recursion():
    n = 50_000  # 100 000 ops (mul, tanh)
    x, a = leaf((3,)), mg.tensor([0.9, 0.8, 0.7], requires_grad=True)
    y = x
    for _ in range(n):
        y = (y * a).tanh()
    loss = y.sum()
    t0 = time.perf_counter()
    src = mg.viz.dot_source(loss)                     # summary by default
    assert time.perf_counter() - t0 < 20
    assert "summary of 100001 ops" in src and "chain of 99996 ops" in src
    assert "mul ×" in src and "tanh ×" in src
    assert len(unit_lines(src)) < 10


def test_deep_chain_full_dot_text():
    x = leaf((3,))
    y = x
    for _ in range(20_000):
        y = y * 1.0001
    src = mg.viz.dot_source(y.sum(), max_nodes=None, show_tensors=False)
    assert len(unit_lines(src)) == 20_001


def test_wide_graph_is_capped_with_a_note():
    x = leaf((3,))
    acc = x * 0.0
    for i in range(300):
        acc = acc + (x * float(i)).exp()   # no linear chain to collapse
    src = mg.viz.dot_source(acc.sum(), max_nodes=50)
    assert len(unit_lines(src)) <= 51
    m = re.search(r"… (\d+) earlier ops not drawn \(max_nodes=50\)", src)
    assert m and int(m.group(1)) > 800
    assert "more -> " in src


def test_viz_keeps_no_graph_alive():
    loss, x, w, b = mlp_loss()
    ref = weakref.ref(loss._node)
    src = mg.viz.dot_source(loss, params={"w": w})
    pytest.importorskip("graphviz")
    g = mg.viz.graph(loss)
    del loss
    gc.collect()
    assert ref() is None
    assert "matmul" in src and "matmul" in g.source


# -- graphviz objects and rendering ---------------------------------------------------------------

def test_graph_returns_a_digraph_with_the_same_text():
    graphviz = pytest.importorskip("graphviz")
    loss, x, w, b = mlp_loss()
    g = mg.viz.graph(loss, rankdir="LR", params={"fc.weight": w})
    assert isinstance(g, graphviz.Digraph)
    assert g.source == mg.viz.dot_source(loss, rankdir="LR", params={"fc.weight": w})


@needs_dot
def test_save_svg_is_valid_svg(tmp_path):
    loss, x, w, b = mlp_loss()
    loss.backward()
    p = mg.viz.save(loss, tmp_path / "g.svg", params={"fc.weight": w, "fc.bias": b})
    root = ET.parse(p).getroot()
    assert root.tag.endswith("svg")
    text = p.read_text(encoding="utf-8")
    assert "matmul" in text and "fc.weight" in text


@needs_dot
def test_save_png_and_pdf(tmp_path):
    loss, *_ = mlp_loss()
    assert mg.viz.save(loss, tmp_path / "g.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert mg.viz.save(loss, tmp_path / "g.pdf").read_bytes()[:4] == b"%PDF"
    assert mg.viz.save(loss, tmp_path / "g.out", format="svg").read_bytes().lstrip().startswith(b"<?xml")


@needs_dot
def test_jupyter_display_and_render(tmp_path):
    pytest.importorskip("graphviz")
    loss, *_ = mlp_loss()
    g = mg.viz.graph(loss)
    bundle = g._repr_mimebundle_()
    assert "<svg" in bundle["image/svg+xml"]
    out = g.render(tmp_path / "loss", format="svg")
    assert ET.parse(out).getroot().tag.endswith("svg")


def test_save_dot_text_needs_no_graphviz(tmp_path, monkeypatch):
    monkeypatch.setattr(mg.viz.shutil, "which", lambda name: None)
    loss, *_ = mlp_loss()
    p = mg.viz.save(loss, tmp_path / "g.dot")
    assert p.read_text(encoding="utf-8") == mg.viz.dot_source(loss)
    with pytest.raises(ValueError, match=r"\.svg, \.png, \.pdf"):
        mg.viz.save(loss, tmp_path / "g.jpeg")


def test_missing_dot_says_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setattr(mg.viz.shutil, "which", lambda name: None)
    loss, *_ = mlp_loss()
    with pytest.raises(mg.viz.GraphvizNotFoundError) as e:
        mg.viz.save(loss, tmp_path / "g.svg")
    msg = str(e.value)
    assert "apt-get install graphviz" in msg and "brew install graphviz" in msg
    assert isinstance(e.value, RuntimeError) and isinstance(e.value, mg.MinigradError)
    assert not (tmp_path / "g.svg").exists()


def test_missing_dot_through_the_graphviz_object(tmp_path, monkeypatch):
    pytest.importorskip("graphviz")
    loss, *_ = mlp_loss()
    g = mg.viz.graph(loss)
    monkeypatch.setenv("PATH", str(tmp_path))          # no `dot` anywhere
    with pytest.raises(mg.viz.GraphvizNotFoundError, match="apt-get install graphviz"):
        g.render(tmp_path / "loss", format="svg")
    with pytest.raises(mg.viz.GraphvizNotFoundError):
        g.pipe(format="svg")
    bundle = g._repr_mimebundle_()                      # Jupyter: a readable note, not a traceback
    assert "apt-get install graphviz" in bundle["text/plain"]


# -- the tape as text -----------------------------------------------------------------------------

def test_tape_table():
    loss, *_ = mlp_loss()
    tape = mg.autograd.tape(loss)
    assert [n.op for n in tape] == ["matmul", "add", "relu", "sum", "sum", "div"]
    text = str(tape)
    lines = text.splitlines()
    assert lines[0].split() == ["#", "op", "inputs", "->", "output", "dtype", "saved", "attrs"]
    assert re.search(r"^0\s+matmul\s+\(4, 3\), \(3, 5\) -> \(4, 5\)\s+float64\s+216 B", text, re.M)
    assert re.search(r"^1\s+add\s+\(4, 5\), \(5,\) -> \(4, 5\)", text, re.M)
    assert "axis=(1,) keepdims=True" in text
    assert "(), const -> ()" in text                    # the divisor of mean is a constant
    assert lines[-1].startswith("6 ops,") and "saved for backward" in lines[-1]
    loss.backward()
    assert str(mg.autograd.tape(loss)).count("freed") == 6


# -- widely shared tensors, writes in place --------------------------------------------------------------

def rnn_loss(steps=300):
    """An unrolled RNN: two weights feed every step (hundreds of ops each)."""
    rng = np.random.default_rng(0)
    W = mg.tensor(rng.standard_normal((8, 8)) * 0.3, requires_grad=True)
    U = mg.tensor(rng.standard_normal((4, 8)) * 0.3, requires_grad=True)
    h = mg.zeros(2, 8, dtype=mg.float64)
    for _ in range(steps):
        h = (h @ W + mg.tensor(rng.standard_normal((2, 4))) @ U).tanh()
    return h.sum(), W, U


def test_a_widely_shared_leaf_is_drawn_again_beside_each_use():
    loss, W, U = rnn_loss()
    src = mg.viz.dot_source(loss, params={"W": W, "U": U})
    (j,) = re.findall(r'^\s*leaf(\d+) \[label="W\\n\(8, 8\)', src, re.M)   # the leaf itself: drawn once
    assert len(re.findall(rf"^\s*leaf{j} -> ", src, re.M)) == 1            # with one edge, to its first use
    refs = re.findall(r'^\s*(ref\d+) \[label="↪ W \(8, 8\)"', src, re.M)
    assert len(refs) > 100                                                 # each further use: a small copy
    assert all(re.search(rf"^\s*{r} -> op\d+", src, re.M) for r in refs[:5])
    assert "drawn again beside each further use" in src
    assert "↪" not in mg.viz.dot_source(mlp_loss()[0])                     # small fan-outs: one node, edges


@needs_dot
def test_a_big_graph_with_shared_weights_renders_in_seconds():
    import subprocess

    loss, W, U = rnn_loss()
    src = mg.viz.dot_source(loss, params={"W": W, "U": U})  # 1201 ops: a summary of the last 500
    t0 = time.perf_counter()
    r = subprocess.run(["dot", "-Tsvg"], input=src.encode(), capture_output=True, timeout=120)
    assert r.returncode == 0 and b"<svg" in r.stdout
    assert time.perf_counter() - t0 < 60  # one W node with 250 long edges took dot minutes


def test_in_place_ops_show_where_their_operand_was_broadcast():
    x, b = leaf((3, 4)), leaf((4,), seed=1)
    h = x * 1
    h += b                  # add_: b broadcast over the rows, its gradient summed back
    h[0] += b               # through a view: b fits the row, nothing to mark
    h.pow_(2)
    src = mg.viz.dot_source(h.sum())
    marks = [ln for ln in src.splitlines() if "Σ grad summed back" in ln]
    assert len(marks) == 1 and "broadcast (4,) → (3, 4)" in marks[0]
    for op in ("add_", "copy_slices\\nop=add_", "setitem", "pow_"):
        assert f'label="{op}' in src


def test_without_the_graphviz_package(tmp_path, monkeypatch):
    """The graphviz Python package is optional: graph() says how to get it; the DOT text and save() need
    only the `dot` program (save) or nothing at all (dot_source, .dot files)."""
    import sys

    monkeypatch.setitem(sys.modules, "graphviz", None)  # `import graphviz` now raises ImportError
    loss, *_ = mlp_loss()
    with pytest.raises(ImportError, match=r"pip install graphviz.*dot_source"):
        mg.viz.graph(loss)
    assert "matmul" in mg.viz.dot_source(loss)
    assert mg.viz.save(loss, tmp_path / "g.dot").exists()
    if HAS_DOT:
        assert ET.parse(mg.viz.save(loss, tmp_path / "g.svg")).getroot().tag.endswith("svg")


def test_inputs_that_need_no_grad_are_drawn_as_such():
    m = mg.nn.Linear(3, 2)
    x = mg.randn(4, 3)                      # the data batch: no grad
    mask = mg.ones(4, 2)
    loss = mg.nn.functional.cross_entropy(m(x) * mask, [0, 1, 0, 1])
    dot = mg.viz.dot_source(loss, params=m)
    consts = re.findall(r'c\d+_\d+ \[label="([^"]*)"', dot)
    assert sorted(consts) == ["(4, 2) float32\\nno grad", "(4, 3) float32\\nno grad"]
    assert len(re.findall(r"c\d+_\d+ -> op\d+", dot)) == 2
    assert "no grad" not in mg.viz.dot_source(loss, params=m, show_tensors=False)
    assert "no grad" not in mg.viz.dot_source((m.weight * 2.0).sum())   # a Python scalar is not a tensor


def test_einsum_is_shown_in_the_users_own_names():
    q = mg.randn(2, 5, 8, requires_grad=True)
    k = mg.randn(2, 7, 8, requires_grad=True)
    s = mg.einsum(q, k, "batch seq d, batch key d -> batch seq key")
    (node,) = list(mg.autograd.tape(s))
    assert node.info["pattern"] == "batch seq d, batch key d -> batch seq key"
    assert "Σ over d" in mg.viz.dot_source(s)
    (node,) = list(mg.autograd.tape(mg.einsum("bqd,bkd->bqk", q, k)))
    assert node.info["pattern"] == "bqd,bkd->bqk"


# -- following a gradient: highlight= and color_by="grad" ----------------------------------------

RED = "#cc0000"


def red_ids(src):
    """Ids of the nodes and edges drawn in red (node 'op2', edge 'op2->t2')."""
    out = set()
    for ln in src.splitlines():
        if RED not in ln or ln.lstrip().startswith("graph ["):
            continue
        m = re.match(r"\s*(\w+) -> (\w+)", ln) or re.match(r"\s*(\w+) \[", ln)
        out.add("->".join(m.groups()))
    return out


def test_highlight_draws_the_op_and_its_path_to_the_output_in_red():
    loss, x, w, b = mlp_loss()
    tape = mg.autograd.tape(loss)
    assert tape[2].op == "relu"
    src = mg.viz.dot_source(loss, highlight=tape[2])
    path = {"op2", "op3", "op4", "op5", "t2", "t3", "t4", "t5"}
    edges = {"op2->t2", "t2->op3", "op3->t3", "t3->op4", "op4->t4", "t4->op5", "op5->t5"}
    assert red_ids(src) == path | edges                    # and nothing before relu
    assert 'op2 [label="relu"' in src and 'color="#cc0000" penwidth=2.5 fontcolor="#cc0000"' in src
    assert "in red: the highlighted op and its path to the output" in src
    # everything else is drawn as without highlight=
    plain = mg.viz.dot_source(loss)
    assert RED not in plain
    hl, pl = lines_by_id(src), lines_by_id(plain)
    assert hl.keys() == pl.keys()
    assert all(hl[k] == pl[k] for k in hl if k not in path | edges)


def lines_by_id(src):
    """node or edge id -> its DOT line."""
    out = {}
    for ln in src.splitlines():
        m = re.match(r"\s*(\w+) -> (\w+)", ln) or re.match(r"\s*(\w+) \[", ln)
        if m and m.group(1) not in ("graph", "node", "edge"):
            out["->".join(m.groups())] = ln
    return out


def test_highlight_a_leaf_a_tensor_or_several():
    loss, x, w, b = mlp_loss()
    src = mg.viz.dot_source(loss, highlight=b)             # a leaf: its gradient's whole way back
    ids = red_ids(src)
    assert "leaf2" in ids and "leaf2->op1" in ids and "op1" in ids and "op5" in ids
    assert not ids & {"leaf0", "leaf1", "op0", "t0", "leaf0->op0", "t0->op1"}
    h = mg.autograd.tape(loss)[3]
    by_tensor = mg.viz.dot_source(loss, highlight=loss)    # a non-leaf tensor: the op that made it
    assert red_ids(by_tensor) == {"op5", "t5", "op5->t5"}
    assert red_ids(mg.viz.dot_source(loss, highlight=[h, loss])) == red_ids(mg.viz.dot_source(loss, highlight=h))
    y1, y2 = (x * 2.0).sum(), (w * 3.0).sum()                   # two roots: only x's branch
    ids = red_ids(mg.viz.dot_source([y1, y2], highlight=[x]))
    assert "leaf0" in ids and "op0" in ids and "op1" in ids and not ids & {"leaf1", "op2", "op3"}
    with pytest.raises(ValueError, match="highlight"):
        mg.viz.dot_source(loss, highlight=leaf((3,)))         # not in this graph
    with pytest.raises(ValueError, match="highlight"):
        mg.viz.dot_source(loss, highlight=mg.autograd.tape((leaf((2,)) * 2.0).sum())[0])


def test_highlight_in_graph_and_save_and_without_tensor_nodes(tmp_path):
    loss, *_ = mlp_loss()
    node = mg.autograd.tape(loss)[1]
    src = mg.viz.dot_source(loss, highlight=node)
    assert mg.viz.save(loss, tmp_path / "g.dot", highlight=node).read_text(encoding="utf-8") == src
    lean = mg.viz.dot_source(loss, highlight=node, show_tensors=False)
    assert red_ids(lean) == {"op1", "op2", "op3", "op4", "op5", "t5", "op1->op2", "op2->op3", "op3->op4",
                             "op4->op5", "op5->t5"}
    if HAS_DOT:
        import subprocess

        assert subprocess.run(["dot", "-Tsvg"], input=src.encode(), capture_output=True).returncode == 0
    pytest.importorskip("graphviz")
    assert mg.viz.graph(loss, highlight=node).source == src


def test_highlight_in_a_summary_chains_and_shared_weights():
    x = leaf((3,))
    y = x
    for _ in range(600):
        y = (y * 1.01).tanh()
    loss = y.sum()
    tape = mg.autograd.tape(loss)
    src = mg.viz.dot_source(loss, max_nodes=4, highlight=tape[0])   # inside the collapsed chain
    ids = red_ids(src)
    assert any(i.startswith("run") for i in ids) and f"op{len(tape) - 1}" in ids
    assert "leaf0" not in ids
    # an RNN's weight: its ↪ copies are red too, the other weight's are not
    loss, W, U = rnn_loss(steps=30)
    src = mg.viz.dot_source(loss, params={"W": W, "U": U}, highlight=W)
    refs = re.findall(r'^\s*(ref\d+) \[label="↪ (\w)', src, re.M)
    assert refs and all((r in red_ids(src)) == (name == "W") for r, name in refs)


def grads_of(src):
    """node id -> fillcolor, for the tensor nodes a gradient coloured."""
    from minigrad.viz._style import GRAD_PALETTE

    out = {}
    for m in re.finditer(r'^\s*(\w+) \[label="[^"]*‖g‖[^"]*".*?fillcolor="(#\w+)"', src, re.M):
        out[m.group(1)] = m.group(2)
    return {k: v for k, v in out.items() if v in GRAD_PALETTE or v in ("#ffffff", "#000000")}


def test_color_by_grad_fills_by_norm_with_a_legend():
    from minigrad.viz._style import GRAD_PALETTE

    loss, x, w, b = mlp_loss()
    before = mg.viz.dot_source(loss, color_by="grad")
    assert "no gradients to colour yet" in before and "legend" not in before
    loss.backward()
    src = mg.viz.dot_source(loss, color_by="grad")
    norms = {t: float(np.linalg.norm(to_np(t.grad))) for t in (x, w, b)}
    lo, hi = min(norms.values()), max(norms.values())
    assert re.search(r"^\s*legend \[label=<<table", src, re.M)
    assert f"‖grad‖, log scale: {lo:.3g} … {hi:.3g}" in src
    fills = grads_of(src)
    ids = {x: "leaf0", w: "leaf1", b: "leaf2"}
    order = sorted(norms, key=norms.get)
    assert fills[ids[order[0]]] == GRAD_PALETTE[0] and fills[ids[order[-1]]] == GRAD_PALETTE[-1]
    assert "no gradients" not in src
    # without color_by the picture is unchanged
    assert "legend" not in mg.viz.dot_source(loss)
    with pytest.raises(ValueError, match="color_by"):
        mg.viz.dot_source(loss, color_by="norm")


def test_color_by_grad_marks_zero_and_nonfinite_gradients_and_retained_ones():
    x, z = leaf((3,)), leaf((2,), seed=1)
    h = x * 2.0
    h.retain_grad()
    loss = h.sum() + (z * 0.0).sum()
    loss.backward()
    src = mg.viz.dot_source(loss, color_by="grad")
    fills = grads_of(src)
    assert len(fills) == 3                                       # x, z and the retained h
    zline = next(ln for ln in src.splitlines() if "(2,) float64" in ln and "leaf" in ln.split()[0])
    assert 'style="filled,dashed"' in zline and 'fillcolor="#ffffff"' in zline
    assert "zero gradient (1)" in src
    x.grad = x.grad * float("nan")
    src = mg.viz.dot_source(loss, color_by="grad")
    assert 'fillcolor="#000000"' in src and "nan or inf in the gradient (1)" in src
    if HAS_DOT:
        import subprocess

        r = subprocess.run(["dot", "-Tsvg"], input=src.encode(), capture_output=True)
        assert r.returncode == 0 and b"zero gradient" in r.stdout


def test_color_by_grad_and_highlight_together_render(tmp_path):
    loss, x, w, b = mlp_loss()
    loss.backward()
    src = mg.viz.dot_source(loss, color_by="grad", highlight=b, params={"fc.weight": w, "fc.bias": b})
    bline = next(ln for ln in src.splitlines() if ln.lstrip().startswith("leaf") and "fc.bias" in ln)
    assert RED in bline and "fillcolor=\"#" in bline and 'fontcolor="#cc0000"' not in bline  # fill kept readable
    if HAS_DOT:
        p = mg.viz.save(loss, tmp_path / "g.svg", color_by="grad", highlight=b)
        assert ET.parse(p).getroot().tag.endswith("svg")
