"""Issue 33, "The PyTorch user's first day": each idiom that silently gave a different number now
gives PyTorch's number (the spelling rule of API.md) or raises with a message that says what to
write; and the small PyTorch habits (``t.size()``, ``randn_like``, ``randperm``,
``inference_mode``) work. Torch is the oracle where it is installed."""
import numpy as np
import pytest

import minigrad as mg
from conftest import dev, leaf, to_np


def _torch():
    return pytest.importorskip("torch")


LOGITS = [[0.1, 2.0, -1.0], [3.0, 0.5, 0.2], [-0.3, -0.2, 4.0]]


# -- 1. max / min (dim=) -----------------------------------------------------------------------------


def test_max_dim_unpacks_into_values_and_indices_for_any_batch():
    # before: a batch of 3 failed with "too many values to unpack" (and a batch of 2 unpacked rows)
    out = mg.tensor(LOGITS)
    values, idx = out.max(dim=1)
    assert values.tolist() == pytest.approx([2.0, 3.0, 4.0])
    assert idx.tolist() == [1, 0, 2] and idx.dtype == np.int64
    two = mg.tensor(LOGITS[:2])
    v2, i2 = two.max(dim=1)
    assert v2.shape == (2,) and i2.tolist() == [1, 0]


def test_max_dim_index_one_is_the_indices_not_a_value():
    out = mg.tensor(LOGITS)
    assert out.max(dim=1)[1].tolist() == [1, 0, 2]
    r = out.max(dim=1)
    assert r.indices.tolist() == [1, 0, 2] and type(r).__name__ == "max"
    assert out.min(dim=0).indices.tolist() == [2, 2, 0] and type(out.min(dim=0)).__name__ == "min"


def test_max_min_dim_match_torch_with_keepdim_and_gradients():
    torch = _torch()
    a = np.random.default_rng(0).standard_normal((4, 5, 3))
    for name in ("max", "min"):
        for dim in (0, 1, -1):
            for keepdim in (False, True):
                x = mg.tensor(a, requires_grad=True)
                tx = torch.tensor(a, requires_grad=True)
                v, i = getattr(x, name)(dim=dim, keepdim=keepdim)
                tv, ti = getattr(tx, name)(dim=dim, keepdim=keepdim)
                np.testing.assert_array_equal(to_np(v), tv.detach().numpy())
                np.testing.assert_array_equal(to_np(i), ti.numpy())
                v.sum().backward()
                tv.sum().backward()
                np.testing.assert_array_equal(to_np(x.grad), tx.grad.numpy())
    vm, im = mg.max(mg.tensor(a), dim=2)
    assert to_np(im).tolist() == torch.max(torch.tensor(a), dim=2).indices.tolist()


def test_numpy_spelling_of_max_still_gives_the_values():
    out = mg.tensor(LOGITS)
    for r in (out.max(axis=1), out.max(1), mg.max(out, axis=1), np.max(out, axis=1)):
        assert isinstance(r, mg.Tensor) and r.tolist() == pytest.approx([2.0, 3.0, 4.0])
    assert out.max().item() == pytest.approx(4.0)
    assert out.max(axis=(0, 1)).item() == pytest.approx(4.0)


def test_max_dim_with_several_axes_says_to_use_axis():
    with pytest.raises(TypeError, match=r"max: dim= takes one int and returns PyTorch's \(values, indices\), "
                                        r"got dim=\(0, 1\); for several axes write max\(axis=\(0, 1\)\)"):
        mg.tensor(LOGITS).max(dim=(0, 1))


# -- 2. std / var (dim=) ------------------------------------------------------------------------------


def test_std_dim_is_the_unbiased_pytorch_figure():
    # before: t.std(dim=0) was NumPy's biased figure
    a = np.array([[1.0, 2.0], [3.0, 6.0], [5.0, 7.0]])
    t = mg.tensor(a)
    np.testing.assert_allclose(to_np(t.std(dim=0)), a.std(axis=0, ddof=1), rtol=1e-6)
    np.testing.assert_allclose(to_np(t.var(dim=0)), a.var(axis=0, ddof=1), rtol=1e-6)
    # NumPy's spelling keeps NumPy's figure
    np.testing.assert_allclose(to_np(t.std(axis=0)), a.std(axis=0), rtol=1e-6)
    np.testing.assert_allclose(to_np(t.var(0)), a.var(axis=0), rtol=1e-6)
    np.testing.assert_allclose(to_np(np.std(t, axis=0)), a.std(axis=0), rtol=1e-6)
    np.testing.assert_allclose(to_np(t.std()), a.std(), rtol=1e-6)


