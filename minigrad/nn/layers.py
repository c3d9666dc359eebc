"""The containers (``Sequential``, ``ModuleList``, ``ModuleDict``, ``ParameterList``, ``ParameterDict``) and
the basic layers of ``mg.nn`` (with ``Unflatten``, ``GroupNorm``, ``RMSNorm``, ``ZeroPad2d``, ``PixelShuffle``,
``EmbeddingBag``).

Every constructor checks its sizes (positive ints), with a ValueError naming the layer and
the argument. The activations are in ``layers_activation.py``; convolution, pooling and batch
norm in ``layers_conv.py``.
"""
from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np

from .. import creation as _creation
from ..grad_mode import no_grad
from . import init
from ._common import positive_int
from . import functional as F
from ..tensor import Tensor
from .module import Module, Parameter


# -- containers -----------------------------------------------------------------------------------------


class Sequential(Module):
    """Modules applied one after another: ``Sequential(Linear(2, 16), ReLU(), Linear(16, 1))``.

    Children are named "0", "1", ... (or by the keys of an OrderedDict given alone).
    """

    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], (OrderedDict, dict)):
            for name, m in modules[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(modules):
                if not isinstance(m, Module):
                    raise TypeError(f"Sequential: argument {i} is {type(m).__name__}, not an nn.Module")
                self.add_module(str(i), m)

    def forward(self, x):
        d = self.__dict__
        for name in d["_module_names"]:
            x = d[name](x)
        return x

    def __len__(self):
        return len(self.__dict__["_module_names"])

    def __iter__(self):
        return iter(list(self.children()))

    def _key(self, i):
        names = list(self.__dict__["_module_names"])
        n = len(names)
        if not -n <= i < n:
            raise IndexError(f"Sequential: index {i} is out of range for {n} modules")
        return names[i % n]

    def __getitem__(self, i):
        if isinstance(i, slice):
            names = list(self.__dict__["_module_names"])[i]
            return Sequential(OrderedDict((k, self.__dict__[k]) for k in names))
        return self.__dict__[self._key(i)]

    def __setitem__(self, i, module):
        setattr(self, self._key(i), module)

    def append(self, module):
        """Add ``module`` at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self


class ModuleList(Module):
    """A list of modules that registers them (``parameters()`` sees their parameters)."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __len__(self):
        return len(self.__dict__["_module_names"])

    def __iter__(self):
        return iter(list(self.children()))

    def __getitem__(self, i):
        names = list(self.__dict__["_module_names"])
        if isinstance(i, slice):
            return ModuleList([self.__dict__[k] for k in names[i]])
        if not -len(names) <= i < len(names):
            raise IndexError(f"ModuleList: index {i} is out of range for {len(names)} modules")
        return self.__dict__[names[i]]

    def __setitem__(self, i, module):
        names = list(self.__dict__["_module_names"])
        setattr(self, names[i], module)

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleList is a container: iterate over it in your forward()")


class ModuleDict(Module):
    """A dict of modules that registers them by key (``parameters()`` sees their parameters);
    insertion order is kept. PyTorch's ``nn.ModuleDict``.

    >>> heads = mg.nn.ModuleDict({"cls": mg.nn.Linear(8, 3), "box": mg.nn.Linear(8, 4)})
    >>> heads["cls"](mg.ones(2, 8)).shape
    (2, 3)
    """

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str):
        if key not in self.__dict__["_module_names"]:
            raise KeyError(f"ModuleDict: no module {key!r} (keys: {list(self.keys())})")
        return self.__dict__[key]

    def __setitem__(self, key: str, module) -> None:
        if not isinstance(module, Module):
            raise TypeError(f"ModuleDict: {key!r} must be an nn.Module, got {type(module).__name__}")
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        self[key]  # noqa: B018 - the KeyError naming the keys
        delattr(self, key)

    def __len__(self):
        return len(self.__dict__["_module_names"])

    def __iter__(self):
        return iter(list(self.__dict__["_module_names"]))

    def __contains__(self, key):
        return key in self.__dict__["_module_names"]

    def keys(self):
        """The keys, in insertion order."""
        return list(self.__dict__["_module_names"])

    def values(self):
        """The modules, in insertion order."""
        return [self.__dict__[k] for k in self.keys()]

    def items(self):
        """(key, module) pairs, in insertion order."""
        return [(k, self.__dict__[k]) for k in self.keys()]

    def pop(self, key: str):
        """Remove ``key`` and return its module."""
        m = self[key]
        del self[key]
        return m

    def clear(self) -> None:
        """Remove every module."""
        for k in self.keys():
            del self[k]

    def update(self, modules) -> None:
        """Add (or replace) modules from a dict, a ModuleDict or (key, module) pairs."""
        items = modules.items() if hasattr(modules, "items") else modules
        for k, m in items:
            self[k] = m

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleDict is a container: pick a module by key in your forward()")


