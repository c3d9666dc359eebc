"""mg.utils.data (issue 33): Dataset, TensorDataset, Subset, DataLoader (batch_size, shuffle with
a seed, drop_last, collate_fn), random_split and default_collate, with PyTorch's semantics."""
import math

import numpy as np
import pytest

import minigrad as mg
from minigrad.utils.data import DataLoader, Dataset, Subset, TensorDataset, default_collate, random_split
from conftest import to_np


def _ds(n=10):
    x = mg.tensor(np.arange(n * 2, dtype=np.float32).reshape(n, 2))
    y = mg.tensor(np.arange(n))
    return TensorDataset(x, y)


def test_mg_utils_data_is_reachable_as_in_pytorch():
    assert mg.utils.data.DataLoader is DataLoader
    import minigrad.utils.data as d2

    assert d2.TensorDataset is TensorDataset


def test_tensor_dataset_rows_and_length():
    ds = _ds(5)
    assert len(ds) == 5
    x, y = ds[3]
    assert to_np(x).tolist() == [6.0, 7.0] and y.item() == 3
    with pytest.raises(ValueError, match=r"TensorDataset: the tensors must share their first dimension \(the "
                                         r"samples\), got shapes \(5, 2\), \(4,\)"):
        TensorDataset(mg.zeros(5, 2), mg.zeros(4))


@pytest.mark.parametrize("n,bs,drop_last", [(10, 4, False), (10, 4, True), (8, 4, False), (3, 5, False),
                                            (3, 5, True), (7, 1, False)])
def test_batches_cover_the_dataset_in_order(n, bs, drop_last):
    loader = DataLoader(_ds(n), batch_size=bs, drop_last=drop_last)
    batches = list(loader)
    assert len(loader) == len(batches) == (n // bs if drop_last else math.ceil(n / bs))
    seen = [int(v) for _, y in batches for v in to_np(y)]
    assert seen == list(range(len(seen)))
    assert all(x.shape == (y.shape[0], 2) and x.dtype == np.float32 and y.dtype == np.int64 for x, y in batches)
    assert loader.dataset is not None and loader.batch_size == bs


def test_shuffle_with_a_seed_repeats_and_each_epoch_differs():
    a = DataLoader(_ds(20), batch_size=6, shuffle=True, seed=3)
    b = DataLoader(_ds(20), batch_size=6, shuffle=True, seed=3)

    def epoch(loader):
        return [int(v) for _, y in loader for v in to_np(y)]

    e1, e2 = epoch(a), epoch(a)
    assert sorted(e1) == list(range(20)) and e1 != list(range(20))
    assert e1 != e2  # a new order every epoch
    assert [e1, e2] == [epoch(b), epoch(b)]  # the same sequence of epochs for the same seed
    # without seed=, mg.manual_seed decides
    c = DataLoader(_ds(20), batch_size=6, shuffle=True)
    mg.manual_seed(11)
    f1 = epoch(c)
    mg.manual_seed(11)
    assert epoch(c) == f1


def test_collate_fn_and_the_sample_by_sample_path_agree_with_the_fast_path():
    ds = _ds(9)
    fast = list(DataLoader(ds, batch_size=4))
    slow = list(DataLoader(ds, batch_size=4, collate_fn=default_collate))
    for (x1, y1), (x2, y2) in zip(fast, slow, strict=True):
        np.testing.assert_array_equal(to_np(x1), to_np(x2))
        np.testing.assert_array_equal(to_np(y1), to_np(y2))
    sums = list(DataLoader(ds, batch_size=4, collate_fn=lambda batch: sum(float(y.item()) for _, y in batch)))
    assert sums == [6.0, 22.0, 8.0]


def test_a_dataset_subclass_with_tuples_numbers_and_dicts():
    class Squares(Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return {"x": np.array([i, i], dtype=np.float32), "y": i * i, "w": 0.5 * i, "name": f"s{i}"}

    (b0, b1) = list(DataLoader(Squares(), batch_size=3))
    assert b0["x"].shape == (3, 2) and b0["x"].dtype == np.float32
    assert to_np(b0["y"]).tolist() == [0, 1, 4] and b0["y"].dtype == np.int64
    assert b0["w"].dtype == np.float64  # PyTorch's default_collate: Python floats become float64
    assert b0["name"] == ["s0", "s1", "s2"] and b1["name"] == ["s3", "s4"]
    with pytest.raises(NotImplementedError, match="Dataset subclass must define __getitem__"):
        Dataset()[0]


def test_batch_size_none_yields_the_samples():
    items = list(DataLoader(range(4), batch_size=None))
    assert items == [0, 1, 2, 3]


def test_random_split_counts_fractions_and_seed():
    ds = _ds(10)
    a, b = random_split(ds, [7, 3], seed=0)
    assert isinstance(a, Subset) and (len(a), len(b)) == (7, 3)
    assert sorted(a.indices + b.indices) == list(range(10))
    a2, _ = random_split(ds, [7, 3], seed=0)
    assert a2.indices == a.indices
    # fractions: floors, then the remainder one by one from the first (PyTorch's rule)
    assert [len(s) for s in random_split(range(10), [0.34, 0.33, 0.33], seed=0)] == [4, 3, 3]
    assert [len(s) for s in random_split(range(11), [0.5, 0.5], seed=0)] == [6, 5]
    x, y = a[0]
    assert y.item() == a.indices[0]
    # a Subset of a TensorDataset batches like the dataset
    got = [int(v) for _, yb in DataLoader(a, batch_size=3) for v in to_np(yb)]
    assert got == a.indices
    with pytest.raises(ValueError, match=r"random_split: lengths \[7, 4\] add up to 11, the dataset has 10 samples"):
        random_split(ds, [7, 4])
    with pytest.raises(ValueError, match=r"random_split: fractions must be >= 0 and add up to 1"):
        random_split(ds, [0.5, 0.6])


def test_random_split_matches_torch_lengths():
    torch = pytest.importorskip("torch")
    for n, fr in [(10, [0.34, 0.33, 0.33]), (101, [0.8, 0.1, 0.1]), (7, [0.5, 0.5])]:
        theirs = [len(s) for s in torch.utils.data.random_split(range(n), fr)]
        assert [len(s) for s in random_split(range(n), fr, seed=0)] == theirs


def test_loader_errors_name_the_argument():
    with pytest.raises(ValueError, match="DataLoader: batch_size must be a positive int .*got 0"):
        DataLoader(_ds(), batch_size=0)
    with pytest.raises(TypeError, match="DataLoader: dataset must have __len__ and __getitem__"):
        DataLoader(iter([1, 2]))


def test_training_with_a_loader_reduces_the_loss():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 3)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5], dtype=np.float32) > 0).astype(np.int64)
    loader = DataLoader(TensorDataset(mg.tensor(x), mg.tensor(y)), batch_size=16, shuffle=True, seed=0)
    mg.manual_seed(0)
    model = mg.nn.Linear(3, 2)
    opt = mg.optim.SGD(model.parameters(), lr=0.5)
    loss_fn = mg.nn.CrossEntropyLoss()
    losses = []
    for _ in range(5):
        for xb, yb in loader:
            loss = loss_fn(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    assert losses[-1] < losses[0] / 2
