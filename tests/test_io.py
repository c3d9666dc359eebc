"""save / load: .npz of named arrays, nested containers by dotted names, never pickle."""
import io
import json
import struct
import sys
import types
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
    mg.save(ck, tmp_path / "ck")  # exactly this name (API.md): no .npz is added
    assert not (tmp_path / "ck.npz").exists()
    back = mg.load(tmp_path / "ck")
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


# -- damaged and foreign files: a ValueError that names the file and what is wrong --------------


def _npy(a):
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.asarray(a), allow_pickle=False)
    return buf.getvalue()


def _npy_claiming(shape, descr="<f8", data=b""):
    """An .npy whose header says ``shape`` of ``descr``, followed by ``data`` whatever its size."""
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": False, "shape": shape})
    return buf.getvalue() + data


def _zip(path, members):
    """A well-formed zip of raw ``members`` (name -> bytes): only what is inside them is wrong."""
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


def _with_index(path, tree):
    """A minigrad file whose JSON index holds ``tree`` (dumped as is) beside one array 'w'."""
    meta = json.dumps({"format": "minigrad.save", "version": 1, "tree": tree})
    return _zip(path, {"w.npy": _npy(np.ones(3, np.float32)), "__minigrad__.npy": _npy(np.array(meta))})


def test_load_text_or_random_bytes_is_not_called_a_pickle(tmp_path):
    # numpy.load calls anything that is neither zip nor .npy "pickled data"; minigrad says what it is
    for name, data in [
        ("notes.npz", b"epoch 3, loss 0.25\n"),
        ("noise.npz", np.random.default_rng(0).bytes(300)),
        ("empty.npz", b""),
    ]:
        p = tmp_path / name
        p.write_bytes(data)
        with pytest.raises(mg.io.CorruptFileError, match=r"^load: .*(not an \.npz or \.npy file|is empty)") as e:
            mg.load(p)
        assert str(p) in str(e.value) and "pickle" not in str(e.value)
        assert isinstance(e.value, ValueError) and isinstance(e.value, mg.MinigradError)