def test_std_var_spellings_match_torch_and_numpy_in_float64():
    torch = _torch()
    a = np.random.default_rng(1).standard_normal((4, 6))
    x, tx = mg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    cases = [(dict(dim=1), dict(dim=1)), (dict(dim=0, keepdim=True), dict(dim=0, keepdim=True)),
             (dict(dim=1, correction=0), dict(dim=1, correction=0)), (dict(keepdim=True), dict(keepdim=True)),
             (dict(axis=1, ddof=1), dict(dim=1, correction=1))]
    for name in ("std", "var"):
        for ours, theirs in cases:
            np.testing.assert_allclose(to_np(getattr(x, name)(**ours)), getattr(tx, name)(**theirs).detach().numpy(),
                                       rtol=1e-12, atol=1e-14)
    (x.std(dim=1) * mg.tensor(np.arange(4.0))).sum().backward()
    (tx.std(dim=1) * torch.arange(4.0, dtype=torch.float64)).sum().backward()
    np.testing.assert_allclose(to_np(x.grad), tx.grad.numpy(), rtol=1e-12, atol=1e-14)


def test_std_with_both_ddof_and_correction_is_refused():
    with pytest.raises(TypeError, match=r"std: got both ddof=1 and correction=0; give one"):
        mg.tensor(LOGITS).std(axis=0, ddof=1, correction=0)


# -- 3. mg.tensor of a list of Tensors that require grad ------------------------------------------------


def test_tensor_of_a_list_of_grad_tensors_says_to_use_stack():
    # before: mg.tensor([a * 2, a * 3]) silently dropped the graph
    a = mg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(TypeError, match=r"tensor: the list holds a Tensor of shape \(2,\) that requires grad; "
                                        r"copying it into a new tensor would drop its graph .* Use mg\.stack"):
        mg.tensor([a * 2, a * 3])
    s = mg.stack([a * 2, a * 3])
    s.sum().backward()
    assert a.grad.tolist() == [5.0, 5.0]
    # constants (no grad) are still copied, as torch.tensor copies them
    assert mg.tensor([a.detach() * 2, a.detach()]).tolist() == [[2.0, 4.0], [1.0, 2.0]]


# -- 4. int64 into nn.Linear ---------------------------------------------------------------------------


def test_an_int64_batch_into_linear_is_refused_like_float64():
    # before: an int64 input silently gave float64 (while float64 was refused)
    layer = mg.nn.Linear(3, 2)
    with pytest.raises(TypeError, match=r"linear: input dtype int64 is not floating-point \(the weight is float32\); "
                                        r"convert the batch first: x\.astype\(mg\.float32\) \(PyTorch: x\.float\(\)\)"):
        layer(mg.tensor(np.ones((4, 3), dtype=np.int64)))
    with pytest.raises(TypeError, match="linear: input dtype float64 differs from the weight's float32"):
        layer(mg.tensor(np.ones((4, 3))))
    assert layer(mg.tensor(np.ones((4, 3), dtype=np.int64)).float()).dtype == np.float32


# -- 5. randint(high, size) -----------------------------------------------------------------------------


def test_randint_high_size_is_pytorchs_signature():
    # before: mg.randint(5, (200,)) returned one value in [5, 200)
    r = mg.randint(5, (200,), seed=0)
    assert r.shape == (200,) and r.dtype == np.int64
    v = to_np(r)
    assert v.min() >= 0 and v.max() < 5 and len(set(v.tolist())) == 5
    assert mg.randint(2, 7, (3, 4), seed=0).shape == (3, 4)
    assert mg.randint(0, 5, size=(3,), seed=0).shape == (3,)
    with pytest.raises(TypeError, match=r"randint: got a size twice"):
        mg.randint(5, (2,), size=(3,))
    with pytest.raises(ValueError, match=r"randint: high \(0\) must be greater than low \(0\)"):
        mg.randint(0, (3,))


# -- factories and modes --------------------------------------------------------------------------------


def test_random_factories_follow_manual_seed():
    x = leaf((3, 4))
    for make in (lambda: mg.randn_like(x), lambda: mg.rand_like(x), lambda: mg.randperm(10),
                 lambda: mg.randint(10, (5,))):
        mg.manual_seed(7)
        a = to_np(make())
        mg.manual_seed(7)
        b = to_np(make())
        np.testing.assert_array_equal(a, b)
    assert mg.randn_like(x).shape == (3, 4) and mg.randn_like(x).dtype == np.float64
    assert mg.rand_like(x, dtype=mg.float32).dtype == np.float32
    assert mg.randn_like(x).device == x.device and not mg.randn_like(x).requires_grad
    assert mg.randn_like(x, requires_grad=True).requires_grad
    r = to_np(mg.rand_like(mg.zeros(1000)))
    assert r.min() >= 0 and r.max() < 1
    assert sorted(to_np(mg.randperm(6, seed=3)).tolist()) == list(range(6))
    assert mg.randperm(6).dtype == np.int64
    with pytest.raises(TypeError, match="randn_like: draws are floating-point; got dtype int64"):
        mg.randn_like(mg.arange(3))
    with pytest.raises(ValueError, match="randperm: n must be an int >= 0, got -1"):
        mg.randperm(-1)


