"""Configuration fields every family shares: vocabulary, embeddings, task heads, initialisation.

Remote-code safe: imports transformers only. Each family's config subclasses :class:`SentenceEncoderConfig` and adds
its own encoder fields; the defaults here are overridden per family where its paper says otherwise.
"""

from __future__ import annotations

from transformers import PreTrainedConfig

ACTIVATIONS = ("elu", "relu", "leaky_relu", "tanh", "sigmoid", "identity")
PAIR_FEATURES = ("concat_sub_mul", "concat_absdiff_mul")
PAIR_ORDERS = ("first_second", "second_first")
HEAD_OPS = ("dropout", "linear", "act", "layernorm", "batchnorm")
INIT_SCHEMES = ("glorot", "he", "uniform")
PROBLEM_TYPES = ("single_label_classification", "multi_label_classification", "regression")


class SentenceEncoderConfig(PreTrainedConfig):
    r"""
    Shared fields (family configs document their own encoder fields).

    Args:
        vocab_size (`int`): word-level vocabulary size, special tokens included (`[PAD]`=0, `[UNK]`=1, `[SEP]`=2).
        embedding_dim (`int`, defaults to 300): d_e, word-vector width (all four papers: 300D GloVe).
        pad_token_id / unk_token_id / sep_token_id (`int`): special token ids of the word-level tokenizer.
        freeze_embeddings (`bool`, defaults to `False`): keep the whole embedding table fixed (DSA, Distance-SAN, NTI
            use frozen GloVe; DiSAN §Training Setup fine-tunes it).
        embedding_init_range (`float`, defaults to 0.05): rows without a pretrained vector are drawn from
            U(-r, r) (DiSAN: "OOV words ... U(−0.05, 0.05)").
        zero_special_embeddings (`bool`, defaults to `True`): `[PAD]` and `[UNK]` are constant zero vectors that are
            never trained (DiSAN spec §2, as in the original code).
        pair_features (`str` or `None`): `None` for single-sentence classification; for sentence pairs the feature
            vector built from the two sentence vectors u, v: `"concat_sub_mul"` = [u; v; u−v; u⊙v] (DiSAN §5.1),
            `"concat_absdiff_mul"` = [u; v; |u−v|; u⊙v] (Distance-SAN, DSA, NTI).
        pair_order (`str`, defaults to `"first_second"`): u is the first sentence (`"second_first"`: u is the second,
            DSA's [s_h, s_p, ...] order).
        classifier_hidden_sizes (`list[int]`, defaults to `[300]`): hidden widths of the classifier MLP (DiSAN: one
            300D layer).
        classifier_act (`str`, defaults to `"elu"`): hidden activation of the classifier (DiSAN: ELU).
        classifier_dropout (`float`, defaults to 0.25): dropout rate in the classifier (DiSAN SNLI keep prob 0.75).
        classifier_block (`str`): ops of one hidden block, comma separated from `dropout, linear, act, layernorm,
            batchnorm` (DiSAN code: `"dropout,linear,act"`).
        classifier_output (`str`): ops of the output layer (DiSAN code: `"dropout,linear"`).
        classifier_output_bias (`bool`, defaults to `True`).
        sim_hidden_size (`int`, defaults to 300): hidden width of the Tai et al. (2015) relatedness head used when
            `problem_type="regression"` (DiSAN spec §3.3, ambiguity 5).
        sim_act (`str`, defaults to `"elu"`): its hidden activation (Tai et al.: sigmoid with 50 units).
        relatedness_min_score / relatedness_max_score (`int`, 1 / 5): the score range; the head predicts a
            distribution over the integers in it (SICK: 1..5).
        init_scheme (`str`, defaults to `"glorot"`): `"glorot"` = Xavier-uniform matrices, zero biases (DiSAN,
            Distance-SAN); `"he"` = He-normal scaled by √keep (DSA); `"uniform"` = every parameter U(−init_range,
            init_range) (NTI code).
        init_range (`float`, defaults to 0.1): range of the `"uniform"` scheme.
        max_length (`int`, defaults to 512): longest accepted input; longer inputs raise a ValueError (truncate in
            the tokenizer to go past it).
        problem_type (`str`): `"single_label_classification"` (cross-entropy), `"multi_label_classification"`
            (sigmoid + BCE, e.g. answer selection with `num_labels=1`) or `"regression"` (relatedness head, KL loss).
    """

    vocab_size: int = 30000
    embedding_dim: int = 300
    pad_token_id: int | None = 0
    unk_token_id: int = 1
    sep_token_id: int = 2
    freeze_embeddings: bool = False
    embedding_init_range: float = 0.05
    zero_special_embeddings: bool = True
    pair_features: str | None = None
    pair_order: str = "first_second"
    classifier_hidden_sizes: list | tuple = (300,)
    classifier_act: str = "elu"
    classifier_dropout: float = 0.25
    classifier_block: str = "dropout,linear,act"
    classifier_output: str = "dropout,linear"
    classifier_output_bias: bool = True
    sim_hidden_size: int = 300
    sim_act: str = "elu"
    relatedness_min_score: int = 1
    relatedness_max_score: int = 5
    init_scheme: str = "glorot"
    init_range: float = 0.1
    max_length: int = 512

    def __post_init__(self, **kwargs):
        if isinstance(self.classifier_hidden_sizes, tuple):
            self.classifier_hidden_sizes = list(self.classifier_hidden_sizes)
        super().__post_init__(**kwargs)
        if self.problem_type is None:  # made explicit so that the head is fixed at construction (HF's inference rule)
            self.problem_type = "regression" if self.num_labels == 1 else "single_label_classification"
        self.check_common()
        self.check_encoder()

    # -- validation: every problem is a ValueError that names the field --------------------------------------------
    def check_encoder(self) -> None:
        """Family-specific size checks; overridden by family configs."""

    def check_common(self) -> None:
        positive_int("vocab_size", self.vocab_size)
        positive_int("embedding_dim", self.embedding_dim)
        positive_int("max_length", self.max_length)
        positive_int("sim_hidden_size", self.sim_hidden_size)
        for name in ("pad_token_id", "unk_token_id", "sep_token_id"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, int) and 0 <= value < self.vocab_size):
                raise ValueError(f"{name}={value!r} must be an id inside the vocabulary [0, {self.vocab_size})")
        one_of("pair_features", self.pair_features, PAIR_FEATURES + (None,))
        one_of("pair_order", self.pair_order, PAIR_ORDERS)
        one_of("classifier_act", self.classifier_act, ACTIVATIONS)
        one_of("sim_act", self.sim_act, ACTIVATIONS)
        one_of("init_scheme", self.init_scheme, INIT_SCHEMES)
        one_of("problem_type", self.problem_type, PROBLEM_TYPES + (None,))
        probability("classifier_dropout", self.classifier_dropout)
        for i, width in enumerate(self.classifier_hidden_sizes):
            positive_int(f"classifier_hidden_sizes[{i}]", width)
        for field in ("classifier_block", "classifier_output"):
            ops = [op.strip() for op in getattr(self, field).split(",") if op.strip()]
            bad = [op for op in ops if op not in HEAD_OPS]
            if bad or ops.count("linear") != 1:
                raise ValueError(
                    f"{field}={getattr(self, field)!r} must list ops from {HEAD_OPS} with exactly one 'linear'"
                )
        if self.relatedness_max_score <= self.relatedness_min_score:
            raise ValueError(
                f"relatedness_max_score ({self.relatedness_max_score}) must exceed relatedness_min_score "
                f"({self.relatedness_min_score})"
            )
        if self.problem_type == "regression" and self.num_labels != 1:
            raise ValueError(f"problem_type='regression' (relatedness head) needs num_labels=1, got {self.num_labels}")
        if self.id2label is not None and self.label2id is not None and len(self.id2label) != len(self.label2id):
            raise ValueError(
                f"id2label has {len(self.id2label)} entries but label2id has {len(self.label2id)}: they must match"
            )

    @property
    def is_pair_model(self) -> bool:
        return self.problem_type == "regression" or self.pair_features is not None


def positive_int(name, value) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name}={value!r} must be a positive integer")


def probability(name, value) -> None:
    if not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
        raise ValueError(f"{name}={value!r} must be a dropout rate in [0, 1)")


def one_of(name, value, allowed) -> None:
    if value not in allowed:
        raise ValueError(f"{name}={value!r} is not one of {list(allowed)}")


__all__ = ["SentenceEncoderConfig", "positive_int", "probability", "one_of", "ACTIVATIONS"]