class ParameterList(Module):
    """A list of parameters that registers them (named "0", "1", ...); Tensors given are wrapped in
    ``Parameter``. PyTorch's ``nn.ParameterList``.

    >>> ps = mg.nn.ParameterList([mg.zeros(2), mg.ones(3)])
    >>> len(list(ps.parameters())), ps[1].shape
    (2, (3,))
    """

    def __init__(self, values=None):
        super().__init__()
        if values is not None:
            self.extend(values)

    @staticmethod
    def _param(value, i):
        if isinstance(value, Parameter):
            return value
        if isinstance(value, (Tensor, np.ndarray)) or hasattr(value, "__cuda_array_interface__"):
            return Parameter(value)
        raise TypeError(f"ParameterList: item {i} must be a Parameter or a Tensor, got {type(value).__name__}")

    def __len__(self):
        return len(self.__dict__["_param_names"])

    def __iter__(self):
        return iter([self.__dict__[k] for k in self.__dict__["_param_names"]])

    def __getitem__(self, i):
        names = list(self.__dict__["_param_names"])
        if isinstance(i, slice):
            return ParameterList([self.__dict__[k] for k in names[i]])
        if not -len(names) <= i < len(names):
            raise IndexError(f"ParameterList: index {i} is out of range for {len(names)} parameters")
        return self.__dict__[names[i]]

    def __setitem__(self, i, value) -> None:
        names = list(self.__dict__["_param_names"])
        if not -len(names) <= i < len(names):
            raise IndexError(f"ParameterList: index {i} is out of range for {len(names)} parameters")
        self.register_parameter(names[i], self._param(value, i))

    def append(self, value):
        """Add one parameter at the end; returns self."""
        n = len(self)
        self.register_parameter(str(n), self._param(value, n))
        return self

    def extend(self, values):
        """Add each of ``values``; returns self."""
        for v in values:
            self.append(v)
        return self

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ParameterList is a container: use its parameters in your forward()")

    def extra_repr(self):
        return "\n".join(f"({i}): Parameter of shape {p.shape}, dtype {p.dtype}" for i, p in enumerate(self))


# -- layers -------------------------------------------------------------------------------------------------


class Identity(Module):
    """Returns its input."""

    def forward(self, x):
        return x


