"""Every example's training loop, eagerly and through ``mg.compile``, from the same seed.

mg.compile's promise (docs/compile.md): a replay runs the captured array steps (forwards,
gradient rules, ``.grad`` accumulation, the optimizer's update, ``zero_grad``, the scheduler,
dropout's draws) and is bitwise equal to eager mode. So after up to 200 steps of each example
(small settings: the whole file takes seconds), the losses, every array of the model's
``state_dict()`` and the optimizer's state must be identical, not close, and the compiled run
must have replayed (not fallen back to eager calls).

The demo trains through digits.main and has no loop of its own; it is run too, since it is the
one example that compiles by default.
"""
import numpy as np
import pytest

import minigrad as mg
from conftest import has_module, load_example

_SKLEARN = pytest.mark.skipif(not has_module("sklearn"), reason="needs scikit-learn's bundled digits")


def _quiet(*args):
    pass


# name -> main's keyword arguments for a short run (200 steps at most, small data)
RUNS = {
    "moons": dict(steps=200, n=128, plot=False, log_every=10**9),
    "digits": dict(epochs=40, steps=200, limit=300, plot=False, progress=False),  # 5 batches an epoch: 2 shapes
    "demo": dict(epochs=40, steps=200, limit=300, progress=False),
    "cnn_digits": dict(epochs=50, steps=200, limit=200, batch_size=16, plot=False, log=_quiet),
    "char_transformer": dict(steps=200, batch=2, context=8, eval_every=100, sample_len=0, plot=False, log=_quiet),
    "attention": dict(steps=200, length=5, batch_size=8, plot=False, log_every=10**9),
    "sparse_text": dict(steps=200, n_docs=200, vocab=400, plot=False, log_every=10**9),
    "sparse_text_coo": dict(steps=200, n_docs=200, vocab=400, layout="coo", plot=False, log_every=10**9),
    "gradcheck_tour": dict(steps=200),
    "char_rnn": dict(steps=30, batch=2, context=8, eval_every=15, sample_len=0, log=_quiet),
}


def _run(name, compile, out_dir):  # noqa: A002
    kw = dict(RUNS[name])
    if name not in ("gradcheck_tour", "char_rnn"):  # they write no files
        kw["out_dir"] = out_dir
    return load_example(name.removesuffix("_coo")).main(compile=compile, **kw)


def _host(v):
    return mg.backend.to_numpy(v.data if isinstance(v, mg.Tensor) else v)


def assert_identical(a, b, where):
    """``a`` and ``b`` (dicts, lists, tuples, Tensors, arrays, numbers) equal, arrays bitwise."""
    if isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            assert_identical(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_identical(x, y, f"{where}[{i}]")
    elif isinstance(a, mg.Tensor) or hasattr(a, "shape"):
        x, y = _host(a), _host(b)
        assert x.shape == y.shape and x.dtype == y.dtype, where
        assert np.array_equal(x, y, equal_nan=True), f"{where}: differs in {(x != y).sum()} of {x.size} elements"
    else:
        assert a == b, (where, a, b)


@pytest.mark.parametrize("name", [
    "moons",
    pytest.param("digits", marks=_SKLEARN),
    pytest.param("demo", marks=_SKLEARN),
    pytest.param("cnn_digits", marks=_SKLEARN),
    "char_transformer",
    "attention",
    "sparse_text",
    "sparse_text_coo",
    "gradcheck_tour",
    "char_rnn",
])
def test_compiled_training_is_bitwise_eager(name, tmp_path):
    eager = _run(name, False, tmp_path / "eager")
    compiled = _run(name, True, tmp_path / "compiled")
    assert eager["compile_stats"] is None
    stats = compiled["compile_stats"]
    assert stats.replays > 0 and stats.fallbacks == 0, stats
    assert stats.eager + stats.captures + stats.replays == len(compiled["losses"])  # one call a step
    assert 0 < len(eager["losses"]) <= 200
    assert_identical(np.array(eager["losses"]), np.array(compiled["losses"]), "losses")
    if "model" in eager:
        sd = eager["model"].state_dict()
        assert sd, "no parameters to compare"
        assert_identical(dict(sd), dict(compiled["model"].state_dict()), "state_dict")
    else:  # sparse_text: two bare parameters
        assert_identical(eager["params"], compiled["params"], "params")
    opt_e, opt_c = eager["optimizer"].state_dict(), compiled["optimizer"].state_dict()
    assert opt_e["state"], "the optimizer kept no state"
    assert_identical(opt_e, opt_c, "optimizer")