def test_load_truncated_npz_is_a_value_error(tmp_path):
    src = tmp_path / "ck.npz"
    mg.save({"model": mlp().state_dict(), "epoch": 3}, src)
    data = src.read_bytes()
    p = tmp_path / "cut.npz"
    for n in (4, 40, len(data) // 2, len(data) - 30, len(data) - 1):
        p.write_bytes(data[:n])
        with pytest.raises(mg.io.CorruptFileError, match="truncated") as e:  # not zipfile.BadZipFile
            mg.load(p)
        assert str(e.value).startswith(f"load: {p}")
    # the zip directory intact but an entry's bytes cut short (a zip that was patched in place)
    with zipfile.ZipFile(src) as z:
        entry = z.read("model.0.weight.npy")
    _zip(p, {"model.0.weight.npy": entry[:-8]})
    with pytest.raises(mg.io.CorruptFileError, match=r"'model.0.weight' declares shape \(8, 4\) of float32"):
        mg.load(p)


@pytest.mark.parametrize(
    "tree, problem",
    [
        ({"t": "dict", "items": [["a", {"t": "py", "v": 1}, "extra"]]}, "expected a \\[key, node\\] pair"),
        ({"t": "float", "v": "abc"}, "'float' node holds 'abc'"),
        ({"t": "float", "v": None}, "'float' node holds None"),
        ({"t": "dict", "items": {"a": 1}}, "'items' is \\{'a': 1\\}"),
        ({"t": "dict", "items": [[["k"], {"t": "py", "v": 1}]]}, "dict key is \\['k'\\]"),
        ({"t": "list", "items": 3}, "'items' is 3"),
        ({"t": "list", "items": [7]}, "a node is int 7"),
        ({"t": "py", "v": {"t": "tensor"}}, "'py' node holds"),
        ({"t": "tensor", "k": ["w"]}, "names its array by \\['w'\\]"),
        ({"t": "tensor"}, "names its array by None"),
        ({"t": 5}, "unknown entry kind 5"),
        ([1, 2], "a node is list"),
    ],
)
def test_load_damaged_index_names_what_is_wrong(tmp_path, tree, problem):
    p = _with_index(tmp_path / "ix.npz", tree)
    expected = f"^load: .*ix.npz has a malformed '__minigrad__' index: .*{problem}"
    with pytest.raises(mg.io.CorruptFileError, match=expected):
        mg.load(p)


def test_load_index_pointing_at_the_wrong_kind_of_entry(tmp_path):
    p = tmp_path / "ix.npz"
    meta = json.dumps({"format": "minigrad.save", "version": 1, "tree": {"t": "tensor", "k": "s"}})
    _zip(p, {"s.npy": _npy(np.array(["a", "b"])), "__minigrad__.npy": _npy(np.array(meta))})
    with pytest.raises(mg.io.CorruptFileError, match="entry 's' is a <U1 array, which cannot be a Tensor"):
        mg.load(p)
    meta = json.dumps({"format": "minigrad.save", "version": 1, "tree": {"t": "npscalar", "k": "w"}})
    _zip(p, {"w.npy": _npy(np.ones(3)), "__minigrad__.npy": _npy(np.array(meta))})
    with pytest.raises(mg.io.CorruptFileError, match=r"entry 'w' has shape \(3,\), expected a scalar"):
        mg.load(p)
    _zip(p, {"w.npy": _npy(np.ones(3)), "__minigrad__.npy": _npy(np.arange(3))})
    with pytest.raises(mg.io.CorruptFileError, match="unreadable '__minigrad__' entry: a int64 array of shape"):
        mg.load(p)


@pytest.mark.parametrize(
    "shape, descr",
    [((10**12,), "<f8"), ((2**40, 2**40), "<f4"), ((2**62, 4), "|u1"), ((-1,), "<f8"), ((4,), "<f8")],
)
def test_load_checks_declared_shapes_before_allocating(tmp_path, shape, descr):
    import tracemalloc

    p = _zip(tmp_path / "big.npz", {"w.npy": _npy_claiming(shape, descr, data=bytes(24))})
    tracemalloc.start()
    try:
        with pytest.raises(mg.io.CorruptFileError, match=r"'w' declares shape .* but holds 24 bytes") as e:
            mg.load(p)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(p) in str(e.value)
    assert peak < 1 << 20, f"load allocated {peak} bytes for a file that holds 24"
    # the same lie in a bare .npy file
    q = tmp_path / "big.npy"
    q.write_bytes(_npy_claiming(shape, descr, data=bytes(24)))
    with pytest.raises(mg.io.CorruptFileError, match=r"declares shape .* but holds 24 bytes"):
        mg.load(q)


def test_load_refuses_more_dimensions_than_numpy_has(tmp_path):
    # the sizes add up (65 axes of 1 hold one float64) but no array can have that shape
    p = _zip(tmp_path / "d.npz", {"w.npy": _npy_claiming((1,) * 65, data=bytes(8))})
    q = tmp_path / "d.npy"
    q.write_bytes(_npy_claiming((1,) * 65, data=bytes(8)))
    for f in (p, q):
        with pytest.raises(mg.io.CorruptFileError, match="declares 65 dimensions; numpy arrays have at most"):
            mg.load(f)


def test_load_object_array_is_unsafe_even_when_its_sizes_lie(tmp_path):
    # pickle is refused on the header alone: the object dtype wins over any size check
    p = _zip(tmp_path / "o.npz", {"w.npy": _npy_claiming((10**12,), "|O", data=b"\x80\x04N.")})
    with pytest.raises(mg.io.UnsafeFileError, match="'w' is an object array"):
        mg.load(p)


@pytest.mark.parametrize(
    "header",
    [
        b"{'descr': '<f8', 'fortran_order': False, 'shape': (3, }",  # numpy's retry raises TokenError
        b"{'descr': '<f8',b'fortran_order': False, 'shape': (3,), }",  # numpy's own message: TypeError
        b"{'descr': '<f8', 'fortran_order': False, 'shape': (3,), 'extra': 1}",
        b"{'descr': 'not a dtype', 'fortran_order': False, 'shape': (3,), }",
        b"[1, 2, 3]",
        b"{'descr': ((), 1), 'fortran_order': False, 'shape': (3,), }",  # IndexError in descr_to_dtype
        b"{'descr': ('<f4', (2,)), 'fortran_order': False, 'shape': (3,), }",  # a subarray: a reshape error
    ],
)
def test_load_damaged_npy_header(tmp_path, header):
    # found by fuzzing .npy headers: numpy's header parser lets more than ValueError out
    npy = b"\x93NUMPY\x01\x00" + len(header + b"\n").to_bytes(2, "little") + header + b"\n" + bytes(24)
    p = _zip(tmp_path / "h.npz", {"w.npy": npy})
    q = tmp_path / "h.npy"
    q.write_bytes(npy)
    with pytest.raises(mg.io.CorruptFileError, match=r"h.npz entry 'w' has a damaged \.npy header"):
        mg.load(p)
    with pytest.raises(mg.io.CorruptFileError, match=r"h.npy has a damaged \.npy header"):
        mg.load(q)


def test_load_damaged_zip_directory_does_not_drop_entries(tmp_path):
    # found by the fuzz test: a comment length in the zip directory that grew over the next entry
    # made zipfile skip that entry without a word, and the file load as a foreign dict of arrays
    src = tmp_path / "ck.npz"
    mg.save({"w": mg.ones(3), "epoch": 3}, src)
    p = tmp_path / "dropped.npz"
    p.write_bytes(_swallow_second_entry(src.read_bytes()))
    with pytest.raises(mg.io.CorruptFileError, match="damaged zip directory: it lists 2 entries but 1 could be read"):
        mg.load(p)


def _swallow_second_entry(data):
    """``data`` (a zip) with its first directory record's comment length grown over the second record."""
    data = bytearray(data)
    first = data.find(b"PK\x01\x02")
    second = data.find(b"PK\x01\x02", first + 1)
    end = data.rfind(b"PK\x06\x06") if b"PK\x06\x06" in data else data.rfind(b"PK\x05\x06")
    comment = int.from_bytes(data[first + 32 : first + 34], "little")  # the first entry's comment length
    data[first + 32 : first + 34] = (comment + end - second).to_bytes(2, "little")  # swallow the second
    return bytes(data)


def test_load_zip_entry_that_is_not_an_npy(tmp_path):
    p = _zip(tmp_path / "z.npz", {"w.npy": b"just text, no .npy header"})
    with pytest.raises(mg.io.CorruptFileError, match=r"entry 'w' has a damaged \.npy header"):
        mg.load(p)


def test_load_still_reads_what_numpy_writes(tmp_path):
    # compressed archives, Fortran order, version-3 headers, several arrays in one stream
    np.savez_compressed(tmp_path / "c.npz", a=np.zeros((50, 40)), b=np.arange(5, dtype=np.int16))
    back = mg.load(tmp_path / "c.npz")
    assert back["a"].shape == (50, 40) and back["b"].dtype == np.int16
    f = np.asfortranarray(np.arange(6.0).reshape(2, 3))
    np.save(tmp_path / "f.npy", f)
    np.testing.assert_array_equal(mg.load(tmp_path / "f.npy"), f)
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.zeros(2, dtype=[("é", "<f4")]), version=(3, 0))
    np.save(buf, np.arange(3))
    buf.seek(0)
    assert mg.load(buf).dtype.names == ("é",)
    np.testing.assert_array_equal(mg.load(buf), [0, 1, 2])  # the next array in the stream