class Flatten(Module):
    """Flattens dims ``start_dim..end_dim`` (by default all but the batch dim)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, x):
        return x.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Linear(Module):
    """``y = x @ weight.T + bias`` with ``weight`` (out, in) and ``bias`` (out,).

    Initialised as PyTorch does: weight ~ U(-1/sqrt(in), 1/sqrt(in)) (kaiming_uniform_
    with a=sqrt(5)), bias ~ U(-1/sqrt(in), 1/sqrt(in)). Float32 unless ``dtype`` says otherwise.

    >>> mg.nn.Linear(3, 2)(mg.ones(5, 3)).shape
    (5, 2)
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, dtype=None, device=None):
        super().__init__()
        self.in_features = positive_int(in_features, "Linear", "in_features")
        self.out_features = positive_int(out_features, "Linear", "out_features")
        self.weight = Parameter(_creation.empty(self.out_features, self.in_features, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(_creation.empty(self.out_features, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features) if self.in_features > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Embedding(Module):
    """A lookup table: integer indices of any shape -> rows of ``weight`` (num_embeddings, embedding_dim).

    Initialised from N(0, 1), as PyTorch does; ``padding_idx`` (PyTorch's): that row starts at zero
    and gets no gradient.
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx=None, *, dtype=None, device=None):
        super().__init__()
        self.num_embeddings = positive_int(num_embeddings, "Embedding", "num_embeddings")
        self.embedding_dim = positive_int(embedding_dim, "Embedding", "embedding_dim")
        if padding_idx is not None:
            if not -self.num_embeddings <= int(padding_idx) < self.num_embeddings:
                raise ValueError(f"Embedding: padding_idx {padding_idx} is out of range for {num_embeddings} embeddings")
            padding_idx = int(padding_idx) % self.num_embeddings
        self.padding_idx = padding_idx
        self.weight = Parameter(_creation.empty(self.num_embeddings, self.embedding_dim, dtype=dtype, device=device))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx] = 0.0

    def forward(self, indices):
        return F.embedding(indices, self.weight, padding_idx=self.padding_idx)

    def extra_repr(self):
        return f"{self.num_embeddings}, {self.embedding_dim}" + (
            f", padding_idx={self.padding_idx}" if self.padding_idx is not None else "")


class Dropout(Module):
    """In training mode, zero each element with probability ``p`` and scale the rest by 1/(1-p);
    the identity in eval mode."""

    def __init__(self, p: float = 0.5):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: p must be in [0, 1], got {p}")
        self.p = float(p)

    def forward(self, x):
        return F.dropout(x, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}"


class LayerNorm(Module):
    """Normalise over the trailing ``normalized_shape`` dims, then scale by ``weight`` (ones)
    and shift by ``bias`` (zeros)."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True,
                 dtype=None, device=None):
        super().__init__()
        if isinstance(normalized_shape, str) or not hasattr(normalized_shape, "__iter__"):  # one size
            self.normalized_shape = (positive_int(normalized_shape, "LayerNorm", "normalized_shape"),)
        else:
            self.normalized_shape = tuple(positive_int(s, "LayerNorm", f"normalized_shape[{i}]")
                                          for i, s in enumerate(normalized_shape))
        self.eps = float(eps)
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(_creation.ones(self.normalized_shape, dtype=dtype, device=device))
            if bias:
                self.bias = Parameter(_creation.zeros(self.normalized_shape, dtype=dtype, device=device))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, x):
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


# -- PyTorch's further small layers: Unflatten, ParameterDict, GroupNorm, RMSNorm, ZeroPad2d, PixelShuffle --


class Unflatten(Module):
    """Splits dim ``dim`` into ``unflattened_size`` (one entry may be -1); PyTorch's ``nn.Unflatten``.

    >>> mg.nn.Unflatten(1, (2, 3))(mg.ones(4, 6)).shape
    (4, 2, 3)
    """

    def __init__(self, dim: int, unflattened_size):
        super().__init__()
        self.dim = int(dim)
        self.unflattened_size = tuple(int(s) for s in unflattened_size)

    def forward(self, x):
        return x.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class ParameterDict(Module):
    """A dict of parameters that registers them by key (Tensors given are wrapped in ``Parameter``);
    insertion order is kept, and the keys are the ``state_dict`` keys. PyTorch's ``nn.ParameterDict``.

    >>> ps = mg.nn.ParameterDict({"scale": mg.ones(3)})
    >>> list(ps.state_dict())
    ['scale']
    """

    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str):
        if key not in self.__dict__["_param_names"]:
            raise KeyError(f"ParameterDict: no parameter {key!r} (keys: {self.keys()})")
        return self.__dict__[key]

    def __setitem__(self, key: str, value) -> None:
        if isinstance(value, Parameter):
            p = value
        elif isinstance(value, (Tensor, np.ndarray)) or hasattr(value, "__cuda_array_interface__"):
            p = Parameter(value)
        else:
            raise TypeError(f"ParameterDict: {key!r} must be a Parameter or a Tensor, got {type(value).__name__}")
        self.register_parameter(key, p)

    def __delitem__(self, key: str) -> None:
        self[key]  # noqa: B018 - the KeyError naming the keys
        delattr(self, key)

    def __len__(self):
        return len(self.__dict__["_param_names"])

    def __iter__(self):
        return iter(self.keys())

    def __contains__(self, key):
        return key in self.__dict__["_param_names"]

    def keys(self):
        """The keys, in insertion order."""
        return list(self.__dict__["_param_names"])

    def values(self):
        """The parameters, in insertion order."""
        return [self.__dict__[k] for k in self.keys()]

    def items(self):
        """(key, parameter) pairs, in insertion order."""
        return [(k, self.__dict__[k]) for k in self.keys()]

    def pop(self, key: str):
        """Remove ``key`` and return its parameter."""
        p = self[key]
        del self[key]
        return p

    def update(self, parameters) -> None:
        """Add (or replace) parameters from a dict, a ParameterDict or (key, value) pairs."""
        items = parameters.items() if hasattr(parameters, "items") else parameters
        for k, v in items:
            self[k] = v

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ParameterDict is a container: use its parameters in your forward()")

    def extra_repr(self):
        return "\n".join(f"({k}): Parameter of shape {p.shape}, dtype {p.dtype}" for k, p in self.items())


