"""PyTorch's attention layers: ``MultiheadAttention``, ``TransformerEncoderLayer``, ``TransformerEncoder``,
``TransformerDecoderLayer``, ``TransformerDecoder`` and ``Transformer``.

Each keeps PyTorch's parameter names, ``state_dict`` keys, initialisation and mask semantics, so a
``state_dict`` moves between the two by name. They are made of recorded ops (``F.linear``,
``F.scaled_dot_product_attention``, softmax, layer norm), so gradients of any order flow in both modes.
"""
from __future__ import annotations

import copy
import math

import numpy as np

from .. import creation as _creation
from ..ops import elementwise as _ew
from ..ops import shape as _shape
from ..tensor import Tensor, get_default_dtype
from . import functional as F
from . import init
from ._common import positive_int
from .layers import Dropout, LayerNorm, Linear, ModuleList
from .module import Module, Parameter


def _float_mask(mask, dtype, device, name):
    """PyTorch's canonical mask: a bool mask becomes 0 where False and -inf where True (masked out);
    a float mask is returned as it is (it is added to the scores). An array or a list becomes a
    Tensor on the scores' ``device``."""
    if mask is None:
        return None
    m = mask if isinstance(mask, Tensor) else Tensor(mask if hasattr(mask, "dtype") else np.asarray(mask),
                                                     device=device)
    kind = m.data.dtype.kind
    if kind == "b":
        return _ew.where(m, _creation.full((), -math.inf, dtype=dtype, device=m.device),
                         _creation.zeros((), dtype=dtype, device=m.device))
    if kind != "f":
        raise TypeError(f"MultiheadAttention: {name} must be a bool or float mask, got dtype {m.data.dtype}")
    return m


