"""save / load: .npz of named arrays, nested containers by dotted names, never pickle."""
import io
import zipfile

import numpy as np
import pytest

import minigrad as mg
from conftest import to_np

nn = mg.nn


def mlp():
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))


def test_state_dict_roundtrip(tmp_path):
    m = mlp()
    mg.save(m.state_dict(), tmp_path / "m.npz")
    sd = mg.load(tmp_path / "m.npz")
    assert list(sd) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert all(isinstance(v, mg.Tensor) for v in sd.values())
    assert sd["0.weight"].dtype == np.float32
    m2 = mlp()
    m2.load_state_dict(sd)
    for a, b in zip(m.parameters(), m2.parameters(), strict=True):
        np.testing.assert_array_equal(to_np(a), to_np(b))


def test_file_is_plain_named_arrays(tmp_path):
    m = mlp()
    mg.save({"model": m.state_dict(), "epoch": 7}, tmp_path / "ck.npz")
    with np.load(tmp_path / "ck.npz", allow_pickle=False) as f:
        names = set(f.files)
        assert {"model.0.weight", "model.0.bias", "model.2.weight", "model.2.bias"} <= names
        for k in names:
            assert f[k].dtype != object
        assert f["model.0.weight"].shape == (8, 4)


def test_nested_checkpoint_roundtrip(tmp_path):
    m = mlp()
    opt = mg.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    nn.functional.cross_entropy(m(mg.randn(5, 4)), [0, 1, 2, 0, 1]).backward()
    opt.step()
    ck = {
        "model": m.state_dict(),
        "optim": opt.state_dict(),
        "epoch": 3,
        "loss": 0.25,
        "name": "mlp",
        "flags": [True, None, (1, 2.5)],
        "raw": np.arange(6, dtype=np.int32).reshape(2, 3),
        "nan": float("nan"),
    }
    mg.save(ck, tmp_path / "ck")  # .npz is added
    back = mg.load(tmp_path / "ck.npz")
    assert back["epoch"] == 3 and back["loss"] == 0.25 and back["name"] == "mlp"
    assert back["flags"] == [True, None, (1, 2.5)]
    assert isinstance(back["raw"], np.ndarray) and back["raw"].dtype == np.int32
    np.testing.assert_array_equal(back["raw"], ck["raw"])
    assert np.isnan(back["nan"])
    assert back["optim"]["param_groups"][0]["lr"] == 0.1
    assert back["optim"]["param_groups"][0]["params"] == [0, 1, 2, 3]
    assert sorted(back["optim"]["state"]) == [0, 1, 2, 3]  # int keys stay ints
    opt2 = mg.optim.SGD(mlp().parameters(), lr=0.5, momentum=0.9)
    opt2.load_state_dict(back["optim"])
    assert opt2.param_groups[0]["lr"] == 0.1


def test_keys_with_dots_do_not_clash_with_nesting(tmp_path):
    # state_dict keys already contain dots; the nesting is kept exactly
    obj = {"a": {"0.weight": mg.ones(2)}, "b": mg.zeros(1)}
    mg.save(obj, tmp_path / "x.npz")
    back = mg.load(tmp_path / "x.npz")
    assert list(back["a"]) == ["0.weight"]
    with pytest.raises(ValueError, match="same name 'a.b'"):
        mg.save({"a.b": mg.ones(1), "a": {"b": mg.ones(1)}}, tmp_path / "y.npz")


def test_single_tensor_and_file_object(tmp_path):
    t = mg.tensor([[1.0, 2.0]])
    mg.save(t, tmp_path / "t.npz")
    back = mg.load(tmp_path / "t.npz")
    assert isinstance(back, mg.Tensor) and back.shape == (1, 2)
    buf = io.BytesIO()
    mg.save({"t": t}, buf)
    buf.seek(0)
    np.testing.assert_array_equal(to_np(mg.load(buf)["t"]), [[1.0, 2.0]])


def test_float64_and_int_tensors_keep_dtype(tmp_path):
    obj = {"d": mg.tensor(np.ones(3)), "i": mg.arange(4)}
    mg.save(obj, tmp_path / "x.npz")
    back = mg.load(tmp_path / "x.npz")
    assert back["d"].dtype == np.float64 and back["i"].dtype == np.int64


def test_refuses_pickled_object_arrays(tmp_path):
    p = tmp_path / "evil.npz"
    np.savez(p, w=np.array([{"payload": 1}], dtype=object))
    with pytest.raises(mg.io.UnsafeFileError, match="never unpickles"):
        mg.load(p)
    # a .npy holding an object array too
    q = tmp_path / "evil.npy"
    np.save(q, np.array([None, 1], dtype=object))
    with pytest.raises(mg.io.UnsafeFileError):
        mg.load(q)


def test_refuses_a_pickle_disguised_as_npz(tmp_path):
    import pickle

    p = tmp_path / "ck.npz"
    p.write_bytes(pickle.dumps({"w": 1}))
    with pytest.raises(mg.io.UnsafeFileError):
        mg.load(p)


def test_save_refuses_what_it_cannot_store(tmp_path):
    with pytest.raises(TypeError, match="dtype object"):
        mg.save({"x": np.array([object()], dtype=object)}, tmp_path / "a.npz")
    with pytest.raises(TypeError, match="state_dict"):
        mg.save(mlp(), tmp_path / "b.npz")
    with pytest.raises(TypeError, match="set"):
        mg.save({"x": {1, 2}}, tmp_path / "c.npz")
    with pytest.raises(TypeError, match="dict keys"):
        mg.save({(1, 2): mg.ones(1)}, tmp_path / "d.npz")