class GroupNorm(Module):
    """Normalise (N, C, *) over ``num_groups`` groups of channels, then scale by ``weight`` (ones,
    (C,)) and shift by ``bias`` (zeros, (C,)) when ``affine``; PyTorch's ``nn.GroupNorm``."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True,
                 dtype=None, device=None):
        super().__init__()
        self.num_groups = positive_int(num_groups, "GroupNorm", "num_groups")
        self.num_channels = positive_int(num_channels, "GroupNorm", "num_channels")
        if self.num_channels % self.num_groups:
            raise ValueError(f"GroupNorm: num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self.eps = float(eps)
        self.affine = bool(affine)
        if affine:
            self.weight = Parameter(_creation.ones(self.num_channels, dtype=dtype, device=device))
            self.bias = Parameter(_creation.zeros(self.num_channels, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, x):
        return F.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"


class RMSNorm(Module):
    """``x / sqrt(mean(x^2) + eps) * weight`` over the trailing ``normalized_shape`` dims (``weight``
    ones; ``eps=None``: the dtype's machine epsilon); PyTorch's ``nn.RMSNorm``."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine: bool = True, dtype=None, device=None):
        super().__init__()
        if isinstance(normalized_shape, str) or not hasattr(normalized_shape, "__iter__"):
            self.normalized_shape = (positive_int(normalized_shape, "RMSNorm", "normalized_shape"),)
        else:
            self.normalized_shape = tuple(positive_int(s, "RMSNorm", f"normalized_shape[{i}]")
                                          for i, s in enumerate(normalized_shape))
        self.eps = None if eps is None else float(eps)
        self.elementwise_affine = bool(elementwise_affine)
        if elementwise_affine:
            self.weight = Parameter(_creation.ones(self.normalized_shape, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class ZeroPad2d(Module):
    """Pads the last two dims with zeros: ``padding`` an int or (left, right, top, bottom), a
    negative side cropping instead; PyTorch's ``nn.ZeroPad2d``."""

    def __init__(self, padding):
        super().__init__()
        if isinstance(padding, (int, np.integer)) and not isinstance(padding, bool):
            padding = (int(padding),) * 4
        padding = tuple(int(p) for p in padding)
        if len(padding) != 4:
            raise ValueError(f"ZeroPad2d: padding must be an int or 4 ints (left, right, top, bottom), got {padding}")
        self.padding = padding

    def forward(self, x):
        left, right, top, bottom = self.padding
        if min(self.padding) < 0:  # a negative side crops, as in PyTorch
            h, w = x.shape[-2], x.shape[-1]
            x = x[..., max(-top, 0):h - max(-bottom, 0), max(-left, 0):w - max(-right, 0)]
        return F.pad(x, tuple(max(p, 0) for p in self.padding), "constant", 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class PixelShuffle(Module):
    """(*, C r^2, H, W) -> (*, C, H r, W r) with ``r = upscale_factor``; PyTorch's ``nn.PixelShuffle``.

    >>> mg.nn.PixelShuffle(2)(mg.ones(1, 8, 3, 3)).shape
    (1, 2, 6, 6)
    """

    def __init__(self, upscale_factor: int):
        super().__init__()
        self.upscale_factor = positive_int(upscale_factor, "PixelShuffle", "upscale_factor")

    def forward(self, x):
        r = self.upscale_factor
        if x.ndim < 3 or x.shape[-3] % (r * r):
            raise ValueError(f"PixelShuffle: input of shape {x.shape} needs at least 3 dims and a channel count "
                             f"divisible by upscale_factor^2 = {r * r}")
        *lead, c, h, w = x.shape
        k = len(lead)
        y = x.reshape(*lead, c // (r * r), r, r, h, w)
        y = y.permute(*range(k), k, k + 3, k + 1, k + 4, k + 2)
        return y.reshape(*lead, c // (r * r), h * r, w * r)

    def extra_repr(self):
        return f"upscale_factor={self.upscale_factor}"


class EmbeddingBag(Module):
    """Sums, means or maxima of bags of embeddings, PyTorch's ``nn.EmbeddingBag``: ``weight``
    (num_embeddings, embedding_dim) from N(0, 1), the ``padding_idx`` row zeroed. Called with
    (B, L) indices (each row a bag) or 1-D indices and ``offsets`` (see ``F.embedding_bag``).

    >>> bag = mg.nn.EmbeddingBag(10, 3, mode="sum")
    >>> bag(mg.tensor([1, 2, 4, 5, 4]), mg.tensor([0, 2])).shape
    (2, 3)
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm=None, norm_type: float = 2.0,
                 scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False, _weight=None,
                 include_last_offset: bool = False, padding_idx=None, device=None, dtype=None):
        super().__init__()
        op = "EmbeddingBag"
        self.num_embeddings = positive_int(num_embeddings, op, "num_embeddings")
        self.embedding_dim = positive_int(embedding_dim, op, "embedding_dim")
        if mode not in ("sum", "mean", "max"):
            raise ValueError(f"{op}: mode must be 'sum', 'mean' or 'max', got {mode!r}")
        if max_norm is not None or scale_grad_by_freq or sparse:
            raise NotImplementedError(f"{op}: max_norm, scale_grad_by_freq and sparse=True are not implemented")
        if padding_idx is not None:
            if not -self.num_embeddings <= int(padding_idx) < self.num_embeddings:
                raise ValueError(f"{op}: padding_idx {padding_idx} is out of range for {num_embeddings} embeddings")
            padding_idx = int(padding_idx) % self.num_embeddings
        self.mode = mode
        self.include_last_offset = bool(include_last_offset)
        self.padding_idx = padding_idx
        self.max_norm, self.norm_type, self.scale_grad_by_freq, self.sparse = max_norm, norm_type, False, False
        if _weight is None:
            self.weight = Parameter(_creation.empty(self.num_embeddings, self.embedding_dim, dtype=dtype,
                                                    device=device))
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (self.num_embeddings, self.embedding_dim):
                raise ValueError(f"{op}: _weight must have shape ({num_embeddings}, {embedding_dim}), "
                                 f"got {tuple(_weight.shape)}")
            self.weight = Parameter(_weight)

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            self.weight.data[self.padding_idx] = 0

    def forward(self, input, offsets=None, per_sample_weights=None):  # noqa: A002 - PyTorch's name
        return F.embedding_bag(input, self.weight, offsets, mode=self.mode, per_sample_weights=per_sample_weights,
                               include_last_offset=self.include_last_offset, padding_idx=self.padding_idx)

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}, mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s
