"""DiSAN: Directional Self-Attention Network (Shen et al., AAAI 2018), as a transformers model.

Equation numbers refer to the AAAI paper; the spec is DiSAN spec §1 (forward), §2 (dropout/init), §6 (counts).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .attention import MultiDimSource2Token, activation, masked_softmax, token2token_attention_reference
from .configuration_disan import DiSANConfig
from .heads import SentenceClassifierMixin
from .modeling_common import SentenceEncoderModel, SentenceEncoderPreTrainedModel, WordEmbedding
from .token2token import token2token_attention


def token2token(config: DiSANConfig):
    """The masked multi-dimensional token2token attention the config asks for (same outputs either way)."""
    if config.token2token_implementation == "blocked":
        return token2token_attention  # recomputes in backward, never keeps B·n·n·d
    return token2token_attention_reference


class DirectionalSelfAttention(nn.Module):
    """One DiSA block (Eq. 14-20): FC, masked multi-dimensional token2token attention, fusion gate."""

    def __init__(self, config: DiSANConfig, direction: str):
        super().__init__()
        d_e, d_h = config.embedding_dim, config.hidden_size
        self.direction, self.c = direction, float(config.attn_scale_c)
        self.fc = nn.Linear(d_e, d_h)  # Eq. 14: W^(h), b^(h)
        self.w_key = nn.Linear(d_h, d_h, bias=False)  # Eq. 15: W^(1), acts on the key h_i
        self.w_query = nn.Linear(d_h, d_h, bias=False)  # Eq. 15: W^(2), acts on the query h_j
        self.b_att = nn.Parameter(torch.zeros(d_h))  # Eq. 15: b^(1)
        self.w_f1 = nn.Linear(d_h, d_h, bias=config.tf_bias_compat)  # Eq. 19: W^(f1) on s
        self.w_f2 = nn.Linear(d_h, d_h, bias=config.tf_bias_compat)  # Eq. 19: W^(f2) on h
        self.b_f = nn.Parameter(torch.zeros(d_h))  # Eq. 19: b^(f)
        self.act = activation(config.hidden_act)
        self.drop = nn.Dropout(config.dropout)
        self.attend = token2token(config)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:  # x [B, n, d_e] -> [B, n, d_h]
        h = self.act(self.fc(self.drop(x)))  # Eq. 14
        h_drop = self.drop(h)  # one dropout draw feeds both W^(1) and W^(2) (original code)
        key, query = self.w_key(h_drop), self.w_query(h_drop) + self.b_att
        s = self.attend(query, key, h, mask, self.direction, self.c)  # Eq. 15 + Eq. 11, values un-dropped h
        gate = torch.sigmoid(self.w_f1(self.drop(s)) + self.w_f2(self.drop(h)) + self.b_f)  # Eq. 19
        return (gate * h + (1 - gate) * s) * mask.unsqueeze(-1).to(h.dtype)  # Eq. 20; pad rows zeroed


class DiSANEncoder(nn.Module):
    """Two untied DiSA blocks (M^fw, M^bw) and multi-dimensional source2token attention (§4, Eq. 12-13)."""

    def __init__(self, config: DiSANConfig):
        super().__init__()
        self.fw = DirectionalSelfAttention(config, config.directions[0])
        self.bw = DirectionalSelfAttention(config, config.directions[1])
        self.s2t = MultiDimSource2Token(2 * config.hidden_size, act=config.hidden_act, dropout=config.dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        u = torch.cat([self.fw(x, mask), self.bw(x, mask)], dim=-1)  # U = [u_fw; u_bw], [B, n, 2 d_h]
        return u, self.s2t(u, mask)  # s^disan [B, 2 d_h]


class DiSANPreTrainedModel(SentenceEncoderPreTrainedModel):
    config_class = DiSANConfig
    base_model_prefix = "disan"
    _auto_class_names = {"AutoModel": "DiSANModel", "AutoModelForSequenceClassification": "DiSANForSequenceClassification"}


class DiSANModel(DiSANPreTrainedModel, SentenceEncoderModel):
    """DiSAN sentence encoder: ``last_hidden_state`` = U = [u_fw; u_bw] ``[B, n, 2·d_h]``, ``pooler_output`` = s."""

    def __init__(self, config: DiSANConfig):
        super().__init__(config)
        self.embeddings = WordEmbedding(config)
        self.encoder = build_encoder(config)
        self.post_init()

    def encode(self, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.encoder(x, mask)


class DiSANForSequenceClassification(SentenceClassifierMixin, DiSANPreTrainedModel):
    """DiSAN + classifier (§3.1 single sentences; §3.2 pairs: tied encoder, [u; v; u−v; u⊙v] → 300 ELU → classes)
    or, with ``problem_type="regression"``, the Tai et al. relatedness head (§3.3)."""

    def __init__(self, config: DiSANConfig):
        super().__init__(config)
        self.disan = DiSANModel(config)
        self.build_head(config.sentence_dim)
        self.post_init()


# -- ablation baselines of AAAI Table 1 / arXiv Table 1 (same heads, same training) ---------------------------------
class WordAdditiveEncoder(nn.Module):
    """Word embedding + traditional (additive) source2token attention: a_i = w^T σ(W x_i + b) (Eq. 7 without the
    query), softmax over tokens, s = Σ_i a_i x_i. One scalar score per token (Eq. 7-8)."""

    def __init__(self, config: DiSANConfig):
        super().__init__()
        self.proj = nn.Linear(config.embedding_dim, config.embedding_dim)  # W, b
        self.score = nn.Linear(config.embedding_dim, 1, bias=False)  # w
        self.act = activation(config.hidden_act)
        self.drop = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        scores = self.score(self.act(self.proj(self.drop(x))))  # [B, n, 1]
        probs = masked_softmax(scores, mask.unsqueeze(-1), dim=1)
        return x, (probs * x).sum(1)


class WordSource2TokenEncoder(nn.Module):
    """Word embedding + multi-dimensional source2token attention (Eq. 12-13 applied to the embeddings)."""

    def __init__(self, config: DiSANConfig):
        super().__init__()
        self.s2t = MultiDimSource2Token(config.embedding_dim, act=config.hidden_act, dropout=config.dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x, self.s2t(x, mask)


class BiLSTMSource2TokenEncoder(nn.Module):
    """Bi-LSTM (d_h + d_h) + multi-dimensional source2token attention (AAAI Table 1, "Bi-LSTM + s2t").

    TF's LSTM cell has one bias per gate; PyTorch's has two (b_ih, b_hh), so b_hh is held at zero and frozen: the
    function and the trainable count (2,884,803 with the SNLI head) are the paper's.
    """

    def __init__(self, config: DiSANConfig):
        super().__init__()
        self.lstm = nn.LSTM(config.embedding_dim, config.hidden_size, batch_first=True, bidirectional=True)
        for name, param in self.lstm.named_parameters():
            if name.startswith("bias_hh"):
                param.requires_grad_(False)
        self.drop = nn.Dropout(config.dropout)
        self.s2t = MultiDimSource2Token(2 * config.hidden_size, act=config.hidden_act, dropout=config.dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        lengths = mask.sum(1).cpu()
        packed = nn.utils.rnn.pack_padded_sequence(self.drop(x), lengths, batch_first=True, enforce_sorted=False)
        u, _ = self.lstm(packed)  # packed: the bw direction starts at each sentence's last real token
        u, _ = nn.utils.rnn.pad_packed_sequence(u, batch_first=True, total_length=x.shape[1])
        return u, self.s2t(u, mask)


def sinusoid_positions(n: int, dim: int, device=None, dtype=torch.float32) -> torch.Tensor:
    """Vaswani et al. (2017) positional encoding ``[n, dim]`` (arXiv multi-head baseline: "pos. enc.")."""
    position = torch.arange(n, device=device, dtype=torch.float32)[:, None]
    rate = torch.exp(torch.arange(0, dim, 2, device=device, dtype=torch.float32) * (-math.log(10000.0) / dim))
    table = torch.zeros(n, dim, device=device)
    table[:, 0::2] = torch.sin(position * rate)
    table[:, 1::2] = torch.cos(position * rate[: dim // 2])
    return table.to(dtype)


class MultiHeadSource2TokenEncoder(nn.Module):
    """Multi-head scaled dot-product self-attention (8 × 75 with positional encoding; arXiv Table 1) +
    multi-dimensional source2token attention. Q, K, V: Linear(d_e → 2·d_h) with biases, no output projection."""

    def __init__(self, config: DiSANConfig):
        super().__init__()
        width = 2 * config.hidden_size
        self.heads, self.head_dim = config.num_attention_heads, width // config.num_attention_heads
        self.q, self.k, self.v = (nn.Linear(config.embedding_dim, width) for _ in range(3))
        self.drop = nn.Dropout(config.dropout)
        self.s2t = MultiDimSource2Token(width, act=config.hidden_act, dropout=config.dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        B, n, _ = x.shape
        x = self.drop(x + sinusoid_positions(n, x.shape[-1], x.device, x.dtype))

        def split(t):  # [B, n, H·dh] -> [B, H, n, dh]
            return t.view(B, n, self.heads, self.head_dim).transpose(1, 2)

        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        logits = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)  # [B, H, n_q, n_k]
        probs = masked_softmax(logits, mask[:, None, None, :], dim=-1)
        u = (probs @ v).transpose(1, 2).reshape(B, n, -1) * mask.unsqueeze(-1).to(x.dtype)
        return u, self.s2t(u, mask)


ENCODERS = {
    "disan": DiSANEncoder,
    "word_additive": WordAdditiveEncoder,
    "word_s2t": WordSource2TokenEncoder,
    "bilstm_s2t": BiLSTMSource2TokenEncoder,
    "multihead_s2t": MultiHeadSource2TokenEncoder,
}


def build_encoder(config: DiSANConfig) -> nn.Module:
    return ENCODERS[config.encoder_type](config)


__all__ = [
    "DiSANPreTrainedModel",
    "DiSANModel",
    "DiSANForSequenceClassification",
    "DirectionalSelfAttention",
    "DiSANEncoder",
]