def _corruptions(data, rng, count):
    """(kind, bytes) pairs: ``data`` (a minigrad .npz) damaged in ``count`` seeded random ways."""
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        members = {name: z.read(name) for name in z.namelist()}
    meta = json.loads(str(np.load(io.BytesIO(members["__minigrad__.npy"]), allow_pickle=False)))
    junk = [None, True, 0, -1, 2.5, 10**30, "", "abc", "nan", [], {}, [1, 2, 3], ["k", {"t": "py"}, 0],
            {"t": "py"}, {"t": "tensor", "k": "nope"}, {"t": "float", "v": "abc"}, {"t": "pickle"}]  # fmt: skip

    def rezip(changed):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z:
            for name, b in {**members, **changed}.items():
                z.writestr(name, b)
        return buf.getvalue()

    def some_junk():
        return json.loads(json.dumps(junk[rng.integers(len(junk))]))  # a fresh copy: no shared lists

    def mutate_tree(tree):
        nodes, stack = [], [tree]  # every object and list in the index, to damage one of them
        while stack:
            n = stack.pop()
            if isinstance(n, (dict, list)):
                nodes.append(n)
                stack.extend(n.values() if isinstance(n, dict) else n)
        n = nodes[rng.integers(len(nodes))]
        keys = list(n) if isinstance(n, dict) else list(range(len(n)))
        choice = rng.integers(3) if keys else 2
        if choice == 0:
            del n[keys[rng.integers(len(keys))]]
        elif choice == 1:
            n[keys[rng.integers(len(keys))]] = some_junk()
        elif isinstance(n, dict):
            n[str(rng.integers(3))] = some_junk()
        else:
            n.append(some_junk())

    for i in range(count):
        kind = ("truncate", "flip", "splice", "index", "header", "header text")[i % 6]
        if kind == "truncate":
            out = data[: rng.integers(len(data))]
        elif kind == "flip":
            b = bytearray(data)
            for pos in rng.integers(len(b), size=rng.integers(1, 9)):
                b[pos] ^= int(rng.integers(1, 256))
            out = bytes(b)
        elif kind == "splice":
            pos = rng.integers(len(data))
            out = data[:pos] + rng.bytes(rng.integers(0, 9)) + data[pos + rng.integers(0, 9) :]
        elif kind == "index":
            m = json.loads(json.dumps(meta))
            for _ in range(rng.integers(1, 4)):
                mutate_tree(m)
            text = json.dumps(m) if rng.random() < 0.9 else json.dumps(m)[: rng.integers(60)]
            out = rezip({"__minigrad__.npy": _npy(np.array(text))})
        elif kind == "header text":  # bytes of an .npy header changed, the zip's CRC made to match
            name = sorted(members)[rng.integers(len(members))]
            b = bytearray(members[name])
            for pos in rng.integers(6, b.index(b"\n") + 1, size=rng.integers(1, 4)):
                b[pos] = int(rng.integers(256)) if rng.random() < 0.5 else rng.choice(list(b"()[]{}',:<>|0123 \n"))
            out = rezip({name: bytes(b)})
        else:  # a header that lies about the entry's size, keeping the entry's bytes
            name = sorted(members)[rng.integers(len(members))]
            shape = [(10**12,), (2**62, 4), (2**40, 2**40), (-3,), (0,), (5,), (), (1,) * 70][rng.integers(8)]
            descr = ["<f8", "<f4", "|u1", "<i8", "<U10", "|V0", "|O", ">f8"][rng.integers(8)]
            out = rezip({name: _npy_claiming(shape, descr, data=members[name][rng.integers(20, 200) :])})
        yield kind, out