def test_inference_mode_records_nothing_and_nests():
    x = leaf((2,))
    with mg.inference_mode():
        y = x * 2
        assert not mg.is_grad_enabled()
        with mg.inference_mode(False):
            assert (x * 2).requires_grad
    assert not y.requires_grad and mg.is_grad_enabled()

    @mg.inference_mode()
    def f(v):
        return v * 3

    @mg.inference_mode
    def g(v):
        return v * 3

    assert not f(x).requires_grad and not g(x).requires_grad and (x * 3).requires_grad


def test_size_call_is_the_shape_and_size_attribute_the_count():
    t = mg.zeros(2, 3, 4)
    assert t.size == 24 and t.size + 1 == 25 and isinstance(t.size, int)
    assert t.size() == (2, 3, 4) and t.size(0) == 2 and t.size(-1) == 4
    assert repr(t.size) == "24" and f"{t.size}" == "24"
    assert np.zeros(t.size).shape == (24,)
    # a weak Python int to NumPy, as t.size always was: float32 stays float32
    x = mg.ones(2, 3)
    assert (x / x.size).dtype == np.float32 and (x.data / x.size).dtype == np.float32
    assert np.divide(np.ones(2, np.float32), x.size).dtype == np.float32
    with pytest.raises(IndexError, match=r"size: dim 3 is out of range for a tensor of shape \(2, 3, 4\)"):
        t.size(3)
    torch = _torch()
    assert tuple(torch.zeros(2, 3, 4).size()) == t.size()


# -- files ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["ckpt.pt", "model.pth", "weights", "state.npz", "a.b.c"])
def test_save_writes_exactly_the_path_and_load_reads_it_back(tmp_path, name):
    # before: mg.save(ckpt, "ckpt.pt") wrote ckpt.pt.npz, and mg.load("ckpt.pt") was a bare FileNotFoundError
    model = mg.nn.Linear(3, 2)
    path = tmp_path / name
    mg.save({"model": model.state_dict(), "epoch": 3}, path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]
    back = mg.load(path)
    assert back["epoch"] == 3
    np.testing.assert_array_equal(to_np(back["model"]["weight"]), to_np(model.weight))
    mg.save(model.state_dict(), str(path))  # a str path too
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


def test_load_of_a_missing_file_says_where_it_looked_and_names_an_old_npz(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"load: no file '.*nothing\.pt' \(looked in "):
        mg.load(tmp_path / "nothing.pt")
    import zipfile

    with zipfile.ZipFile(tmp_path / "old.pt.npz", "w"):
        pass  # what an older save wrote for "old.pt"
    with pytest.raises(FileNotFoundError, match=r"load: no file '.*old\.pt'; there is '.*old\.pt\.npz', which an "
                                                r"older minigrad's save wrote for this name"):
        mg.load(str(tmp_path / "old.pt"))


# -- rough edges ------------------------------------------------------------------------------------------


def test_setitem_of_a_one_element_tensor_into_one_slot():
    # before: NumPy's "setting an array element with a sequence"
    w = mg.zeros(3)
    w[-1] = mg.tensor([5.0])
    w[0] = dev(np.array([[7.0]], dtype=np.float32))
    assert to_np(w).tolist() == [7.0, 0.0, 5.0]
    a = leaf((1,))
    buf = mg.zeros(3, dtype=mg.float64)
    buf[1] = a * 3
    buf.sum().backward()
    assert to_np(a.grad).tolist() == [3.0] and a.grad.shape == (1,)
    with pytest.raises(ValueError, match=r"setitem: a value of shape \(2,\) cannot be broadcast to the indexed "
                                         r"region \[-1\] of shape \(\)"):
        w[-1] = mg.tensor([5.0, 6.0])


def test_the_cuda_error_names_the_device_and_gives_the_readmes_install_advice(monkeypatch):
    import sys
    from pathlib import Path

    monkeypatch.setattr(mg._xp, "_cupy", None)
    monkeypatch.setattr(mg.backend, "_cupyx", None)
    monkeypatch.setitem(sys.modules, "cupy", None)  # `import cupy` raises ImportError
    with pytest.raises(RuntimeError, match=r"device 'cuda:1' needs CuPy, which is not installed: bash scripts/setup\.sh "
                                           r"gpu \(in a clone; elsewhere pip install \"minigrad\[gpu\]\"\)"):
        mg.zeros(2, device="cuda:1")
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    assert '`bash scripts/setup.sh gpu` in a clone;\nelsewhere `pip install "minigrad[gpu]"`, or the cupy-cudaXX wheel ' \
           "matching your CUDA" in readme


def test_readme_runs_every_script_with_the_venvs_python():
    # before: `python3 visualize/gallery.py` failed unless the venv was activated
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    bare = re.findall(r"(?<![\w/.-])python3? (?:-m \w+|[\w/]+\.py)", readme)
    assert not bare, f"README commands that need an activated venv: {bare}"
    assert ".venv/bin/python visualize/gallery.py" in readme
