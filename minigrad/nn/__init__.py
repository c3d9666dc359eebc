"""Neural-network building blocks: ``Module``, ``Parameter`` and layers.

>>> model = mg.nn.Sequential(mg.nn.Linear(64, 128), mg.nn.Tanh(), mg.nn.Linear(128, 10))
>>> loss = mg.nn.functional.cross_entropy(model(x), y)
>>> loss.backward()

Layers keep PyTorch's parameter layout and default initialisation, so a
``state_dict`` moves between the two by name (``Linear.weight`` is (out, in)).
"""
from __future__ import annotations

from . import functional, init, utils
from .module import Module, Parameter, StateDictError  # module.py: Module, Parameter, state dicts
from .layers import (  # layers.py: the containers and the basic layers
    Dropout, Embedding, Flatten, Identity, LayerNorm, Linear, ModuleDict, ModuleList, ParameterList, Sequential,
    GroupNorm, ParameterDict, PixelShuffle, RMSNorm, Unflatten, ZeroPad2d,
    EmbeddingBag,
)
from .layers_activation import (  # layers_activation.py: the activation layers (their functions: activations.py)
    ELU, GELU, LeakyReLU, ReLU, Sigmoid, SiLU, Softmax, Softplus, Tanh,
    Hardtanh, LogSoftmax, Mish,
)
from .layers_conv import (  # layers_conv.py: convolution, pooling and batch norm layers
    AdaptiveAvgPool2d, AvgPool1d, AvgPool2d, BatchNorm1d, BatchNorm2d, Conv1d, Conv2d, MaxPool1d, MaxPool2d,
    ConvTranspose2d,
)
from .layers_recurrent import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell  # layers_recurrent.py: RNN, LSTM, GRU
from .upsample import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d  # upsample.py: F.interpolate's layers
from .layers_attention import (  # layers_attention.py: multi-head attention and the Transformer layers
    MultiheadAttention, Transformer, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder,
    TransformerEncoderLayer,
)
from .losses import (  # losses.py: the loss modules (their functions are in functional)
    BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, KLDivLoss, L1Loss, MSELoss, NLLLoss, SmoothL1Loss,
    CosineEmbeddingLoss, MarginRankingLoss, TripletMarginLoss,
)

__all__ = [
    "Parameter", "Module", "Linear", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "Identity",
    "Flatten", "ReLU", "Tanh", "Sigmoid", "LeakyReLU", "ELU", "Softplus", "Embedding", "Dropout", "LayerNorm",
    "StateDictError", "functional", "init",
    "CrossEntropyLoss", "NLLLoss", "MSELoss", "L1Loss", "BCELoss", "BCEWithLogitsLoss", "HuberLoss", "SmoothL1Loss",
    "KLDivLoss",
    "Conv1d", "Conv2d", "MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool2d", "BatchNorm1d",
    "BatchNorm2d", "GELU", "SiLU", "Softmax", "utils",
    "LogSoftmax", "Mish", "Hardtanh", "Unflatten", "ParameterDict", "GroupNorm", "RMSNorm", "ZeroPad2d",
    "PixelShuffle", "CosineEmbeddingLoss", "MarginRankingLoss", "TripletMarginLoss",
    "RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell",
    "MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder", "TransformerDecoderLayer",
    "TransformerDecoder", "Transformer",
]
__all__ += ["ConvTranspose2d", "EmbeddingBag", "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]
