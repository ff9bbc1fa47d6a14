"""Distance-based Self-Attention Network configuration (Im & Cho, arXiv 1712.02047).

Defaults are the paper's SNLI setting (Distance-SAN spec §4, §9): d_e = 300, 5 heads, d_ff = 1200, α = 1.5.
"""

from __future__ import annotations

from .configuration_common import SentenceEncoderConfig, positive_int, probability

DISTANCE_SAN_POOLINGS = ("multi_dim", "max")


class DistanceSANConfig(SentenceEncoderConfig):
    r"""
    Configuration of a Distance-SAN sentence encoder and its heads. Shared fields (vocabulary, heads, init) are
    documented in :class:`SentenceEncoderConfig`; their defaults are overridden here to the paper's.

    Args:
        embedding_dim (`int`, defaults to 300): d_e (alias `embed_dim`). The word vectors feed each block directly
            (Eq. 9: Q = K = V = w), so d_e is also the block width; it must be divisible by `num_heads`.
        num_heads (`int`, defaults to 5): h of Eq. 8; d_k = d_e / h = 60.
        ffn_dim (`int`, defaults to 1200): d_ff = 4·d_e of the position-wise FFN (Eq. 13).
        distance_alpha (`float`, defaults to 1.5): α of Eq. 7, the weight of the distance mask M_dis = −|i − j|
            (tuned on the SNLI dev set; fixed, not learned). `0` gives the "without distance mask" ablation.
        use_distance_mask (`bool`, defaults to `True`): `False` drops α·M_dis (the same ablation as α = 0).
        use_directional_mask (`bool`, defaults to `True`): M_dir of Eq. 7; the forward block sees only earlier
            words, the backward block only later ones. `False`: both blocks see the whole sentence.
        disable_self_attention (`bool`, defaults to `True`): M_dir also hides the diagonal (a word never attends to
            itself; §4.2.2). `False` lets each word see itself too.
        dropout (`float`, defaults to 0.1): at the MHA output, the gate pre-activation (Eq. 12) and the FFN output
            before the residual (§5.2, "residual dropout"; spec B2).
        layer_norm_eps (`float`, defaults to 1e-6): ε of every LayerNorm (not stated; spec §2).
        ln_on_projections (`bool`, defaults to `True`): LayerNorm after each linear map W^Q, W^K, W^V, W^O (Eq. 8),
            W_S, W_H (Eq. 11) and W^M_1 (Eq. 14) (§5.2, spec B1). The post-FFN LayerNorm (Eq. 13) is always on.
        ln_on_s2t_logits (`bool`, defaults to `True`): LayerNorm after W^M_2, on the Eq. 14 logits (spec B8).
        pooling (`list[str]`, defaults to `["multi_dim", "max"]`): sentence vector = concatenation, in this order,
            of multi-dimensional source2token attention (Eq. 14-16) and max-pooling over U (§4.2.5): 4·d_e = 1200.
        classifier_hidden_sizes (`list[int]`, defaults to `[300]`): §4.1, one 300D ReLU layer with LN and dropout
            (the spec's `classifier_hidden`).

    Shared defaults overridden (spec §2-§3): `freeze_embeddings=True` (GloVe 840B, not fine-tuned),
    `init_scheme="glorot"` (not stated; TF default), `classifier_block="linear,layernorm,act,dropout"` +
    `classifier_output="linear"` (spec B7), `classifier_act="relu"`, `classifier_dropout=0.1`,
    `pair_features="concat_absdiff_mul"` ([u; v; |u − v|; u ⊙ v], §4.1; set `None` for single sentences).
    """

    model_type = "distance_san"
    attribute_map = {"embed_dim": "embedding_dim"}

    num_heads: int = 5
    ffn_dim: int = 1200
    distance_alpha: float = 1.5
    use_distance_mask: bool = True
    use_directional_mask: bool = True
    disable_self_attention: bool = True
    dropout: float = 0.1
    layer_norm_eps: float = 1e-6
    ln_on_projections: bool = True
    ln_on_s2t_logits: bool = True
    pooling: list | tuple = ("multi_dim", "max")
    # shared fields with the paper's values
    freeze_embeddings: bool = True
    init_scheme: str = "glorot"
    classifier_hidden_sizes: list | tuple = (300,)
    classifier_act: str = "relu"
    classifier_dropout: float = 0.1
    classifier_block: str = "linear,layernorm,act,dropout"
    classifier_output: str = "linear"
    pair_features: str | None = "concat_absdiff_mul"

    def __post_init__(self, **kwargs):
        if isinstance(self.pooling, tuple):
            self.pooling = list(self.pooling)
        super().__post_init__(**kwargs)

    def check_encoder(self) -> None:
        positive_int("num_heads", self.num_heads)
        positive_int("ffn_dim", self.ffn_dim)
        probability("dropout", self.dropout)
        if self.embedding_dim % self.num_heads:
            raise ValueError(
                f"embed_dim (embedding_dim) = {self.embedding_dim} must be divisible by num_heads = {self.num_heads}"
            )
        if isinstance(self.distance_alpha, bool) or not isinstance(self.distance_alpha, (int, float)) \
                or self.distance_alpha < 0:
            raise ValueError(f"distance_alpha={self.distance_alpha!r} must be a number >= 0 (paper: 1.5)")
        if not (isinstance(self.layer_norm_eps, (int, float)) and self.layer_norm_eps > 0):
            raise ValueError(f"layer_norm_eps={self.layer_norm_eps!r} must be a positive number")
        if not self.pooling or len(set(self.pooling)) != len(self.pooling) \
                or any(p not in DISTANCE_SAN_POOLINGS for p in self.pooling):
            raise ValueError(
                f"pooling={self.pooling!r} must list distinct entries of {list(DISTANCE_SAN_POOLINGS)}"
            )

    @property
    def sentence_dim(self) -> int:
        """Width of `pooler_output`: each pooling of U = [U_fw; U_bw] gives 2·d_e (paper: 2 × 600 = 1200)."""
        return len(self.pooling) * 2 * self.embedding_dim


__all__ = ["DistanceSANConfig"]
