"""Masks, masked softmax and multi-dimensional attention shared by every family.

Remote-code safe: imports torch only. Conventions: ``mask`` is a bool ``[B, n]`` tensor, True on real tokens;
attention tensors are laid out ``[batch, query j, key i, ...]`` (DiSAN spec §1.2: i is the attended key, j the query).
"""

from __future__ import annotations

import torch
from torch import nn

DIRECTIONS = ("fw", "bw", "diag", "all")


def direction_mask(n: int, direction: str, device=None) -> torch.Tensor:
    """Bool ``[n_query, n_key]``: which keys i a query j may see (DiSAN Eq. 16-18, Distance-SAN §4.2.2).

    ``fw``: i < j (Eq. 17), ``bw``: i > j (Eq. 18), ``diag``: i != j (Eq. 16), ``all``: every key.
    """
    j = torch.arange(n, device=device)[:, None]
    i = torch.arange(n, device=device)[None, :]
    if direction == "fw":
        return i < j
    if direction == "bw":
        return i > j
    if direction == "diag":
        return i != j
    if direction == "all":
        return torch.ones(n, n, dtype=torch.bool, device=device)
    raise ValueError(f"unknown attention direction {direction!r}; expected one of {DIRECTIONS}")


def allowed_keys(mask: torch.Tensor, direction: str) -> torch.Tensor:
    """Bool ``[B, n_query, n_key]``: direction mask AND key padding (DiSAN spec §1.3)."""
    return direction_mask(mask.shape[1], direction, mask.device)[None] & mask[:, None, :]


def masked_softmax(logits: torch.Tensor, allowed: torch.Tensor, dim: int) -> torch.Tensor:
    """Softmax over ``dim`` restricted to ``allowed`` (broadcastable bool); rows with no allowed entry give exact zeros.

    Fills with the dtype's most negative finite value (not -inf, which overflows in fp16 and gives NaN on empty rows),
    then multiplies by the mask so that empty rows are 0 in forward and backward (DiSAN spec §1.4).
    """
    allowed = allowed.expand_as(logits)
    filled = logits.masked_fill(~allowed, torch.finfo(logits.dtype).min)
    return torch.softmax(filled, dim=dim) * allowed.to(logits.dtype)


def token2token_attention_reference(
    query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, mask: torch.Tensor, direction: str, c: float = 5.0
) -> torch.Tensor:
    """Masked multi-dimensional token2token attention, written directly (DiSAN Eq. 15 + Eq. 11).

    ``query`` = W2 h_j + b1, ``key`` = W1 h_i, ``value`` = h_i, all ``[B, n, d]``; ``mask`` bool ``[B, n]``.
    Returns s ``[B, n, d]`` with s_j = sum_i P_ji ⊙ h_i, P softmax over allowed keys i, per feature.
    Materialises several ``[B, n, n, d]`` tensors: the reference the blocked kernel is tested against.
    """
    allowed = allowed_keys(mask, direction).unsqueeze(-1)  # [B, n_q, n_k, 1]
    logits = c * torch.tanh((query.unsqueeze(2) + key.unsqueeze(1)) / c)  # Eq. 15, [B, n_q, n_k, d]
    probs = masked_softmax(logits, allowed, dim=2)  # Eq. 11: softmax over keys, per feature
    return torch.einsum("bjid,bid->bjd", probs, value)


class MultiDimSource2Token(nn.Module):
    """Multi-dimensional source2token attention (DiSAN Eq. 12-13; Distance-SAN Eq. 14-16).

    ``a = W·drop(act(W1·drop(u) + b1)) + b``, softmax over tokens per feature, ``s = Σ_i P_i ⊙ u_i``.
    ``layer_norm=True`` puts a LayerNorm after each linear map (Distance-SAN §5.2; before the activation);
    ``norm_logits`` (defaults to ``layer_norm``) sets the one on the logits ``a`` separately (Distance-SAN spec B8).
    """

    def __init__(self, dim: int, act: str = "elu", dropout: float = 0.0, layer_norm: bool = False, eps: float = 1e-6,
                 norm_logits: bool | None = None):
        super().__init__()
        self.l1 = nn.Linear(dim, dim)  # W^(1), b^(1)
        self.l2 = nn.Linear(dim, dim)  # W, b
        self.norm1 = nn.LayerNorm(dim, eps=eps) if layer_norm else nn.Identity()
        norm_logits = layer_norm if norm_logits is None else norm_logits
        self.norm2 = nn.LayerNorm(dim, eps=eps) if norm_logits else nn.Identity()
        self.act = activation(act)
        self.drop = nn.Dropout(dropout)

    def forward(self, u: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:  # u [B, n, D] -> [B, D]
        a = self.norm2(self.l2(self.drop(self.act(self.norm1(self.l1(self.drop(u)))))))  # Eq. 12
        probs = masked_softmax(a, mask.unsqueeze(-1), dim=1)  # Eq. 13: over tokens, per feature
        return (probs * u).sum(1)  # values are the un-dropped u


_ACTIVATIONS = {
    "elu": nn.ELU,
    "relu": nn.ReLU,
    "tanh": nn.Tanh,
    "sigmoid": nn.Sigmoid,
    "leaky_relu": nn.LeakyReLU,
    "identity": nn.Identity,
}


def activation(name: str) -> nn.Module:
    """An activation module by name (``elu``, ``relu``, ``leaky_relu`` (slope 0.01), ``tanh``, ``sigmoid``)."""
    try:
        return _ACTIVATIONS[name]()
    except KeyError:
        raise ValueError(f"unknown activation {name!r}; expected one of {sorted(_ACTIVATIONS)}") from None


__all__ = [
    "DIRECTIONS",
    "direction_mask",
    "allowed_keys",
    "masked_softmax",
    "token2token_attention_reference",
    "MultiDimSource2Token",
    "activation",
]
