"""mg.viz.grad_flow: mean and max |grad| per parameter on a log axis (matplotlib)."""
import sys

import numpy as np
import pytest

import minigrad as mg
from conftest import to_np


def trained_mlp():
    mg.manual_seed(0)
    model = mg.nn.Sequential(mg.nn.Linear(4, 8), mg.nn.ReLU(), mg.nn.Linear(8, 3))
    loss = mg.nn.functional.cross_entropy(model(mg.randn(16, 4)), [0, 1, 2, 0] * 4)
    loss.backward()
    return model


def marks(ax, label):
    """x positions of the markers drawn with ``label``."""
    lines = [ln for ln in ax.get_lines() if ln.get_label() == label]
    return [] if not lines else [int(v) for v in lines[0].get_xdata()]


def test_one_pair_of_bars_per_parameter_in_order(tmp_path):
    pytest.importorskip("matplotlib")
    model = trained_mlp()
    names = [n for n, _ in model.named_parameters()]
    fig = mg.viz.grad_flow(model, path=tmp_path / "flow.png")
    (ax,) = fig.axes
    assert ax.get_yscale() == "log"
    maxes, means = ax.containers
    assert len(maxes) == len(means) == len(names) == 4
    assert [t.get_text() for t in ax.get_xticklabels()] == names
    for (_, p), bmax, bmean in zip(model.named_parameters(), maxes, means, strict=True):
        g = np.abs(to_np(p.grad))
        assert bmax.get_height() == pytest.approx(g.max()) and bmean.get_height() == pytest.approx(g.mean())
    assert (tmp_path / "flow.png").read_bytes()[:4] == b"\x89PNG"
    assert marks(ax, "zero gradient") == [] and marks(ax, "no gradient (None)") == []


def test_dict_and_pairs_give_the_same_picture(tmp_path):
    pytest.importorskip("matplotlib")
    model = trained_mlp()
    a = mg.viz.grad_flow(dict(model.named_parameters()))
    b = mg.viz.grad_flow(list(model.named_parameters()), path=tmp_path / "flow.svg", title="step 1")
    heights = [[r.get_height() for r in c] for c in a.axes[0].containers]
    assert heights == [[r.get_height() for r in c] for c in b.axes[0].containers]
    assert b.axes[0].get_title() == "step 1"
    assert (tmp_path / "flow.svg").read_text(encoding="utf-8").lstrip().startswith("<?xml")


def test_zero_missing_and_large_gradients_are_marked():
    pytest.importorskip("matplotlib")
    model = trained_mlp()
    model[0].bias.grad = mg.zeros(8)                      # a dead unit: gradient exactly zero
    model[2].bias.grad = None                             # never reached
    model[2].weight.grad = model[2].weight.grad * 1e4     # exploding
    ax = mg.viz.grad_flow(model, threshold=10.0).axes[0]
    assert marks(ax, "zero gradient") == [1]
    assert marks(ax, "no gradient (None)") == [3]
    assert marks(ax, "max |grad| > 10") == [2]
    bottom = ax.get_ylim()[0]
    zero = next(ln for ln in ax.get_lines() if ln.get_label() == "zero gradient")
    assert list(zero.get_ydata()) == [bottom]             # at the bottom of the axis
    ax = mg.viz.grad_flow(model, threshold=None).axes[0]
    assert marks(ax, "max |grad| > 10") == [] and len(ax.containers[0]) == 4


def test_bad_input_says_what_it_wanted():
    pytest.importorskip("matplotlib")
    with pytest.raises(ValueError, match="no parameters"):
        mg.viz.grad_flow([])
    with pytest.raises(TypeError, match=r"\(name, tensor\) pairs"):
        mg.viz.grad_flow([1, 2])


def test_without_matplotlib_the_error_says_how_to_install(monkeypatch):
    for name in ("matplotlib", "matplotlib.figure"):
        monkeypatch.setitem(sys.modules, name, None)       # `import matplotlib` now raises ImportError
    with pytest.raises(ImportError, match="pip install matplotlib"):
        mg.viz.grad_flow(trained_mlp())


def test_a_sparse_parameter_is_read_through_its_stored_values():
    pytest.importorskip("matplotlib")
    sparse = pytest.importorskip("minigrad.sparse")
    s = sparse.coo_tensor(np.array([[0, 0, 1, 2, 2, 3], [0, 2, 1, 0, 3, 3]]),
                          np.array([1.0, 2, 3, 4, 5, 6], dtype=np.float32), shape=(4, 4), requires_grad=True)
    w = mg.tensor([1.0, -1.0, 0.5, 2.0], requires_grad=True)
    rows = sparse.sum(s, axis=1)
    rows = rows.to_dense() if hasattr(rows, "to_dense") else rows
    (rows * w).sum().backward()                            # d/ds: w of each stored entry's row
    maxes, means = mg.viz.grad_flow({"s": s, "w": w}).axes[0].containers
    assert maxes[0].get_height() == pytest.approx(2.0) and means[0].get_height() == pytest.approx(1.0)
