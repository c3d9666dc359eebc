"""Layer constructors check their sizes: a ValueError naming the layer and the argument (issue 17).

Before, ``nn.Linear(-1, 3)`` failed deep inside with NumPy's "negative dimensions are not allowed".
"""
import re

import numpy as np
import pytest

import minigrad as mg

nn = mg.nn


@pytest.mark.parametrize("make, layer, arg", [
    (lambda v: nn.Linear(v, 3), "Linear", "in_features"),
    (lambda v: nn.Linear(3, v), "Linear", "out_features"),
    (lambda v: nn.Embedding(v, 3), "Embedding", "num_embeddings"),
    (lambda v: nn.Embedding(3, v), "Embedding", "embedding_dim"),
    (lambda v: nn.LayerNorm(v), "LayerNorm", "normalized_shape"),
    (lambda v: nn.LayerNorm((4, v)), "LayerNorm", "normalized_shape[1]"),
])
@pytest.mark.parametrize("bad", [-1, 0, 2.5, True, "3", None])
def test_bad_sizes_name_the_layer_and_the_argument(make, layer, arg, bad):
    with pytest.raises(ValueError, match="^" + re.escape(f"{layer}: {arg} must be a positive int, got ")):
        make(bad)


def test_linear_minus_one_is_a_clear_error():
    with pytest.raises(ValueError, match=r"Linear: in_features must be a positive int, got -1"):
        nn.Linear(-1, 3)


def test_good_sizes_still_build():
    assert nn.Linear(np.int64(3), 2).weight.shape == (2, 3)
    assert nn.Embedding(5, np.int32(2)).weight.shape == (5, 2)
    assert nn.LayerNorm(4).normalized_shape == (4,)
    assert nn.LayerNorm([2, np.int64(3)]).normalized_shape == (2, 3)
    assert nn.LayerNorm(()).normalized_shape == ()
    assert isinstance(nn.Linear(np.int64(3), 2).in_features, int)


@pytest.mark.parametrize("make", [lambda: mg.nn.Conv2d(-1, 3, 3), lambda: mg.nn.Conv2d(3, 0, 3),
                                  lambda: mg.nn.Conv1d(2.5, 3, 3), lambda: mg.nn.Conv2d(4, 4, 3, groups=0),
                                  lambda: mg.nn.BatchNorm1d(-2), lambda: mg.nn.BatchNorm2d(True)])
def test_conv_and_batch_norm_layers_check_their_sizes(make):
    with pytest.raises(ValueError, match=r"^(Conv1d|Conv2d|BatchNorm1d|BatchNorm2d): \w+ must be a positive int"):
        make()
