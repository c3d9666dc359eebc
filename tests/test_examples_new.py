"""Smoke tests of the convolution and transformer examples: a few steps on small data, pictures
into a temporary folder. The full runs and their figures of merit (cnn_digits >= 98 % test
accuracy; char_transformer's held-out loss below the bigram baseline) are the examples
themselves: ``python examples/<name>.py``."""
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import has_module, load_example

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


load = load_example
_has = has_module


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


# -- the figures the examples promise, on their default settings (issue 22) -------------------------------


@pytest.mark.skipif(not _has("sklearn"), reason="cnn_digits needs scikit-learn's bundled data")
def test_cnn_digits_reaches_98_percent(tmp_path):
    res = load("cnn_digits").main(out_dir=tmp_path, plot=False, log=_quiet)
    assert res["test_accuracy"] >= 0.98, res["test_accuracy"]


def test_char_transformer_beats_the_bigram_baseline(tmp_path):
    res = load("char_transformer").main(sample_len=40, out_dir=tmp_path, plot=False, log=_quiet)
    assert res["held_out_loss"] < res["bigram_loss"], (res["held_out_loss"], res["bigram_loss"])