class MultiheadAttention(Module):
    """PyTorch's ``nn.MultiheadAttention``: ``out_proj(concat_h softmax(q_h k_h^T / sqrt(d) + mask) v_h)``.

    Inputs are (L, N, E) (``batch_first=True``: (N, L, E)) or unbatched (L, E). Masks: a bool
    ``attn_mask`` (L, S) or (N * num_heads, L, S), or ``key_padding_mask`` (N, S), is True where a
    key is masked out; a float mask is added to the scores. ``forward`` returns
    ``(attn_output, attn_weights)``, the weights (N, L, S) averaged over the heads (or
    (N, num_heads, L, S) with ``average_attn_weights=False``), None with ``need_weights=False``.

    >>> mha = mg.nn.MultiheadAttention(8, 2, batch_first=True)
    >>> out, w = mha(mg.ones(3, 5, 8), mg.ones(3, 6, 8), mg.ones(3, 6, 8))
    >>> out.shape, w.shape
    ((3, 5, 8), (3, 5, 6))
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,  # noqa: PLR0913
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim=None, vdim=None,
                 batch_first: bool = False, device=None, dtype=None):
        super().__init__()
        self.embed_dim = positive_int(embed_dim, "MultiheadAttention", "embed_dim")
        self.num_heads = positive_int(num_heads, "MultiheadAttention", "num_heads")
        if self.embed_dim % self.num_heads:
            raise ValueError(f"MultiheadAttention: embed_dim ({embed_dim}) must be divisible by num_heads ({num_heads})")
        if not 0.0 <= dropout <= 1.0:
            raise ValueError(f"MultiheadAttention: dropout must be in [0, 1], got {dropout}")
        self.kdim = self.embed_dim if kdim is None else positive_int(kdim, "MultiheadAttention", "kdim")
        self.vdim = self.embed_dim if vdim is None else positive_int(vdim, "MultiheadAttention", "vdim")
        self._qkv_same_embed_dim = self.kdim == self.embed_dim and self.vdim == self.embed_dim
        self.dropout = float(dropout)
        self.batch_first = bool(batch_first)
        self.head_dim = self.embed_dim // self.num_heads
        E, kw = self.embed_dim, dict(dtype=dtype, device=device)
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(_creation.empty(3 * E, E, **kw))
            for n in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(n, None)
        else:
            self.q_proj_weight = Parameter(_creation.empty(E, E, **kw))
            self.k_proj_weight = Parameter(_creation.empty(E, self.kdim, **kw))
            self.v_proj_weight = Parameter(_creation.empty(E, self.vdim, **kw))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(_creation.empty(3 * E, **kw))
        else:
            self.register_parameter("in_proj_bias", None)
        # PyTorch's NonDynamicallyQuantizableLinear: a Linear (its default weight init), zero bias below
        self.out_proj = Linear(E, E, bias=bias, **kw)
        if add_bias_kv:  # one more key and value, learnt, appended to every sequence
            self.bias_k = Parameter(_creation.empty(1, 1, E, **kw))
            self.bias_v = Parameter(_creation.empty(1, 1, E, **kw))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = bool(add_zero_attn)
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def _projections(self):
        E = self.embed_dim
        if self._qkv_same_embed_dim:
            w = self.in_proj_weight
            ws = (w[:E], w[E:2 * E], w[2 * E:])
        else:
            ws = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        b = self.in_proj_bias
        bs = (None, None, None) if b is None else (b[:E], b[E:2 * E], b[2 * E:])
        return ws, bs

    def forward(self, query, key, value, key_padding_mask=None, need_weights: bool = True,  # noqa: PLR0913
                attn_mask=None, average_attn_weights: bool = True, is_causal: bool = False):
        batched = query.ndim == 3
        if query.ndim not in (2, 3) or key.ndim != query.ndim or value.ndim != query.ndim:
            raise ValueError(f"MultiheadAttention: query, key and value must all be 3-D (batched) or 2-D "
                             f"(unbatched), got {query.shape}, {key.shape}, {value.shape}")
        if is_causal and attn_mask is None:
            raise ValueError("MultiheadAttention: is_causal=True is a hint that attn_mask is the causal mask; "
                             "pass attn_mask as well (PyTorch requires it too)")
        if not batched:  # one sequence: a batch of one
            query, key, value = (t.reshape(t.shape[0], 1, t.shape[1]) for t in (query, key, value))
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.reshape(1, -1) if hasattr(key_padding_mask, "reshape") \
                    else np.asarray(key_padding_mask).reshape(1, -1)
        elif self.batch_first:  # work in (L, N, E), PyTorch's layout
            query, key, value = (t.swapaxes(0, 1) for t in (query, key, value))
        L, N, E = query.shape
        S, H, d = key.shape[0], self.num_heads, self.head_dim
        if E != self.embed_dim:
            raise ValueError(f"MultiheadAttention: query's embedding size {E} is not embed_dim {self.embed_dim}")
        if key.shape[:2] != value.shape[:2] or key.shape[1] != N:
            raise ValueError(f"MultiheadAttention: key {key.shape} and value {value.shape} do not fit query "
                             f"{query.shape} (sequence-first shapes)")
        (wq, wk, wv), (bq, bk, bv) = self._projections()
        mask = self._merged_mask(attn_mask, key_padding_mask, query.data.dtype, query.device, N, L, S)
        k, v = F.linear(key, wk, bk), F.linear(value, wv, bv)
        extra = 0  # keys appended (bias_k, a zero key), never masked
        if self.bias_k is not None:
            k = _shape.concatenate([k, self.bias_k.expand(1, N, E)], axis=0)
            v = _shape.concatenate([v, self.bias_v.expand(1, N, E)], axis=0)
            extra += 1
        # (L, N, E) -> (N, H, L, d)
        q = F.linear(query, wq, bq).reshape(L, N, H, d).permute(1, 2, 0, 3)
        k = k.reshape(S + extra, N, H, d).permute(1, 2, 0, 3)
        v = v.reshape(S + extra, N, H, d).permute(1, 2, 0, 3)
        if self.add_zero_attn:
            zero = _creation.zeros(N, H, 1, d, dtype=k.data.dtype, device=k.device)
            k, v = _shape.concatenate([k, zero], axis=2), _shape.concatenate([v, zero], axis=2)
            extra += 1
        if mask is not None and extra:
            pad = _creation.zeros(*mask.shape[:-1], extra, dtype=mask.data.dtype, device=mask.device)
            mask = _shape.concatenate([mask, pad], axis=-1)
        S += extra
        p = self.dropout if self.training else 0.0
        if need_weights:
            scores = (q * (1.0 / math.sqrt(d))) @ k.swapaxes(-2, -1)
            if mask is not None:
                scores = scores + mask
            w = scores.softmax(dim=-1)
            if p > 0.0:  # the weights returned are the dropped-out ones, as in PyTorch
                w = F.dropout(w, p, True)
            out = w @ v
        else:
            if mask is not None:
                mask = mask.expand(N, H, L, S)
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
        out = F.linear(out.permute(2, 0, 1, 3).reshape(L, N, E), self.out_proj.weight, self.out_proj.bias)
        if not batched:
            out = out.reshape(L, E)
        elif self.batch_first:
            out = out.swapaxes(0, 1)
        if not need_weights:
            return out, None
        if average_attn_weights:
            w = w.mean(axis=1)
        if not batched:
            w = w[0]
        return out, w

    def _merged_mask(self, attn_mask, key_padding_mask, dtype, device, N, L, S):  # noqa: PLR0913
        """attn_mask and key_padding_mask as one float mask that broadcasts to (N, H, L, S)."""
        H = self.num_heads
        am = _float_mask(attn_mask, dtype, device, "attn_mask")
        kpm = _float_mask(key_padding_mask, dtype, device, "key_padding_mask")
        if am is not None:
            if am.ndim == 2 and tuple(am.shape) == (L, S):
                am = am.reshape(1, 1, L, S)
            elif am.ndim == 3 and tuple(am.shape) == (N * H, L, S):
                am = am.reshape(N, H, L, S)
            else:
                raise ValueError(f"MultiheadAttention: attn_mask of shape {tuple(am.shape)} should be ({L}, {S}) "
                                 f"or ({N * H}, {L}, {S})")
        if kpm is not None:
            if tuple(kpm.shape) != (N, S):
                raise ValueError(f"MultiheadAttention: key_padding_mask of shape {tuple(kpm.shape)} should be "
                                 f"({N}, {S})")
            kpm = kpm.reshape(N, 1, 1, S)
            am = kpm if am is None else am + kpm
        return am

    def extra_repr(self):
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, dropout={self.dropout}, " \
               f"batch_first={self.batch_first}"


def _activation(activation, who):
    if isinstance(activation, str):
        if activation == "relu":
            return F.relu
        if activation == "gelu":
            return F.gelu
        raise ValueError(f"{who}: activation should be 'relu' or 'gelu' or a callable, not {activation!r}")
    if not callable(activation):
        raise TypeError(f"{who}: activation should be 'relu' or 'gelu' or a callable, got {type(activation).__name__}")
    return activation


class TransformerEncoderLayer(Module):
    """PyTorch's ``nn.TransformerEncoderLayer``: self-attention then a feed-forward block, each with
    a residual connection and a LayerNorm (after it, or before it with ``norm_first=True``).

    >>> layer = mg.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True)
    >>> layer(mg.ones(3, 5, 8)).shape
    (3, 5, 8)
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,  # noqa: PLR0913
                 activation="relu", layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None):
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = bool(norm_first)
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = _activation(activation, "TransformerEncoderLayer")
        self.batch_first = bool(batch_first)

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal: bool = False):
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerDecoderLayer(Module):
    """PyTorch's ``nn.TransformerDecoderLayer``: self-attention, attention over ``memory``, then a
    feed-forward block, each with a residual connection and a LayerNorm (before it with ``norm_first``).

    >>> layer = mg.nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, batch_first=True)
    >>> layer(mg.ones(3, 5, 8), mg.ones(3, 7, 8)).shape
    (3, 5, 8)
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,  # noqa: PLR0913
                 activation="relu", layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None):
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **kw)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                                 batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = bool(norm_first)
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _activation(activation, "TransformerDecoderLayer")
        self.batch_first = bool(batch_first)

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,  # noqa: PLR0913
                memory_key_padding_mask=None, tgt_is_causal: bool = False, memory_is_causal: bool = False):
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal):
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                                need_weights=False, is_causal=is_causal)[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))


def _clones(layer, n, who):
    n = positive_int(n, who, "num_layers")
    return ModuleList([copy.deepcopy(layer) for _ in range(n)])


class TransformerEncoder(Module):
    """``num_layers`` deep copies of ``encoder_layer`` (``layers.0``, ``layers.1``, ...), then
    ``norm`` if given; PyTorch's ``nn.TransformerEncoder`` (``enable_nested_tensor`` and
    ``mask_check`` are accepted and have no effect: there is no nested-tensor fast path)."""

    def __init__(self, encoder_layer, num_layers: int, norm=None, enable_nested_tensor: bool = True,
                 mask_check: bool = True):
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers, "TransformerEncoder")
        self.num_layers = len(self.layers)
        self.norm = norm

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask, is_causal=bool(is_causal))
        return self.norm(x) if self.norm is not None else x


class TransformerDecoder(Module):
    """``num_layers`` deep copies of ``decoder_layer`` (``layers.0``, ...), then ``norm`` if given;
    PyTorch's ``nn.TransformerDecoder``."""

    def __init__(self, decoder_layer, num_layers: int, norm=None):
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers, "TransformerDecoder")
        self.num_layers = len(self.layers)
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,  # noqa: PLR0913
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal: bool = False):
        x = tgt
        for layer in self.layers:
            x = layer(x, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                      tgt_key_padding_mask=tgt_key_padding_mask, memory_key_padding_mask=memory_key_padding_mask,
                      tgt_is_causal=bool(tgt_is_causal), memory_is_causal=memory_is_causal)
        return self.norm(x) if self.norm is not None else x