def _same(a, b):
    """Equal nested results of load: same types, keys, order, dtypes, shapes and values (NaN too)."""
    stack = [(a, b)]
    while stack:
        a, b = stack.pop()
        if type(a) is not type(b):
            return False
        if isinstance(a, dict):
            if list(a) != list(b):
                return False
            stack.extend((a[k], b[k]) for k in a)
        elif isinstance(a, (list, tuple)):
            if len(a) != len(b):
                return False
            stack.extend(zip(a, b, strict=True))
        elif isinstance(a, (mg.Tensor, np.ndarray, np.generic)):
            a, b = to_np(a), to_np(b)
            nan = a.dtype.kind in "fc"  # equal_nan=True raises on strings and structured dtypes
            if a.dtype != b.dtype or a.shape != b.shape or not np.array_equal(a, b, equal_nan=nan):
                return False
        elif not (a == b or (a != a and b != b)):
            return False
    return True


def test_load_fuzz_damaged_files_fail_cleanly(tmp_path):
    # every damaged file either loads or raises a ValueError (UnsafeFileError included) that says
    # "load:" and names the file: never BadZipFile, KeyError, MemoryError...
    obj = {
        "model": mlp().state_dict(),
        "step": np.int64(7),
        "ids": np.arange(6, dtype=np.int32).reshape(2, 3),
        "meta": {"name": "mlp", "lr": 0.1, "nan": float("nan"), 3: [True, None, (1, 2.5)]},
    }
    src = tmp_path / "ck.npz"
    mg.save(obj, src)
    data = src.read_bytes()
    want = mg.load(src)
    p = tmp_path / "fuzz.npz"
    seen = {}
    for i, (kind, bad) in enumerate(_corruptions(data, np.random.default_rng(1234), 1000)):
        if i % 10 == 0:  # some through a real file (opening one costs ms); the rest from memory
            p.write_bytes(bad)
            f = p
        else:
            f = io.BytesIO(bad)
            f.name = str(p)  # load names a file object by its .name
        try:
            back = mg.load(f)
            seen[kind, "loaded"] = seen.get((kind, "loaded"), 0) + 1
            if kind in ("truncate", "flip", "splice"):  # damage the zip's CRCs don't catch must be harmless
                assert _same(back, want), f"case {i} ({kind}): loaded, with different contents"
        except ValueError as e:
            msg = str(e)
            assert msg.startswith("load: ") and str(p) in msg, f"case {i} ({kind}): unclear message {msg!r}"
            seen[kind, type(e).__name__] = seen.get((kind, type(e).__name__), 0) + 1
        except Exception as e:  # noqa: BLE001 - the point: nothing but ValueError escapes
            pytest.fail(f"case {i} ({kind}): {type(e).__name__}: {e}")
    # the corruptions really reach each check (not all swallowed by one early failure)
    assert seen.get(("header", "UnsafeFileError"), 0) > 0
    assert seen.get(("header", "CorruptFileError"), 0) > 0
    assert seen.get(("index", "CorruptFileError"), 0) > 0
    assert seen.get(("truncate", "CorruptFileError"), 0) > 0
    assert seen.get(("header text", "CorruptFileError"), 0) > 0


