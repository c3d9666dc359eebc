"""Datasets and batches, PyTorch's ``torch.utils.data`` names: ``Dataset``, ``TensorDataset``,
``Subset``, ``DataLoader``, ``random_split``, ``default_collate``.

>>> ds = TensorDataset(mg.randn(100, 8), mg.randint(3, (100,)))
>>> loader = DataLoader(ds, batch_size=32, shuffle=True, seed=0)
>>> for x, y in loader:          # x (32, 8) float32, y (32,) int64; the last batch holds 4
...     loss = F.cross_entropy(model(x), y)

Shuffling draws from ``mg.manual_seed``'s generator, or from the loader's own when ``seed=`` is
given (then every run sees the same sequence of epochs). No worker processes: batches are made
in the loop that asks for them. A progress bar is the user's own (``tqdm(loader)``).
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from .. import backend as _be
from .. import creation as _creation
from ..ops import shape as _shape_ops
from ..tensor import Tensor

__all__ = ["Dataset", "TensorDataset", "Subset", "DataLoader", "random_split", "default_collate"]


class Dataset:
    """Base class of map-style datasets: subclasses define ``__getitem__(i)`` (one sample) and
    ``__len__()``.

    >>> class Squares(Dataset):
    ...     def __len__(self): return 10
    ...     def __getitem__(self, i): return mg.tensor([float(i)]), mg.tensor(float(i * i))
    """

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__}: a Dataset subclass must define __getitem__(index)")

    def __len__(self):
        raise NotImplementedError(f"{type(self).__name__}: a Dataset subclass must define __len__()")


def _as_tensor(t, where):
    if isinstance(t, Tensor):
        return t
    if isinstance(t, np.ndarray) or _be.is_cupy_array(t):
        return Tensor(t)
    raise TypeError(f"{where}: expected Tensors (or arrays), got {type(t).__name__}")


class TensorDataset(Dataset):
    """Samples are rows: ``ds[i]`` is ``(t[i] for t in tensors)``, a tuple, for tensors that share
    their first dimension.

    >>> ds = TensorDataset(mg.zeros(5, 2), mg.arange(5))
    >>> len(ds), ds[1][1].item()
    (5, 1)
    """

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset: needs at least one tensor")
        self.tensors = tuple(_as_tensor(t, "TensorDataset") for t in tensors)
        sizes = [t.shape[0] if t.ndim else None for t in self.tensors]
        if None in sizes or len(set(sizes)) != 1:
            shapes = ", ".join(str(t.shape) for t in self.tensors)
            raise ValueError(f"TensorDataset: the tensors must share their first dimension (the samples), "
                             f"got shapes {shapes}")

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]

    def _batch(self, indices):
        """The rows ``indices`` (a host int64 array) of every tensor, one gather each."""
        return tuple(t[_on_device(indices, t)] for t in self.tensors)


def _on_device(indices, t):
    dev = t.device
    return indices if dev == "cpu" else _be.to_device(indices, dev)  # moved explicitly, once a batch


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order (what ``random_split`` returns)."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = [int(i) for i in indices]

    def __getitem__(self, index):
        if isinstance(index, (list, tuple)):
            return [self.dataset[self.indices[i]] for i in index]
        return self.dataset[self.indices[index]]

    def __len__(self):
        return len(self.indices)


def _gatherer(ds):
    """A function: host index array -> batch, for a TensorDataset or Subsets of one; else None."""
    if isinstance(ds, TensorDataset):
        return ds._batch
    if isinstance(ds, Subset):
        inner = _gatherer(ds.dataset)
        if inner is not None:
            where = np.asarray(ds.indices, dtype=np.int64)
            return lambda idx: inner(where[idx])
    return None


def random_split(dataset, lengths, seed=None) -> list[Subset]:
    """Split ``dataset`` at random into ``Subset``s of the given ``lengths``: counts that add up to
    ``len(dataset)``, or fractions that add up to 1 (floors, then the remainder dealt one by one
    from the first, as PyTorch does).

    The permutation comes from ``mg.manual_seed``'s generator, or from ``seed``.

    >>> train, test = random_split(range(10), [0.8, 0.2], seed=0)
    >>> len(train), len(test)
    (8, 2)
    """
    n = len(dataset)
    lengths = list(lengths)
    if lengths and all(isinstance(v, numbers.Real) and not isinstance(v, numbers.Integral) for v in lengths):
        total = math.fsum(lengths)
        if not (math.isclose(total, 1.0) and total <= 1.0) or any(v < 0 for v in lengths):
            raise ValueError(f"random_split: fractions must be >= 0 and add up to 1, got {lengths} (sum {total})")
        counts = [int(math.floor(n * v)) for v in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        lengths = counts
    if any(isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 0 for v in lengths):
        raise ValueError(f"random_split: lengths must be counts (ints >= 0) or fractions, got {lengths}")
    if sum(lengths) != n:
        raise ValueError(f"random_split: lengths {lengths} add up to {sum(lengths)}, the dataset has {n} samples")
    perm = _creation._generator(seed).permutation(n)
    out, start = [], 0
    for k in lengths:
        out.append(Subset(dataset, perm[start:start + k]))
        start += k
    return out


def default_collate(batch):
    """Samples -> one batch, as PyTorch's ``default_collate``: Tensors (and arrays) are stacked
    along a new first dim; ints become an int64 tensor, floats a float64 one, bools a bool one;
    tuples, lists and dicts are collated field by field; strings are kept as a list.

    >>> default_collate([(mg.zeros(2), 0), (mg.ones(2), 1)])[1].tolist()
    [0, 1]
    """
    if not batch:
        raise ValueError("default_collate: got an empty batch")
    first = batch[0]
    if isinstance(first, Tensor):
        return _shape_ops.stack(list(batch), 0)
    if isinstance(first, np.ndarray) or _be.is_cupy_array(first):
        return _shape_ops.stack([Tensor(b) for b in batch], 0)
    if isinstance(first, (bool, np.bool_)):
        return Tensor(np.asarray(batch, dtype=np.bool_))
    if isinstance(first, numbers.Integral):
        return Tensor(np.asarray(batch, dtype=np.int64))
    if isinstance(first, numbers.Real):
        return Tensor(np.asarray(batch, dtype=np.float64))
    if isinstance(first, (str, bytes)):
        return list(batch)
    if isinstance(first, dict):
        return {k: default_collate([b[k] for b in batch]) for k in first}
    if isinstance(first, (tuple, list)):
        n = len(first)
        if any(len(b) != n for b in batch):
            raise ValueError(f"default_collate: the samples of a batch have different lengths "
                             f"({sorted({len(b) for b in batch})}); each must hold the same fields")
        cols = [default_collate([b[i] for b in batch]) for i in range(n)]
        if hasattr(first, "_fields"):  # a namedtuple keeps its type
            return type(first)(*cols)
        return cols if isinstance(first, list) else tuple(cols)
    raise TypeError(f"default_collate: cannot batch samples of type {type(first).__name__}; expected Tensors, "
                    "arrays, numbers, strings, or tuples / lists / dicts of them (or pass collate_fn=)")


class DataLoader:
    """Batches of a dataset, PyTorch's ``DataLoader``: ``for x, y in loader: ...``.

    Args:
        dataset: a ``Dataset`` (anything with ``__len__`` and ``__getitem__``).
        batch_size: samples per batch (default 1).
        shuffle: a new random order every epoch (every ``iter(loader)``).
        drop_last: drop the last batch when it is smaller than ``batch_size``.
        collate_fn: list of samples -> batch (default ``default_collate``: stacked Tensors).
        seed: shuffle with the loader's own generator seeded by this (reproducible epochs);
            ``None`` draws from ``mg.manual_seed``'s.

    ``len(loader)`` is the number of batches; ``loader.dataset`` the dataset. A ``TensorDataset``
    (or a ``Subset`` of one) with the default collate is gathered one indexing per tensor and
    batch, not sample by sample.

    >>> loader = DataLoader(TensorDataset(mg.zeros(10, 3)), batch_size=4)
    >>> len(loader), [x.shape[0] for (x,) in loader]
    (3, [4, 4, 2])
    """

    def __init__(self, dataset, batch_size: int | None = 1, shuffle: bool = False, drop_last: bool = False,
                 collate_fn=None, seed=None):
        if not (hasattr(dataset, "__len__") and hasattr(dataset, "__getitem__")):
            raise TypeError(f"DataLoader: dataset must have __len__ and __getitem__ (a map-style Dataset), "
                            f"got {type(dataset).__name__}")
        if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral)
                                       or batch_size < 1):
            raise ValueError(f"DataLoader: batch_size must be a positive int (or None: no batching), got {batch_size!r}")
        if batch_size is None and drop_last:
            raise ValueError("DataLoader: drop_last=True needs a batch_size (batch_size=None does not batch)")
        self.dataset = dataset
        self.batch_size = None if batch_size is None else int(batch_size)
        self.shuffle = bool(shuffle)
        self.drop_last = bool(drop_last)
        self.collate_fn = collate_fn
        self.seed = seed
        self._rng = None if seed is None else np.random.default_rng(seed)

    def __len__(self):
        n = len(self.dataset)
        if self.batch_size is None:
            return n
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def _order(self):
        n = len(self.dataset)
        if not self.shuffle:
            return np.arange(n, dtype=np.int64)
        rng = self._rng if self._rng is not None else _creation._generator(None)
        return rng.permutation(n).astype(np.int64, copy=False)

    def __iter__(self):
        order = self._order()
        if self.batch_size is None:  # no batching: the samples themselves
            for i in order:
                yield self.dataset[int(i)]
            return
        bs = self.batch_size
        stop = len(self) * bs
        gather = _gatherer(self.dataset) if self.collate_fn is None else None
        collate = self.collate_fn or default_collate
        for start in range(0, min(stop, len(order)), bs):
            idx = order[start:start + bs]
            yield gather(idx) if gather is not None else collate([self.dataset[int(i)] for i in idx])

    def __repr__(self):
        return (f"DataLoader(dataset of {len(self.dataset)} samples, batch_size={self.batch_size}, "
                f"shuffle={self.shuffle}, drop_last={self.drop_last}, {len(self)} batches)")
