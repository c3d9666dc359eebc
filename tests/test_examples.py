"""Fast smoke tests of every example: a few steps on tiny data, pictures into a temporary folder.

The full runs (and their figures of merit: moons >= 97 %, digits >= 97 %) are the examples
themselves: ``python examples/<name>.py``.
"""
from pathlib import Path

import numpy as np
import pytest

import minigrad as mg
from conftest import DEVICE, has_module, load_example

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


load = load_example
_has = has_module


def test_moons(tmp_path):
    ex = load("moons")
    res = ex.main(steps=60, n=64, out_dir=tmp_path, plot=_has("matplotlib"), log_every=30)
    assert len(res["losses"]) == 60
    assert res["losses"][-1] < res["losses"][0]
    assert 0.5 <= res["accuracy"] <= 1.0
    if _has("matplotlib"):
        assert (tmp_path / "moons.png").stat().st_size > 0
    X, y = ex.make_moons(100, 0.1, 0)
    assert X.shape == (100, 2) and X.dtype == np.float32 and set(np.unique(y)) == {0.0, 1.0}


def test_moons_full_run_reaches_97_percent():
    # the example's own settings (a fraction of a second): its figure of merit
    res = load("moons").main(plot=False, log_every=10**9)
    assert res["accuracy"] >= 0.97 and res["train_accuracy"] >= 0.97


@pytest.mark.skipif(not _has("sklearn"), reason="digits needs scikit-learn's bundled data")
@pytest.mark.skipif(DEVICE != "cpu", reason="the full 40-epoch run is timed for the CPU; the smoke test covers devices")
def test_digits_full_run_reaches_97_percent():
    # the README demo's claim, with the example's own settings (a few seconds)
    res = load("digits").main(plot=False, progress=False)
    assert res["test_accuracy"] >= 0.97, res["test_accuracy"]


@pytest.mark.skipif(not _has("sklearn"), reason="digits needs scikit-learn's bundled data")
def test_digits(tmp_path):
    ex = load("digits")
    res = ex.main(epochs=3, steps=12, limit=200, out_dir=tmp_path, plot=_has("matplotlib"), progress=False)
    assert len(res["losses"]) == 12
    assert np.mean(res["losses"][-3:]) < res["losses"][0]
    assert 0.0 <= res["test_accuracy"] <= 1.0
    assert all(p.dtype == np.float32 for p in res["model"].parameters())


@pytest.mark.skipif(not _has("sklearn"), reason="the demo trains on scikit-learn's bundled digits")
def test_demo(tmp_path):
    ex = load("demo")
    res = ex.main(epochs=3, steps=5, limit=100, out_dir=tmp_path, progress=False)
    assert len(res["losses"]) == 5
    g = res["graph"]  # an .svg where Graphviz's dot exists, else the DOT text
    assert g is not None and Path(g).exists() and Path(g).stat().st_size > 0
    text = Path(g).read_text(encoding="utf-8")
    # drawn after backward: every parameter (6 of them), by name, with its gradient's norm
    assert text.count("‖g‖") >= 6 and "0.weight" in text and "6.bias" in text
    assert all(p.grad is None for p in res["model"].parameters())  # and no gradients left behind


def test_sparse_text(tmp_path):
    pytest.importorskip("minigrad.sparse")
    ex = load("sparse_text")
    for layout in ("csr", "coo"):
        res = ex.main(steps=8, n_docs=200, vocab=400, layout=layout, out_dir=tmp_path, plot=False, log_every=4)
        assert len(res["losses"]) == 8
        assert res["losses"][-1] < res["losses"][0]
        # one training step allocates far less than the dense matrix would take
        assert res["step_peak_bytes"] < res["dense_bytes"] / 2


def test_sparse_text_builds_sparse_input():
    pytest.importorskip("minigrad.sparse")
    ex = load("sparse_text")
    docs = [[0, 2, 2], [1], []]
    X = ex.bag_of_words(docs, 4, "csr")
    assert X.layout == "csr" and X.nnz == 3 and X.shape == (3, 4)
    dense = X.to_dense().numpy()
    np.testing.assert_allclose(dense[0], [np.log(2), 0, np.log(3), 0], rtol=1e-6)
    Xc = ex.bag_of_words(docs, 4, "coo")
    np.testing.assert_allclose(Xc.to_dense().numpy(), dense)


def test_attention(tmp_path):
    ex = load("attention")
    res = ex.main(steps=6, length=5, batch_size=8, out_dir=tmp_path, plot=_has("matplotlib"), log_every=3)
    assert len(res["losses"]) == 6 and np.isfinite(res["losses"]).all()
    res = ex.main(steps=3, task="sort", length=4, batch_size=4, plot=False, log_every=3)
    assert 0.0 <= res["token_accuracy"] <= 1.0
    with pytest.raises(ValueError, match="task"):
        ex.main(steps=1, task="shuffle", plot=False)


def test_attention_layer_gradcheck():
    ex = load("attention")
    mg.manual_seed(0)
    layer = ex.SelfAttention(4, 3).double()
    h = mg.tensor(np.random.default_rng(0).standard_normal((2, 3, 4)), requires_grad=True)
    assert mg.gradcheck(lambda h, q: layer(h), (h, layer.Wq))


def test_gradcheck_tour():
    ex = load("gradcheck_tour")
    res = ex.main(steps=5)
    assert res["good"]
    assert "Jacobian mismatch for input 0" in res["bad_message"]
    assert "analytic" in res["bad_message"] and "numeric" in res["bad_message"]