# -- the private names io.py uses where they exist, and what replaces each where it does not -------
# Each case makes a library look as if it had no such name, where io.py looks the name up (the
# library's own functions keep using theirs: numpy's public header readers call its private one);
# the fallback then has to load every kind of file and give the same clear errors. "nothing" runs
# the same checks with the private names.

_NUMPY_HEADER_READERS = ["numpy.lib._format_impl._read_array_header", "numpy.lib.format._read_array_header"]
_TAKE_AWAY = {  # case: (private names to take away, modules whose import is to fail), the fallbacks it reaches
    "nothing": ([], [], set()),
    "numpy _read_array_header": (_NUMPY_HEADER_READERS, [], {"_npy_header_3_0"}),
    "numpy.lib._format_impl": (_NUMPY_HEADER_READERS[1:], ["numpy.lib._format_impl"], {"_npy_header_3_0"}),
    "zipfile._EndRecData": (["zipfile._EndRecData"], [], {"_zip_entry_count"}),
    "zipfile._ECD_ENTRIES_TOTAL": (["zipfile._ECD_ENTRIES_TOTAL"], [], set()),  # its value, 4, is written in io
    "all of them": (
        _NUMPY_HEADER_READERS + ["zipfile._EndRecData", "zipfile._ECD_ENTRIES_TOTAL"],
        ["numpy.lib._format_impl"],
        {"_npy_header_3_0", "_zip_entry_count"},
    ),
}


def _take_away(monkeypatch, names, modules):
    for dotted in names:
        module_name, attr = dotted.rsplit(".", 1)
        real = sys.modules.get(module_name)
        if real is None:  # numpy 1.x has no numpy.lib._format_impl: nothing to take there
            continue
        stand_in = types.ModuleType(module_name)  # the module, less that name
        vars(stand_in).update({k: v for k, v in vars(real).items() if k != attr})
        monkeypatch.setitem(sys.modules, module_name, stand_in)  # for `from module import attr`
        parent, _, child = module_name.rpartition(".")
        if parent:
            monkeypatch.setattr(sys.modules[parent], child, stand_in)  # for `numpy.lib.format.attr`
        for k, v in list(vars(mg.io).items()):
            if v is real:  # for io's `zipfile.attr`
                monkeypatch.setattr(mg.io, k, stand_in)
    for module in modules:
        monkeypatch.setitem(sys.modules, module, None)  # `import module` now raises ImportError


def _counting(monkeypatch, name):
    """Wrap ``mg.io.<name>`` to count its calls; the list of calls."""
    calls, real = [], getattr(mg.io, name)
    monkeypatch.setattr(mg.io, name, lambda *a: calls.append(a) or real(*a))
    return calls