class Transformer(Module):
    """PyTorch's ``nn.Transformer``: an encoder (``num_encoder_layers`` layers and a final LayerNorm)
    and a decoder (likewise); every parameter of two or more dims is re-initialised xavier-uniform.

    >>> model = mg.nn.Transformer(8, 2, 1, 1, dim_feedforward=16, batch_first=True)
    >>> tgt_mask = mg.nn.Transformer.generate_square_subsequent_mask(4)
    >>> model(mg.ones(3, 5, 8), mg.ones(3, 4, 8), tgt_mask=tgt_mask).shape
    (3, 4, 8)
    """

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,  # noqa: PLR0913
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation="relu", custom_encoder=None, custom_decoder=None, layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True, device=None, dtype=None):
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        common = dict(dim_feedforward=dim_feedforward, dropout=dropout, activation=activation,
                      layer_norm_eps=layer_norm_eps, batch_first=batch_first, norm_first=norm_first, bias=bias, **kw)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(TransformerEncoderLayer(d_model, nhead, **common), num_encoder_layers,
                                              LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(TransformerDecoderLayer(d_model, nhead, **common), num_decoder_layers,
                                              LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = bool(batch_first)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,  # noqa: PLR0913
                src_key_padding_mask=None, tgt_key_padding_mask=None, memory_key_padding_mask=None,
                src_is_causal=None, tgt_is_causal=None, memory_is_causal: bool = False):
        batch_axis = 0 if self.batch_first else 1
        if src.ndim == 3 and tgt.ndim == 3 and src.shape[batch_axis] != tgt.shape[batch_axis]:
            raise ValueError(f"Transformer: the batch sizes of src {src.shape} and tgt {tgt.shape} differ "
                             f"(batch_first={self.batch_first})")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise ValueError(f"Transformer: src {src.shape} and tgt {tgt.shape} must end with d_model={self.d_model}")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None):
        """The (sz, sz) causal float mask: ``-inf`` above the diagonal (future positions), 0 elsewhere."""
        dt = np.dtype(dtype) if dtype is not None else np.dtype(get_default_dtype())
        return Tensor(np.triu(np.full((sz, sz), -np.inf, dtype=dt), k=1), device=device)
