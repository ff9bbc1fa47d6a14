"""DSA: Dynamic Self-Attention over a dense-connected CNN (Yoon, Lee & Lee, 2018), as a transformers model.

Equation numbers refer to the paper (Eq. 2-7) and its Algorithm 1 (lines "A1.L2"-"A1.L7"); the spec is DSA spec §1
(forward), §1.4 (padding), §2 (dropout, init), §6 (parameter counts) and §7 (ambiguities A1-A17).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from transformers.modeling_outputs import BaseModelOutputWithPooling

from .attention import masked_softmax
from .configuration_dsa import DSAConfig
from .heads import SentenceClassifierMixin
from .modeling_common import SentenceEncoderModel, SentenceEncoderPreTrainedModel, WordEmbedding

NORM_EPS = 1e-6  # L2-normalisation floor: representable in fp16, so all-zero pad rows stay exactly 0


def init_dropout(config: DSAConfig, rate: float) -> float:
    """The ``init_dropout`` a layer with dropout ``rate`` carries: the shared He init multiplies by
    √(1 − init_dropout) (modeling_common), so √keep is ``rate`` itself and the literal √rate is ``1 − rate``.
    Layers without dropout are never scaled (App. A; spec A5)."""
    if rate == 0.0 or config.init_dropout_scaling is None:
        return 0.0
    return rate if config.init_dropout_scaling == "keep" else 1.0 - rate


class CompositeConv(nn.Module):
    """A composite layer h(x): Conv1d -> Dropout -> LeakyReLU with "same" padding; pads re-zeroed (§3.1, §1.4)."""

    def __init__(self, config: DSAConfig, in_dim: int, out_dim: int, kernel: int):
        super().__init__()
        self.conv = nn.Conv1d(in_dim, out_dim, kernel, padding=kernel // 2)
        self.conv.init_dropout = init_dropout(config, config.conv_dropout)  # He × √keep (App. A)
        self.drop = nn.Dropout(config.conv_dropout)
        self.act = nn.LeakyReLU(config.leaky_slope)

    def forward(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:  # x [B, n, in] -> [B, n, out]
        y = self.conv(x.transpose(1, 2)).transpose(1, 2)
        return self.act(self.drop(y)) * keep  # LeakyReLU(bias) ≠ 0 on pads would leak through k = 3/5 kernels


class DenseBlock(nn.Module):
    """Φ_k (Eq. 2-4): h^1 then L − 1 layers, each fed the concatenation of all earlier outputs (not X0)."""

    def __init__(self, config: DSAConfig, kernel: int):
        super().__init__()
        first_kernel = kernel if config.first_conv_kernel == "same_as_block" else config.first_conv_kernel
        layers = [CompositeConv(config, config.embedding_dim, config.first_conv_channels, first_kernel)]  # Eq. 2
        width = config.first_conv_channels
        for _ in range(2, config.num_conv_layers + 1):
            layers.append(CompositeConv(config, width, config.growth_channels, kernel))  # Eq. 3
            width += config.growth_channels
        self.layers = nn.ModuleList(layers)
        self.out_dim = width

    def forward(self, x0: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:  # [B, n, d0] -> [B, n, d1 + (L−1)d_l]
        outs = [self.layers[0](x0, keep)]  # Eq. 2: X^1
        for layer in self.layers[1:]:
            outs.append(layer(torch.cat(outs[::-1], dim=-1), keep))  # Eq. 3: X^l = h^l([X^{l−1}; …; X^1])
        return torch.cat(outs[::-1], dim=-1)  # Eq. 4: Φ_k(X0) = [X^L; …; X^1]


class DenseCNN(nn.Module):
    """Dense-connected CNN (§3.1): embedding dropout, Φ_k1, Φ_k2, kernel-1 compression h^c, per-token L2 norm."""

    def __init__(self, config: DSAConfig):
        super().__init__()
        self.embed_drop = nn.Dropout(config.embed_dropout)
        self.blocks = nn.ModuleList(DenseBlock(config, k) for k in config.kernel_sizes)  # own h^1 each (A2)
        width = sum(block.out_dim for block in self.blocks) + config.embedding_dim  # 2·Σd_l + d0 = 1050
        self.compress = CompositeConv(config, width, config.compress_dim, 1)  # Eq. 5: h^c

    def forward(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:  # [B, n, d0] -> X^c [B, n, d_c]
        x0 = self.embed_drop(x) * keep  # X0, pads zeroed (§1.4)
        xc = self.compress(torch.cat([block(x0, keep) for block in self.blocks] + [x0], dim=-1), keep)  # Eq. 5
        return F.normalize(xc, dim=-1, eps=NORM_EPS)  # §3.1: x^c_i / ‖x^c_i‖₂


class DynamicSelfAttention(nn.Module):
    """Dynamic self-attention (§3.2, Eq. 6-7, Algorithm 1): m attentions of d_o dims, r routing iterations."""

    def __init__(self, config: DSAConfig):
        super().__init__()
        self.m, self.d_o, self.iters = config.num_attentions, config.attention_dim, config.routing_iters
        self.proj = nn.Linear(config.compress_dim, self.m * self.d_o)  # Eq. 6: W_j, b_j for all j side by side
        self.act = nn.LeakyReLU(config.leaky_slope)

    def forward(self, xc: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """X^c ``[B, n, d_c]`` -> (z ``[B, m·d_o]``, routing weights a per iteration, each ``[B, n, m]``)."""
        B, n, _ = xc.shape
        x_hat = self.act(self.proj(xc)).view(B, n, self.m, self.d_o)  # Eq. 6: x̂_{j|i}, [B, n, m, d_o]
        q = xc.new_zeros(B, n, self.m)  # A1.L2: q_ij = 0
        allowed = mask.unsqueeze(-1)  # pads out of every iteration (x̂ on a pad is LeakyReLU(b_j) ≠ 0)
        weights = []
        for t in range(self.iters):  # A1.L3
            a = masked_softmax(q, allowed, dim=1)  # A1.L4: softmax over words i, exactly 0 on pads
            z = torch.tanh(torch.einsum("bnm,bnmd->bmd", a, x_hat))  # A1.L5-6: s_j = Σ_i a_ij x̂_{j|i}; z = tanh
            weights.append(a)
            if t < self.iters - 1:  # the last update is never used (A7)
                q = q + torch.einsum("bnmd,bmd->bnm", x_hat, z)  # A1.L7: q_ij += x̂_{j|i}ᵀ z_j (unscaled, A8)
        return z.reshape(B, self.m * self.d_o), weights  # Eq. 7: z = [z_1; …; z_m]


class DSAEncoder(nn.Module):
    def __init__(self, config: DSAConfig):
        super().__init__()
        self.cnn = DenseCNN(config)
        self.dsa = DynamicSelfAttention(config)

    def forward(self, x: torch.Tensor, mask: torch.Tensor):
        """Returns (X^c ``[B, n, d_c]``, z ``[B, m·d_o]``, routing weights per iteration)."""
        xc = self.cnn(x, mask.unsqueeze(-1).to(x.dtype))
        z, weights = self.dsa(xc, mask)
        return xc, z, weights


@dataclass
class DSAModelOutput(BaseModelOutputWithPooling):
    """``BaseModelOutputWithPooling`` plus, with ``return_routing_weights=True``, Algorithm 1's weights a of every
    iteration (a tuple of r tensors ``[B, n, m]``; exactly 0 on padding)."""

    routing_weights: tuple[torch.FloatTensor, ...] | None = None


class DSAPreTrainedModel(SentenceEncoderPreTrainedModel):
    config_class = DSAConfig
    base_model_prefix = "dsa"
    _auto_class_names = {"AutoModel": "DSAModel", "AutoModelForSequenceClassification": "DSAForSequenceClassification"}


class DSAModel(DSAPreTrainedModel, SentenceEncoderModel):
    """DSA encoder: ``last_hidden_state`` = X^c (L2-normalised dense-CNN word vectors) ``[B, n, d_c]``,
    ``pooler_output`` = z ``[B, m·d_o]``."""

    def __init__(self, config: DSAConfig):
        super().__init__(config)
        self.embeddings = WordEmbedding(config)
        self.encoder = DSAEncoder(config)
        self.post_init()

    def encode(self, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        xc, z, _ = self.encoder(x, mask)
        return xc, z

    def encoder_outputs(self, x: torch.Tensor, mask: torch.Tensor, return_routing_weights: bool = False,
                        **kwargs) -> DSAModelOutput:
        """``model(..., return_routing_weights=True)`` also returns the DSA weights a_ij of every routing iteration."""
        xc, z, weights = self.encoder(x, mask)
        return DSAModelOutput(last_hidden_state=xc, pooler_output=z,
                              routing_weights=tuple(weights) if return_routing_weights else None)


class DSAForSequenceClassification(SentenceClassifierMixin, DSAPreTrainedModel):
    """DSA + classifier (§4: SNLI tied encoder, [s_h; s_p; |s_h − s_p|; s_h ⊙ s_p] → BN, dropout, Linear,
    LeakyReLU blocks → classes; SST: z → one such block → classes) or, with ``problem_type="regression"``, the
    relatedness head."""

    def __init__(self, config: DSAConfig):
        super().__init__(config)
        self.dsa = DSAModel(config)
        self.build_head(config.sentence_dim)
        if hasattr(self, "classifier"):  # App. A: He × √keep also for the hidden layers, whose inputs get dropout
            dropped = False
            for layer in self.classifier.layers:
                if isinstance(layer, nn.Dropout):
                    dropped = True
                elif isinstance(layer, nn.Linear):
                    layer.init_dropout = init_dropout(config, config.classifier_dropout) if dropped else 0.0
                    dropped = False
        self.post_init()


__all__ = [
    "DSAPreTrainedModel",
    "DSAModel",
    "DSAForSequenceClassification",
    "DSAModelOutput",
    "CompositeConv",
    "DenseBlock",
    "DenseCNN",
    "DynamicSelfAttention",
    "DSAEncoder",
]