def _as_zip64(data, count=None):
    """``data`` (a zip) with a zip64 end record and locator before its end record, which then says
    0xFFFF entries and leaves the directory's size and offset to the zip64 record. That record says
    ``count`` entries (default: the real count)."""
    at = len(data) - 22
    while data[at : at + 4] != b"PK\x05\x06" or at + 22 + int.from_bytes(data[at + 20 : at + 22], "little") != len(data):
        at -= 1  # the comment may hold the signature: the record is the one its comment length ends at the end
    _, _, _, _, total, size, offset, comment = struct.unpack("<4s4H2LH", data[at : at + 22])
    count = total if count is None else count
    zip64 = struct.pack("<4sQ2H2L4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, count, count, size, offset)
    locator = struct.pack("<4sLQL", b"PK\x06\x07", 0, at, 1)
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, comment)
    return data[:at] + zip64 + locator + end + data[at + 22 :]


def _npy3(header, data=b""):
    """A version 3.0 .npy: ``header`` (text) as its utf-8 header, then ``data``."""
    h = (header + "\n").encode("utf-8")
    return b"\x93NUMPY\x03\x00" + struct.pack("<I", len(h)) + h + data


@pytest.mark.filterwarnings("ignore:Stored array in format 3.0:UserWarning")
@pytest.mark.parametrize("case", list(_TAKE_AWAY))
def test_load_without_private_names(tmp_path, monkeypatch, case):
    names, modules, fallbacks = _TAKE_AWAY[case]
    _take_away(monkeypatch, names, modules)
    calls = {name: _counting(monkeypatch, name) for name in set().union(*(f for *_, f in _TAKE_AWAY.values()))}
    rng = np.random.default_rng(0)
    arrays = {
        "f32": rng.standard_normal((3, 4)).astype(np.float32),
        "f64_fortran": np.asfortranarray(rng.standard_normal((2, 3, 2))),
        "i8_scalar": np.array(-7, np.int8),
        "bool_empty": np.zeros((0, 3), bool),
        "c128": rng.standard_normal(4) + 1j * rng.standard_normal(4),
        "u16_big_endian": np.arange(6, dtype=">u2").reshape(3, 2),
        "text": np.array(["a", "ünï", "日本"]),
        "utf8_fields": np.array([(1.5, 2), (3.0, 4)], dtype=[("α", "<f4"), ("日", "<i8")]),  # a 3.0 header
    }
    m = mlp()
    obj = {"model": dict(m.state_dict()), "arrays": arrays, "t": mg.tensor(arrays["f32"]), "step": np.int64(7),
           "meta": {"lr": 0.1, "nan": float("nan"), 3: (None, "x", [True])}}  # fmt: skip
    p = tmp_path / "ck.npz"
    mg.save(obj, p)
    back = mg.load(p)
    assert _same(back, obj)
    m2 = mlp()
    m2.load_state_dict(back["model"])
    for a, b in zip(m.parameters(), m2.parameters(), strict=True):
        np.testing.assert_array_equal(to_np(a), to_np(b))
    # what numpy writes: a compressed archive, and version 3.0 headers in a zip and in a bare .npy
    np.savez_compressed(tmp_path / "c.npz", **arrays)
    assert _same(mg.load(tmp_path / "c.npz"), arrays)
    buf = io.BytesIO()
    np.lib.format.write_array(buf, arrays["f32"], version=(3, 0))
    _zip(tmp_path / "v3.npz", {"w.npy": buf.getvalue()})
    np.testing.assert_array_equal(mg.load(tmp_path / "v3.npz")["w"], arrays["f32"])
    buf = io.BytesIO()
    np.lib.format.write_array(buf, arrays["utf8_fields"], version=(3, 0))
    np.lib.format.write_array(buf, arrays["f64_fortran"], version=(3, 0))
    buf.seek(0)
    assert _same(mg.load(buf), arrays["utf8_fields"]) and _same(mg.load(buf), arrays["f64_fortran"])

    # the errors that matter, with the messages they have with the private names
    data = p.read_bytes()
    q = tmp_path / "bad.npz"
    for n in (4, len(data) // 2, len(data) - 1):
        q.write_bytes(data[:n])
        with pytest.raises(mg.io.CorruptFileError, match="truncated"):
            mg.load(q)
    with zipfile.ZipFile(p) as z:
        entry = z.read("arrays.utf8_fields.npy")
    assert entry.startswith(b"\x93NUMPY\x03\x00")
    _zip(q, {"w.npy": entry[:-4]})
    with pytest.raises(mg.io.CorruptFileError, match=r"'w' declares shape \(2,\) of .* but holds"):
        mg.load(q)
    fields = "[('α', '<f4')]"
    for header, error, message in [
        (f"{{'descr': {fields}, 'fortran_order': False, 'shape': (10**12,), }}", mg.io.CorruptFileError,
         r"'w' has a damaged \.npy header"),  # 10**12 is an expression, not a literal
        (f"{{'descr': {fields}, 'fortran_order': False, 'shape': (1000000000000,), }}", mg.io.CorruptFileError,
         r"'w' declares shape \(1000000000000,\) .* but holds 8 bytes"),
        ("{'descr': [('α', '|O')], 'fortran_order': False, 'shape': (1,), }", mg.io.UnsafeFileError,
         "'w' is an object array"),
        (f"{{'descr': {fields}, 'fortran_order': 0, 'shape': (2,), }}", mg.io.CorruptFileError,
         r"'w' has a damaged \.npy header"),
        (f"{{'descr': {fields}, 'fortran_order': False, 'shape': (2,), 'α': 1}}", mg.io.CorruptFileError,
         r"'w' has a damaged \.npy header"),
        ("{'descr': 'not a dtype', 'fortran_order': False, 'shape': (2,), }", mg.io.CorruptFileError,
         r"'w' has a damaged \.npy header"),
        (f"{{'descr': {fields}, 'fortran_order': False, 'shape': (2, }}", mg.io.CorruptFileError,
         r"'w' has a damaged \.npy header"),
        ("x" * 20000, mg.io.CorruptFileError, r"'w' has a damaged \.npy header"),
    ]:  # fmt: skip
        _zip(q, {"w.npy": _npy3(header, bytes(8))})
        with pytest.raises(error, match=message):
            mg.load(q)
    _zip(q, {"w.npy": _npy3("{'descr': '<f8'")[:12]})  # cut inside the header's length
    with pytest.raises(mg.io.CorruptFileError, match=r"'w' has a damaged \.npy header"):
        mg.load(q)
    _zip(q, {"w.npy": b"\x93NUMPY\x03\x00\x10\x00\x00\x00{'descr': '\xff\xfe"})  # not utf-8, and cut short
    with pytest.raises(mg.io.CorruptFileError, match=r"'w' has a damaged \.npy header"):
        mg.load(q)
    # the zip's entry count: archives with a comment, zip64 end records, a directory that drops entries
    for comment in (b"", b"c", b"x" * 100, b"PK" * (65535 // 2)):
        z = tmp_path / "comment.npz"
        z.write_bytes(data)
        with zipfile.ZipFile(z, "a") as zf:
            zf.comment = comment
        assert _same(mg.load(z), obj)
        z.write_bytes(_as_zip64(z.read_bytes()))
        assert _same(mg.load(z), obj)
    count = len(zipfile.ZipFile(p).namelist())
    for damaged, listed in [
        (_as_zip64(data, count=count + 1), count + 1),
        (_swallow_second_entry(data), count),
        (_as_zip64(_swallow_second_entry(data)), count),
    ]:
        q.write_bytes(damaged)
        with pytest.raises(mg.io.CorruptFileError, match=f"damaged zip directory: it lists {listed} entries but"):
            mg.load(q)

    for name, made in calls.items():  # the fallback did the work, and only where its private name is gone
        assert bool(made) == (name in fallbacks), f"{name} called {len(made)} times in case {case!r}"


def test_npy_header_3_0_fallback_agrees_with_numpy():
    # the fallback against numpy's own private reader on valid and damaged headers
    numpy_reader = mg.io._numpy_header_reader()
    if numpy_reader is None:
        pytest.skip("this numpy has no private header reader to compare with")
    rng = np.random.default_rng(7)
    headers = [
        "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }",
        "{'descr': '>i8', 'fortran_order': True, 'shape': (), }",
        "{'descr': [('α', '<f4'), ('日本', '<i2', (2, 3))], 'fortran_order': False, 'shape': (0,), }",
        "{'descr': [('', '|V4'), ('b', [('c', '<u1')])], 'fortran_order': False, 'shape': (5,), }",
        "{'descr': '<U3', 'fortran_order': False, 'shape': (True, 2), }",
    ]
    invalid = [
        "{'descr': '<f4', 'fortran_order': False, 'shape': [3, 4], }",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (3.0,), }",
        "{'descr': '<f4', 'fortran_order': 0, 'shape': (3,), }",
        "{'descr': '<f4', 'shape': (3,), }",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'α': 1}",
        "{'descr': 5, 'fortran_order': False, 'shape': (3,), }",
        "{'descr': [('a', '<f4', 2, 1)], 'fortran_order': False, 'shape': (3,), }",
        "[('descr', '<f4')]",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), ",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }" + " " * 10000,  # over numpy's limit
    ]
    alphabet = list("()[]{}',:<>|0123 \nαé日") + ["", "'descr'", "'shape'", "None", "True", "1e3", "-"]
    failures = (ValueError, TypeError, SyntaxError, RecursionError, OverflowError, IndexError)

    def outcome(reader, npy):
        fh = io.BytesIO(npy)
        fh.seek(8)  # after the magic and the version
        try:
            shape, fortran_order, dtype = reader(fh)
        except failures:
            return "error"
        return shape, fortran_order, dtype, fh.tell()

    read = 0
    for i in range(600):
        fixed = len(headers) + len(invalid)  # the first cases as written, then with random changes
        text = list((headers + invalid)[i] if i < fixed else headers[i % len(headers)])
        for _ in range(rng.integers(0, 4) if i >= fixed else 0):
            pos = int(rng.integers(len(text)))
            text[pos] = alphabet[rng.integers(len(alphabet))]
        npy = _npy3("".join(text), bytes(8))
        if i % 10 == 9:
            npy = npy[: rng.integers(8, len(npy))]
        want = outcome(lambda fh: numpy_reader(fh, (3, 0)), npy)
        assert outcome(mg.io._npy_header_3_0, npy) == want, f"case {i}: {npy!r}"
        if i < fixed:
            assert (want == "error") == (i >= len(headers)), "".join(text)
        read += want != "error"
    assert 50 < read < 550  # both outcomes well represented


