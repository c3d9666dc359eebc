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
    for a, b in zip(m.parameters(), m2.parameters()):
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
