"""Dynamic Self-Attention (DSA) configuration (Yoon, Lee & Lee, 2018).

Defaults are the paper's SNLI single-DSA setting (DSA spec §1.1, §4, §9): dense CNN k = 3/5, L = 4, d1 = 150,
d_l = 75, d_c = 300; one attention of 600 dims, r = 2 routing iterations.
"""

from __future__ import annotations

from .configuration_common import SentenceEncoderConfig, one_of, positive_int, probability

INIT_DROPOUT_SCALINGS = ("keep", "rate", None)


class DSAConfig(SentenceEncoderConfig):
    r"""
    Configuration of a DSA sentence encoder and its heads. Shared fields (vocabulary, heads, init) are documented
    in :class:`SentenceEncoderConfig`; their defaults are overridden here to the paper's.

    Args:
        embedding_dim (`int`, defaults to 300): d0, word-vector width (alias `embed_dim`; GloVe 840B 300D).
        first_conv_channels (`int`, defaults to 150): d1, output channels of h^1 (Eq. 2).
        growth_channels (`int`, defaults to 75): d_l, output channels of h^2..h^L (Eq. 3, growth rate).
        num_conv_layers (`int`, defaults to 4): L, composite layers per dense block Φ_k (Eq. 2-4).
        kernel_sizes (`list[int]`, defaults to `[3, 5]`): k1, k2, one dense block Φ_k each (Eq. 5); odd ("same"
            padding keeps the length).
        first_conv_kernel (`int` or `"same_as_block"`, defaults to 1): kernel of h^1. The text says 1 (literal
            reading: single-DSA encoder 991,650 parameters); `"same_as_block"` gives h^1 the block's kernel k,
            which reproduces the reported 2.1M / 7.0M totals (spec §6 variant A, ambiguity A1).
        compress_dim (`int`, defaults to 300): d_c, output of the kernel-1 compression h^c (Eq. 5).
        num_attentions (`int`, defaults to 1): m, number of dynamic self-attentions (multiple DSA: 8).
        attention_dim (`int`, defaults to 600): d_o, width of each (multiple DSA: 300). Sentence vector m·d_o.
        routing_iters (`int`, defaults to 2): r of Algorithm 1.
        conv_dropout (`float`, defaults to 0.2): dropout inside every composite layer h^l and h^c (App. A/B).
        embed_dropout (`float`, defaults to 0.3): dropout on the word vectors X0 (App. A SNLI; SST: 0.4).
        leaky_slope (`float`, defaults to 0.01): negative slope of the LeakyReLU of the CNN and Eq. 6 (not stated;
            PyTorch default, spec A3). The classifier's `leaky_relu` uses 0.01 as well.
        init_dropout_scaling (`str` or `None`, defaults to `"keep"`): App. A "He init multiplied by √(dropout rate)"
            for layers followed/preceded by dropout (the CNN convs and the classifier's hidden layers):
            `"keep"` scales He-normal by √(1 − p) (the ConvS2S rule, spec A5), `"rate"` by the literal √p,
            `None` leaves plain He-normal. Layers without dropout are never scaled.

    Shared defaults overridden (spec §2-§3): `freeze_embeddings=True`, `init_scheme="he"`,
    `embedding_init_range=0.005` (SNLI OOV vectors U(±0.005); SST: 0.05), `classifier_block=
    "batchnorm,dropout,linear,act"` + `classifier_output="linear"` (A13), `classifier_act="leaky_relu"`,
    `classifier_hidden_sizes=[300, 300]` (SNLI single; multiple: [512, 512]; SST: [300]), `classifier_dropout=0.3`
    (SNLI single; multiple and SST: 0.4), `pair_features="concat_absdiff_mul"` with `pair_order="second_first"`
    ([s_h; s_p; |s_h − s_p|; s_h ⊙ s_p], §4; set `pair_features=None` for single sentences).
    """

    model_type = "dsa"
    attribute_map = {"embed_dim": "embedding_dim"}

    first_conv_channels: int = 150
    growth_channels: int = 75
    num_conv_layers: int = 4
    kernel_sizes: list | tuple = (3, 5)
    first_conv_kernel: int | str = 1
    compress_dim: int = 300
    num_attentions: int = 1
    attention_dim: int = 600
    routing_iters: int = 2
    conv_dropout: float = 0.2
    embed_dropout: float = 0.3
    leaky_slope: float = 0.01
    init_dropout_scaling: str | None = "keep"
    # shared fields with the paper's values
    freeze_embeddings: bool = True
    embedding_init_range: float = 0.005
    init_scheme: str = "he"
    classifier_hidden_sizes: list | tuple = (300, 300)
    classifier_act: str = "leaky_relu"
    classifier_dropout: float = 0.3
    classifier_block: str = "batchnorm,dropout,linear,act"
    classifier_output: str = "linear"
    pair_features: str | None = "concat_absdiff_mul"
    pair_order: str = "second_first"

    def __post_init__(self, **kwargs):
        if isinstance(self.kernel_sizes, tuple):
            self.kernel_sizes = list(self.kernel_sizes)
        super().__post_init__(**kwargs)

    def check_encoder(self) -> None:
        for name in ("first_conv_channels", "growth_channels", "num_conv_layers", "compress_dim", "num_attentions",
                     "attention_dim", "routing_iters"):
            positive_int(name, getattr(self, name))
        probability("conv_dropout", self.conv_dropout)
        probability("embed_dropout", self.embed_dropout)
        one_of("init_dropout_scaling", self.init_dropout_scaling, INIT_DROPOUT_SCALINGS)
        if not self.kernel_sizes:
            raise ValueError("kernel_sizes must list at least one kernel size (paper: [3, 5])")
        for i, k in enumerate(self.kernel_sizes):
            odd_kernel(f"kernel_sizes[{i}]", k)
        if self.first_conv_kernel != "same_as_block":
            odd_kernel("first_conv_kernel", self.first_conv_kernel, extra=" or 'same_as_block'")
        if isinstance(self.leaky_slope, bool) or not isinstance(self.leaky_slope, (int, float)) or self.leaky_slope < 0:
            raise ValueError(f"leaky_slope={self.leaky_slope!r} must be a number >= 0 (default 0.01)")

    @property
    def sentence_dim(self) -> int:
        """Width of `pooler_output`: m·d_o (Eq. 7; single DSA 600, multiple DSA 2400)."""
        return self.num_attentions * self.attention_dim


def odd_kernel(name, value, extra: str = "") -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0 or value % 2 == 0:
        raise ValueError(f"{name}={value!r} must be a positive odd kernel size{extra} ('same' padding)")


__all__ = ["DSAConfig"]
