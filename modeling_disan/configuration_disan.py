"""DiSAN configuration (Shen et al., AAAI 2018). Defaults are the paper's SNLI setting (d_e = d_h = 300)."""

from __future__ import annotations

from .configuration_common import ACTIVATIONS, SentenceEncoderConfig, one_of, positive_int, probability

DISAN_ENCODERS = ("disan", "word_additive", "word_s2t", "bilstm_s2t", "multihead_s2t")
TOKEN2TOKEN_IMPLEMENTATIONS = ("reference", "blocked")


class DiSANConfig(SentenceEncoderConfig):
    r"""
    Configuration of a DiSAN sentence encoder and its heads. Shared fields (vocabulary, heads, init) are documented
    in :class:`SentenceEncoderConfig`.

    Args:
        hidden_size (`int`, defaults to 300): d_h, width of each directional block (Eq. 14: W^(h) maps d_e → d_h).
            The sentence vector s (Eq. 13) and `last_hidden_state` U = [u_fw; u_bw] have width 2·d_h.
        attn_scale_c (`float`, defaults to 5.0): c in the scaled tanh c·tanh(·/c) of Eq. 15 (paper: c = 5).
        hidden_act (`str`, defaults to `"elu"`): σ_h of Eq. 14 and σ of Eq. 12 (paper: ELU "if not specified";
            the SST code uses ReLU).
        dropout (`float`, defaults to 0.25): input dropout before every dense layer, 1 − keep prob
            (paper: keep 0.75 for SNLI, 0.8 for SST).
        directions (`list[str]`, defaults to `["fw", "bw"]`): masks of the two DiSA blocks (Eq. 17, 18);
            `["diag", "diag"]` is "DiSAN without directions" (Eq. 16, AAAI Table 1).
        tf_bias_compat (`bool`, defaults to `False`): add the original TF code's bias on each fusion-gate Linear
            (W^(f1), W^(f2)); gives the 2,345,403 "2.35M" count instead of the paper-equation 2,344,203 (spec §6).
        token2token_implementation (`str`, defaults to `"blocked"`): `"blocked"` recomputes the n×n×d attention in
            blocks and never stores it for backward; `"reference"` is the direct formula (same outputs).
        encoder_type (`str`, defaults to `"disan"`): `"disan"`, or an ablation baseline of AAAI/arXiv Table 1:
            `"word_additive"` (word embedding + additive attention), `"word_s2t"` (word embedding + source2token
            multi-dimensional attention), `"bilstm_s2t"` (Bi-LSTM + s2t) and `"multihead_s2t"` (arXiv: multi-head
            attention with positional encoding + s2t).
        num_attention_heads (`int`, defaults to 8): heads of the `"multihead_s2t"` baseline (arXiv: 8 × 75).
    """

    model_type = "disan"

    hidden_size: int = 300
    attn_scale_c: float = 5.0
    hidden_act: str = "elu"
    dropout: float = 0.25
    directions: list | tuple = ("fw", "bw")
    tf_bias_compat: bool = False
    token2token_implementation: str = "blocked"
    encoder_type: str = "disan"
    num_attention_heads: int = 8

    def __post_init__(self, **kwargs):
        if isinstance(self.directions, tuple):
            self.directions = list(self.directions)
        super().__post_init__(**kwargs)

    def check_encoder(self) -> None:
        positive_int("hidden_size", self.hidden_size)
        probability("dropout", self.dropout)
        one_of("hidden_act", self.hidden_act, ACTIVATIONS)
        one_of("encoder_type", self.encoder_type, DISAN_ENCODERS)
        one_of("token2token_implementation", self.token2token_implementation, TOKEN2TOKEN_IMPLEMENTATIONS)
        if not (isinstance(self.attn_scale_c, (int, float)) and self.attn_scale_c > 0):
            raise ValueError(f"attn_scale_c={self.attn_scale_c!r} must be a positive number (paper: c = 5)")
        if len(self.directions) != 2 or any(d not in ("fw", "bw", "diag") for d in self.directions):
            raise ValueError(f"directions={self.directions!r} must be two of 'fw', 'bw', 'diag' (e.g. ['fw', 'bw'])")
        if self.encoder_type == "multihead_s2t":
            positive_int("num_attention_heads", self.num_attention_heads)
            if (2 * self.hidden_size) % self.num_attention_heads:
                raise ValueError(
                    f"2*hidden_size ({2 * self.hidden_size}) must be divisible by num_attention_heads "
                    f"({self.num_attention_heads})"
                )

    @property
    def sentence_dim(self) -> int:
        """Width of `pooler_output`: 2·d_h for DiSAN (Eq. 13 over [u_fw; u_bw])."""
        if self.encoder_type in ("word_additive", "word_s2t"):
            return self.embedding_dim
        return 2 * self.hidden_size


__all__ = ["DiSANConfig"]
