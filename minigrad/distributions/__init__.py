"""``mg.distributions``: PyTorch's ``torch.distributions`` for the common cases, built from minigrad's
differentiable ops: ``Normal``, ``Uniform`` (both with a reparameterised ``rsample``),
``Categorical``, ``Bernoulli``, and ``kl_divergence`` between them. Draws come from
``mg.manual_seed``'s generator.

>>> d = mg.distributions.Normal(mg.tensor([0.0, 1.0]), mg.tensor([1.0, 2.0]))
>>> d.log_prob(mg.tensor([0.5, 0.5])).shape
(2,)
"""
from __future__ import annotations

from . import constraints
from .bernoulli import Bernoulli
from .categorical import Categorical
from .distribution import Distribution
from .kl import kl_divergence, register_kl
from .normal import Normal
from .uniform import Uniform

__all__ = ["Distribution", "Normal", "Uniform", "Categorical", "Bernoulli", "kl_divergence", "register_kl",
           "constraints"]
