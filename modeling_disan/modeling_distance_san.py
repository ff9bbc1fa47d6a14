"""Distance-based Self-Attention Network (Im & Cho, arXiv 1712.02047), as a transformers model.

Equation numbers refer to the paper (Eq. 5-16); the spec is Distance-SAN spec §1 (forward), §2 (LN, dropout, init),
§6 (parameter counts) and §7 (ambiguities B1-B14).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .attention import MultiDimSource2Token, allowed_keys, masked_softmax
from .configuration_distance_san import DistanceSANConfig
from .heads import SentenceClassifierMixin
from .modeling_common import SentenceEncoderModel, SentenceEncoderPreTrainedModel, WordEmbedding


def distance_mask(n: int, alpha: float, device=None, dtype=torch.float32) -> torch.Tensor:
    """α·M_dis ``[n, n]``: −α·|i − j| (Eq. 7), the same constant for every head and direction (spec B5)."""
    pos = torch.arange(n, device=device)
    return (pos[:, None] - pos[None, :]).abs().to(dtype) * -float(alpha)


def block_allowed_keys(mask: torch.Tensor, direction: str, keep_self: bool = False) -> torch.Tensor:
    """Bool ``[B, n_query, n_key]``: M_dir of Eq. 7 AND key padding; ``keep_self`` adds the diagonal back."""
    allowed = allowed_keys(mask, direction)
    if keep_self:
        eye = torch.eye(mask.shape[1], dtype=torch.bool, device=mask.device)
        allowed = allowed | (eye[None] & mask[:, None, :])
    return allowed


def layer_norm(config: DistanceSANConfig, dim: int, enabled: bool = True) -> nn.Module:
    return nn.LayerNorm(dim, eps=config.layer_norm_eps) if enabled else nn.Identity()


class DistanceMaskedMultiHeadAttention(nn.Module):
    """Masked multi-head attention with the distance mask (§4.2.2, Eq. 7-9); LN after each projection (B1)."""

    def __init__(self, config: DistanceSANConfig, direction: str, keep_self: bool):
        super().__init__()
        d, ln = config.embedding_dim, config.ln_on_projections
        self.direction, self.keep_self, self.num_heads = direction, keep_self, config.num_heads
        self.alpha = float(config.distance_alpha) if config.use_distance_mask else 0.0
        self.w_q = nn.Linear(d, d, bias=False)  # Eq. 8: W^Q_1..W^Q_h side by side (300 × 5·60)
        self.w_k = nn.Linear(d, d, bias=False)  # Eq. 8: W^K_i
        self.w_v = nn.Linear(d, d, bias=False)  # Eq. 8: W^V_i
        self.w_o = nn.Linear(d, d, bias=False)  # Eq. 8: W^O
        self.norm_q, self.norm_k = layer_norm(config, d, ln), layer_norm(config, d, ln)
        self.norm_v, self.norm_o = layer_norm(config, d, ln), layer_norm(config, d, ln)

    def attention_probs(self, q: torch.Tensor, k: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Eq. 7 weights ``[B, h, n_query, n_key]`` from per-head q, k ``[B, h, n, d_k]``; rows with no key are 0."""
        n = q.shape[2]
        logits = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])  # Eq. 5-7: Q Kᵀ / √d_k
        if self.alpha:
            logits = logits + distance_mask(n, self.alpha, q.device, logits.dtype)  # Eq. 7: + α·M_dis
        allowed = block_allowed_keys(mask, self.direction, self.keep_self)[:, None]  # Eq. 7: + M_dir, key pads
        return masked_softmax(logits, allowed, dim=-1)  # zero rows for the first fw / last bw word (B3)

    def forward(self, w: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:  # w [B, n, d] -> H [B, n, d]
        B, n, d = w.shape

        def split(t):  # [B, n, d] -> [B, h, n, d_k]
            return t.view(B, n, self.num_heads, d // self.num_heads).transpose(1, 2)

        q = split(self.norm_q(self.w_q(w)))  # Eq. 9: Q = K = V = w (no input projection)
        k = split(self.norm_k(self.w_k(w)))
        v = split(self.norm_v(self.w_v(w)))
        heads = self.attention_probs(q, k, mask) @ v  # Eq. 7: head_i, [B, h, n, d_k]
        return self.norm_o(self.w_o(heads.transpose(1, 2).reshape(B, n, d)))  # Eq. 8: concat(heads) W^O


class DirectionalBlock(nn.Module):
    """One direction (§4.2.2-4.2.4): masked MHA -> fusion gate -> position-wise FFN with residual and LN."""

    def __init__(self, config: DistanceSANConfig, direction: str, keep_self: bool):
        super().__init__()
        d, ln = config.embedding_dim, config.ln_on_projections
        self.attention = DistanceMaskedMultiHeadAttention(config, direction, keep_self)
        self.w_s = nn.Linear(d, d, bias=False)  # Eq. 11: W_S
        self.w_h = nn.Linear(d, d, bias=False)  # Eq. 11: W_H
        self.norm_s, self.norm_h = layer_norm(config, d, ln), layer_norm(config, d, ln)
        self.b_f = nn.Parameter(torch.zeros(d))  # Eq. 12: b_F
        self.ffn = nn.Sequential(nn.Linear(d, config.ffn_dim), nn.ReLU(), nn.Linear(config.ffn_dim, d))  # Eq. 13
        self.norm_out = layer_norm(config, d)  # LN(G + FFN(G)), always on (Eq. 13 + residual)
        self.drop = nn.Dropout(config.dropout)

    def forward(self, w: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:  # w [B, n, d] -> U_dir [B, n, d]
        h = self.drop(self.attention(w, mask))  # MHA output dropout (§5.2)
        s_f, h_f = self.norm_s(self.w_s(w)), self.norm_h(self.w_h(h))  # Eq. 10-11: S = w, H
        gate = torch.sigmoid(self.drop(s_f + h_f + self.b_f))  # Eq. 12: F
        g = gate * s_f + (1 - gate) * h_f  # Eq. 12: the gate mixes the projected S_F, H_F
        u = self.norm_out(g + self.drop(self.ffn(g)))  # Eq. 13 + residual dropout and LN (spec §1.4)
        return u * mask.unsqueeze(-1).to(u.dtype)  # pad rows zeroed


class DistanceSANEncoder(nn.Module):
    """Untied forward and backward blocks, U = [U_fw; U_bw], then multi-dim source2token + max pooling (§4.2.5)."""

    def __init__(self, config: DistanceSANConfig):
        super().__init__()
        if config.use_directional_mask:
            directions, keep_self = ("fw", "bw"), not config.disable_self_attention
        else:  # no M_dir: both blocks see the whole sentence (itself excluded unless asked)
            directions, keep_self = (("diag",) * 2 if config.disable_self_attention else ("all",) * 2), False
        self.fw = DirectionalBlock(config, directions[0], keep_self)
        self.bw = DirectionalBlock(config, directions[1], keep_self)
        self.pooling = list(config.pooling)
        self.s2t = MultiDimSource2Token(
            2 * config.embedding_dim, act="elu", dropout=0.0, layer_norm=config.ln_on_projections,
            eps=config.layer_norm_eps, norm_logits=config.ln_on_s2t_logits,
        )  # Eq. 14-16: ELU, LN before the ELU and on the logits (B1, B8); no dropout (B2)

    def forward(self, w: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        u = torch.cat([self.fw(w, mask), self.bw(w, mask)], dim=-1)  # U = [U_fw; U_bw], [B, n, 2d]
        pooled = []
        for kind in self.pooling:
            if kind == "multi_dim":
                pooled.append(self.s2t(u, mask))  # Eq. 14-16: md = Σ_i softmax_i(l(u_i)) ⊙ u_i
            else:
                pad = ~mask.unsqueeze(-1)
                pooled.append(u.masked_fill(pad, torch.finfo(u.dtype).min).amax(dim=1))  # mx, pads excluded (B14)
        return u, torch.cat(pooled, dim=-1)  # s = [md; mx], [B, 4d] (B11)


class DistanceSANPreTrainedModel(SentenceEncoderPreTrainedModel):
    config_class = DistanceSANConfig
    base_model_prefix = "distance_san"
    _auto_class_names = {
        "AutoModel": "DistanceSANModel",
        "AutoModelForSequenceClassification": "DistanceSANForSequenceClassification",
    }


class DistanceSANModel(DistanceSANPreTrainedModel, SentenceEncoderModel):
    """Distance-SAN encoder: ``last_hidden_state`` = U = [U_fw; U_bw] ``[B, n, 2·d_e]``, ``pooler_output`` =
    s = [md; mx] ``[B, 4·d_e]``."""

    def __init__(self, config: DistanceSANConfig):
        super().__init__(config)
        self.embeddings = WordEmbedding(config)
        self.encoder = DistanceSANEncoder(config)
        self.post_init()

    def encode(self, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.encoder(x, mask)


class DistanceSANForSequenceClassification(SentenceClassifierMixin, DistanceSANPreTrainedModel):
    """Distance-SAN + classifier (§4.1 pairs: tied encoder, [u; v; |u−v|; u⊙v] → 300 LN ReLU dropout → classes;
    single sentences: s → the same head) or, with ``problem_type="regression"``, the relatedness head."""

    def __init__(self, config: DistanceSANConfig):
        super().__init__(config)
        self.distance_san = DistanceSANModel(config)
        self.build_head(config.sentence_dim)
        self.post_init()


__all__ = [
    "DistanceSANPreTrainedModel",
    "DistanceSANModel",
    "DistanceSANForSequenceClassification",
    "DistanceMaskedMultiHeadAttention",
    "DirectionalBlock",
    "DistanceSANEncoder",
    "distance_mask",
    "block_allowed_keys",
]
