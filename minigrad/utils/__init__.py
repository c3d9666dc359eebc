"""Utilities with PyTorch's names: ``mg.utils.data`` (Dataset, TensorDataset, DataLoader,
random_split).

>>> from minigrad.utils.data import DataLoader, TensorDataset
"""
from __future__ import annotations

from . import data

__all__ = ["data"]
