"""Fast smoke tests of every example: a few steps on tiny data, pictures into a temporary folder.

The full runs (and their figures of merit: moons >= 97 %, digits >= 97 %, cnn_digits >= 98 % test
accuracy, char_transformer's held-out loss below the bigram baseline) are the examples themselves: ``python examples/<name>.py``.
"""
import subprocess
import sys
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


def test_hessian_tour(tmp_path):
    # mg.func.hessian through matmul, reshape, mean and tanh (their forward-mode rules), < 5 s
    ex = load("hessian_tour")
    res = ex.main(out=tmp_path / "h.png", plot=_has("matplotlib"), fit_steps=100)
    losses = res["newton_losses"]
    assert np.all(np.diff(losses) <= 0) and losses[-1] < 1e-20 < losses[0]
    np.testing.assert_allclose(res["newton_x"], [1.0, 1.0], atol=1e-10)
    assert res["gd_loss"] > 1e-3  # gradient descent is far behind
    assert res["fit_losses"][-1] < res["fit_losses"][0]
    H = res["hessian"]
    assert H.shape == (33, 33) and res["symmetry_error"] < 1e-12
    assert res["reverse_error"] < 1e-10 and res["hvp_error"] < 1e-10
    if _has("matplotlib"):
        assert (tmp_path / "h.png").stat().st_size > 0


@pytest.mark.skipif(not _has("sklearn"), reason="per_sample_grads trains on scikit-learn's bundled digits")
def test_per_sample_grads():
    # vmap(grad) per example with DP-SGD clipping, and a five-model ensemble (stack_module_state)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an op still on vmap's per-element fallback is allowed here
        res = load("per_sample_grads").main(steps=40, ensemble_steps=40, limit=400, log=None)
    assert res["sum_check"] < 1e-5  # the per-example gradients add up to the batch's
    assert res["dp_accuracy"] > 0.5 and len(res["grad_norms"]) == 40
    assert len(res["member_accuracies"]) == 5 and min(res["member_accuracies"]) > 0.5
    assert res["ensemble_accuracy"] > 0.5


# -- the convolution and transformer examples ------------------------------------------------------

def _quiet(*args):
    pass


@pytest.mark.skipif(not _has("sklearn"), reason="cnn_digits needs scikit-learn's bundled data")
def test_cnn_digits(tmp_path):
    ex = load("cnn_digits")
    res = ex.main(epochs=3, steps=10, limit=200, out_dir=tmp_path, plot=_has("matplotlib"), log=_quiet)
    assert len(res["losses"]) == 10
    assert res["losses"][-1] < res["losses"][0]
    assert 0.0 <= res["test_accuracy"] <= 1.0
    assert res["files"]["graph"].exists() and res["files"]["graph"].stat().st_size > 0
    if _has("matplotlib"):
        assert (tmp_path / "cnn_digits_loss.png").stat().st_size > 0
        assert (tmp_path / "cnn_digits_filters.png").stat().st_size > 0
    m = res["model"]
    assert [n for n, _ in m.named_parameters()] == [
        "conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias", "fc.weight", "fc.bias"]


def test_char_transformer(tmp_path):
    ex = load("char_transformer")
    res = ex.main(steps=6, batch=4, context=16, eval_every=3, sample_len=20, out_dir=tmp_path,
                  plot=_has("matplotlib"), log=_quiet)
    assert len(res["losses"]) == 6 and len(res["held_out"]) == 2
    assert res["losses"][-1] < res["losses"][0]
    assert res["sample"].startswith("The miller ") and len(res["sample"]) == len("The miller ") + 20
    assert 0 < res["bigram_loss"] < 4
    vocab, train, held = ex.load_text()
    assert len(train) > 4000 and len(held) > 400 and len(vocab) < 60


@pytest.mark.parametrize("name, args, done", [
    pytest.param("cnn_digits", ["--epochs", "1"], "test accuracy:",
                 marks=pytest.mark.skipif(not _has("sklearn"), reason="needs scikit-learn")),
    pytest.param("char_transformer", ["--steps", "6", "--batch-size", "4", "--context", "16", "--sample", "20"],
                 "final held-out loss"),
])
def test_compile_flag_runs_to_completion(name, args, done, tmp_path):
    """``--compile --no-plot`` on a few steps runs to the end (test_compile_examples.py checks the replays)."""
    out_dir = ["--out-dir", str(tmp_path)] if name == "cnn_digits" else []
    r = subprocess.run([sys.executable, str(EXAMPLES / f"{name}.py"), "--compile", "--no-plot", *args, *out_dir],
                       capture_output=True, text=True, timeout=300,
                       env={**__import__("os").environ, "PYTHONPATH": str(EXAMPLES.parent)})
    assert r.returncode == 0, r.stderr[-3000:]
    assert done in r.stdout and "Traceback" not in r.stderr


@pytest.mark.skipif(not _has("sklearn"), reason="cnn_digits needs scikit-learn's bundled data")
def test_cnn_digits_reaches_98_percent(tmp_path):
    res = load("cnn_digits").main(out_dir=tmp_path, plot=False, log=_quiet)
    assert res["test_accuracy"] >= 0.98, res["test_accuracy"]


def test_char_transformer_beats_the_bigram_baseline(tmp_path):
    res = load("char_transformer").main(sample_len=40, out_dir=tmp_path, plot=False, log=_quiet)
    assert res["held_out_loss"] < res["bigram_loss"], (res["held_out_loss"], res["bigram_loss"])


def test_char_rnn(tmp_path):
    ex = load("char_rnn")
    res = ex.main(steps=4, batch=4, context=16, hidden=32, embed=16, layers=2, eval_every=2, sample_len=20,
                  log=_quiet)
    assert len(res["losses"]) == 4 and len(res["held_out"]) == 2
    assert res["losses"][-1] < res["losses"][0]
    assert res["sample"].startswith("The miller ") and len(res["sample"]) == len("The miller ") + 20
    assert [n for n, _ in res["model"].named_parameters()][:3] == ["embed.weight", "lstm.weight_ih_l0",
                                                                   "lstm.weight_hh_l0"]


def test_fourier_fit(tmp_path):
    """The FFT-domain fit finds every tone's amplitude and phase (noise 0.5 on 1024 samples)."""
    res = load("fourier_fit").main(steps=300, out_dir=tmp_path, plot=_has("matplotlib"), log=None)
    assert res["amplitude_error"] < 0.1 and res["phase_error"] < 0.1
    assert res["losses"][-1] < res["losses"][0] / 10