def test_foreign_npz_loads_as_dict_of_arrays(tmp_path):
    p = tmp_path / "plain.npz"
    np.savez(p, a=np.ones(2), b=np.zeros((2, 2), np.float32))
    back = mg.load(p)
    assert set(back) == {"a", "b"} and back["b"].dtype == np.float32


def test_no_pickle_inside_the_zip(tmp_path):
    mg.save({"m": mlp().state_dict(), "s": "text"}, tmp_path / "x.npz")
    with zipfile.ZipFile(tmp_path / "x.npz") as z:
        for name in z.namelist():
            header = z.read(name)[:128]
            assert b"'descr': '|O'" not in header


def test_load_to_device(tmp_path):
    mg.save({"w": mg.ones(2)}, tmp_path / "x.npz")
    assert mg.load(tmp_path / "x.npz", device="cpu")["w"].device == "cpu"


class _Payload:
    """Unpickling this would create a file: proof that code ran."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        import pathlib

        return (pathlib.Path.touch, (pathlib.Path(self.marker),))


def test_loading_a_malicious_pickle_runs_no_code(tmp_path):
    marker = tmp_path / "pwned"
    evil = np.empty(1, dtype=object)
    evil[0] = _Payload(str(marker))
    p = tmp_path / "model.npz"
    np.savez(p, **{"0.weight": np.ones((2, 2), np.float32), "0.bias": evil})  # what an attacker would ship
    with pytest.raises(mg.io.UnsafeFileError, match="'0.bias'"):
        mg.load(p)
    assert not marker.exists()
    q = tmp_path / "raw.npz"  # a bare pickle under an .npz name
    import pickle

    q.write_bytes(pickle.dumps(_Payload(str(marker))))
    with pytest.raises(mg.io.UnsafeFileError, match="never unpickles"):
        mg.load(q)
    assert not marker.exists()
    # the safe path: numpy itself refuses too, so nothing minigrad writes needs pickle
    np.load(p, allow_pickle=False)["0.weight"]


@pytest.mark.parametrize("key", ["file", "allow_pickle", "args", "kwds", "a/b", "0.weight"])
def test_any_key_roundtrips(tmp_path, key):
    # np.savez(f, **arrays) would take "file" and "allow_pickle" for its own arguments
    mg.save({key: mg.tensor([1.0, 2.0]), "other": np.arange(3)}, tmp_path / "k.npz")
    back = mg.load(tmp_path / "k.npz")
    assert list(back) == [key, "other"]
    np.testing.assert_array_equal(to_np(back[key]), [1.0, 2.0])


def test_save_refuses_structured_arrays_holding_objects(tmp_path):
    a = np.zeros(2, dtype=[("x", "f4"), ("o", "O")])
    with pytest.raises(TypeError, match="Python objects"):
        mg.save({"s": a}, tmp_path / "s.npz")
    assert not (tmp_path / "s.npz").exists()  # refused before anything is written


def test_malformed_index_is_a_clear_error(tmp_path):
    p = tmp_path / "bad.npz"
    np.savez(p, __minigrad__=np.array('{"format": "minigrad.save", "version": 1, "tree": {"t": "dict"}}'))
    with pytest.raises(ValueError, match="malformed"):
        mg.load(p)
    np.savez(p, __minigrad__=np.array('{"format": "minigrad.save", "version": 1, "tree": {"t": "pickle"}}'))
    with pytest.raises(ValueError, match="unknown entry kind 'pickle'"):
        mg.load(p)
    np.savez(p, __minigrad__=np.array("not json"))
    with pytest.raises(ValueError, match="unreadable"):
        mg.load(p)


def test_model_and_optimizer_resume_through_a_file(tmp_path):
    # train 3 steps, checkpoint, train 3 more; a fresh model + optimizer loaded from the file
    # must take the same 3 steps to the same numbers
    def setup():
        mg.manual_seed(0)
        m = mlp()
        return m, mg.optim.AdamW(m.parameters(), lr=0.01)

    x = mg.tensor(np.random.default_rng(0).standard_normal((6, 4)).astype(np.float32))
    t = [0, 1, 2, 0, 1, 2]

    def step(m, opt):
        opt.zero_grad()
        nn.functional.cross_entropy(m(x), t).backward()
        opt.step()

    m1, o1 = setup()
    for _ in range(3):
        step(m1, o1)
    mg.save({"model": m1.state_dict(), "optim": o1.state_dict()}, tmp_path / "ck.npz")
    for _ in range(3):
        step(m1, o1)
    m2, o2 = setup()
    ck = mg.load(tmp_path / "ck.npz")
    m2.load_state_dict(ck["model"])
    o2.load_state_dict(ck["optim"])
    for _ in range(3):
        step(m2, o2)
    for a, b in zip(m1.parameters(), m2.parameters(), strict=True):
        np.testing.assert_array_equal(to_np(a), to_np(b))


def test_io_names_reachable_from_a_fresh_import():
    import subprocess
    import sys

    code = "import minigrad as mg; assert mg.io.UnsafeFileError is mg.UnsafeFileError; print('ok')"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