def test_zip_entry_count_fallback_agrees_with_zipfile(tmp_path):
    # the fallback against zipfile's private end record reader, on whole and damaged archive ends
    end_record = getattr(zipfile, "_EndRecData", None)
    if end_record is None:
        pytest.skip("this Python's zipfile has no _EndRecData to compare with")
    src = tmp_path / "ck.npz"
    mg.save({"model": mlp().state_dict(), "epoch": 3}, src)
    data = src.read_bytes()
    archives = [data, _as_zip64(data), _as_zip64(data, count=2), _swallow_second_entry(data), b"", b"PK\x05\x06"]
    for comment in (b"c", b"x" * 100, b"PK\x05\x06" * 100, b"y" * 65535):
        with zipfile.ZipFile(src, "a") as zf:
            zf.comment = comment
        archives += [src.read_bytes(), _as_zip64(src.read_bytes())]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w"):
        pass
    archives.append(buf.getvalue())  # no entries
    rng = np.random.default_rng(3)
    for i in range(400):  # damage near the end, where the records are
        a = bytearray(archives[i % 4])
        if i % 3 == 0:
            del a[len(a) - rng.integers(1, 120) :]
        else:
            for pos in rng.integers(max(len(a) - 120, 0), len(a), size=rng.integers(1, 4)):
                a[pos] = int(rng.integers(256)) if rng.random() < 0.7 else b"PK\x05\x06\x07"[rng.integers(5)]
        archives.append(bytes(a))
    compared = 0
    for i, a in enumerate(archives):
        try:
            record = end_record(io.BytesIO(a))
        except (OSError, zipfile.BadZipFile):
            continue  # zipfile cannot open these: io never asks for their count
        want = None if record is None else record[zipfile._ECD_ENTRIES_TOTAL]
        assert mg.io._zip_entry_count(io.BytesIO(a)) == want, f"archive {i}"
        compared += want is not None
    assert compared > 200
