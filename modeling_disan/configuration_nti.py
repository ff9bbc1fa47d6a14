"""NTI configuration (Neural Tree Indexers, Munkhdalai & Yu, EACL 2017).

Defaults are the paper's SNLI NTI-SLSTM setting (k = 300, 10 % input / 20 % output dropout, MLP 1024 ReLU, frozen
embeddings). Where the paper is ambiguous the default follows ``shared/specs/nti.md`` ("spec") and a field offers the
alternative. Remote-code safe: imports transformers (through ``configuration_common``) only.
"""

from __future__ import annotations

from .configuration_common import SentenceEncoderConfig, one_of, positive_int, probability

LEAF_FUNCTIONS = ("none", "lstm")
NODE_FUNCTIONS = ("slstm", "anf")
SLSTM_TYPES = ("paper", "chainer")
ANF_SCORES = ("mlp", "dot")
ATTENTION_SCORES = ("bilinear", "mlp", "dot")
PADDING_MODES = ("auto", "fixed", "per_example")
PAD_LEAVES = ("random", "zero")
NLI_INTERACTIONS = (
    "none",
    "node_by_node_global",
    "node_by_node_tree",
    "tree_matching_global",
    "tree_matching_tree",
    "full_tree_matching_global",
)
TREE_ATTENTION_IMPLS = ("paper", "fast")
NBN_MODES = ("in_loop", "root")
MATCHING_POOLINGS = ("attention", "last")
PAIR_ENCODERS = ("shared", "anf_question")


class NTIConfig(SentenceEncoderConfig):
    r"""
    Configuration of an NTI sentence encoder (a full binary tree built bottom-up over the words) and its heads.
    Shared fields are documented in :class:`SentenceEncoderConfig`; NTI changes these defaults: `freeze_embeddings=True`
    (§4: "word embeddings are fixed"), `init_scheme="uniform"` with `init_range=0.1` (code: every parameter
    U(−0.1, 0.1); not stated in the paper), classifier `"linear,act,dropout"` + `"linear"` with ReLU and
    `classifier_hidden_sizes=[1024]` (§4.1: "an input layer with 1024 units with ReLU activation and a softmax output
    layer"; the output dropout sits before the output layer as in the code), `classifier_dropout=0.2` (§4.1 NTI-SLSTM:
    20 % output dropout), `pair_features="concat_absdiff_mul"` (§4.1: [h^p; h^h; |h^p − h^h|; h^p ⊙ h^h]; set it to
    `None` for single sentences, which the training recipes do for single-sentence tasks).

    Args:
        hidden_size (`int`, defaults to 300): k, the width of every tree node h and cell c (§4: "the size of hidden
            units of the NTI modules were set to 300"). With `leaf_function="none"` the leaves are the word vectors,
            so `embedding_dim` must equal `hidden_size`.
        leaf_function (`str`, defaults to `"none"`): f^leaf (§3). `"none"`: leaves are the embeddings, leaf cells
            zero (NTI-SLSTM; spec §8 #3); `"lstm"`: a unidirectional LSTM over the leaves, whose outputs are the leaf
            h and whose memory cells initialise the lowest S-LSTM cells (NTI-SLSTM-LSTM, §4.1).
        node_function (`str`, defaults to `"slstm"`): f^node. `"slstm"` (Eq. 1-6) or `"anf"`, the attentive non-leaf
            function (Eq. 7-11), which needs a query vector q and carries no cell state.
        slstm_type (`str`, defaults to `"paper"`): `"paper"` is Eq. 1-6 with peepholes, 17 k×k matrices and 5 biases
            (17k² + 5k); `"chainer"` is the released code's `F.slstm`: per-child gates, no peepholes (8k² + 8k)
            (spec §1.3, §8 #1).
        anf_score (`str`, defaults to `"mlp"`): f^score of ANF: `"mlp"` (Eq. 11) or `"dot"` (m = qᵀS) (spec §8 #8).
        input_dropout (`float`, defaults to 0.1): "input dropout" (§4.1 NTI-SLSTM: 10 %). Placed as in the code: on
            the word vectors, on every child h before the node function, and on the attention vectors before the
            matching LSTM; never on cells or attention scores (spec §3, §8 #13).
        padding_mode (`str`, defaults to `"auto"`): how sentences become power-of-two trees (spec §2). `"fixed"`:
            every tree has `max_leaves` leaves, longer inputs are truncated to their first `max_leaves` tokens (the
            SNLI code); `"per_example"`: each sentence gets its own 2^⌈log2 n⌉ leaves and the result equals running it
            alone (§5.3); `"auto"`: `"fixed"` for sentence-pair classification (NLI), `"per_example"` otherwise
            (single sentences, answer selection, relatedness).
        max_leaves (`int`, defaults to 32): L of `"fixed"` mode, a power of two (code: SNLI sentences truncated and
            left-padded to 32).
        pad_leaf (`str`, defaults to `"random"`): the vector of the inserted padding leaves (§4: "a padding vector was
            inserted"). `"random"`: one fixed vector drawn once from U(−init_range, init_range) and never trained
            (code: `EMPTY`); `"zero"`: zeros. Pads are left of the words (code) and are not masked (§5.3).
        mask_pad_nodes (`bool`, defaults to `False`): extension: also mask, in every attention softmax, tree nodes
            whose whole span is padding (the paper attends to them; spec §8 #5).
        nli_interaction (`str`, defaults to `"none"`): the sentence-pair model of Table 1 (spec §1.6): `"none"`
            (NTI-SLSTM / NTI-SLSTM-LSTM encoders), `"node_by_node_global"`, `"node_by_node_tree"`,
            `"tree_matching_global"`, `"tree_matching_tree"`, `"full_tree_matching_global"`.
        attention_score (`str`, defaults to `"bilinear"`): f^score of global and tree attention: `"bilinear"`
            pᵀ(W q + b) (the released code), `"mlp"` (Eq. 11 form) or `"dot"` (spec §8 #8).
        attention_bias (`bool`, defaults to `False`): biases on W1^GA, W2^GA (Eq. 15) and W1^TA (Eq. 19); the paper
            writes none, the code has them (`W_c z + b_c + W_q q + b_q`).
        tree_attention_impl (`str`, defaults to `"paper"`): `"paper"`: Eq. 16-19, every parent re-scores
            [parent, left, right] against q and applies ReLU(W1^TA z); `"fast"`: the code's `__attend_f_tree`, node
            scores computed once, a normalised bottom-up blend and ReLU(W_c z + W_q q) at the root (spec §8 #9).
        nbn_mode (`str`, defaults to `"in_loop"`): node-by-node attention inside the hypothesis loop (every hypothesis
            node attends over the premise tree before it is composed further) or `"root"` (trees built independently,
            only the hypothesis root attends) (spec §8 #6).
        matching_pooling (`str`, defaults to `"attention"`): how tree matching pools the matching LSTM: `"attention"`
            (code: global attention of the last state over the other states) or `"last"` (paper: last hidden state)
            (spec §8 #10).
        pair_encoder (`str`, defaults to `"shared"`): `"shared"`: both sentences with the one encoder (Siamese);
            `"anf_question"`: answer sentence selection (§4.2): the second sentence (answer) is encoded by this NTI,
            the first (question) by a separate NTI-ANF tree (own leaf LSTM) whose query q is the answer root.
    """

    model_type = "nti"

    hidden_size: int = 300
    leaf_function: str = "none"
    node_function: str = "slstm"
    slstm_type: str = "paper"
    anf_score: str = "mlp"
    input_dropout: float = 0.1
    padding_mode: str = "auto"
    max_leaves: int = 32
    pad_leaf: str = "random"
    mask_pad_nodes: bool = False
    nli_interaction: str = "none"
    attention_score: str = "bilinear"
    attention_bias: bool = False
    tree_attention_impl: str = "paper"
    nbn_mode: str = "in_loop"
    matching_pooling: str = "attention"
    pair_encoder: str = "shared"

    # NTI defaults of shared fields
    freeze_embeddings: bool = True
    init_scheme: str = "uniform"
    init_range: float = 0.1
    pair_features: str | None = "concat_absdiff_mul"
    classifier_hidden_sizes: list | tuple = (1024,)
    classifier_act: str = "relu"
    classifier_dropout: float = 0.2
    classifier_block: str = "linear,act,dropout"
    classifier_output: str = "linear"

    def check_encoder(self) -> None:
        positive_int("hidden_size", self.hidden_size)
        positive_int("max_leaves", self.max_leaves)
        probability("input_dropout", self.input_dropout)
        one_of("leaf_function", self.leaf_function, LEAF_FUNCTIONS)
        one_of("node_function", self.node_function, NODE_FUNCTIONS)
        one_of("slstm_type", self.slstm_type, SLSTM_TYPES)
        one_of("anf_score", self.anf_score, ANF_SCORES)
        one_of("attention_score", self.attention_score, ATTENTION_SCORES)
        one_of("padding_mode", self.padding_mode, PADDING_MODES)
        one_of("pad_leaf", self.pad_leaf, PAD_LEAVES)
        one_of("nli_interaction", self.nli_interaction, NLI_INTERACTIONS)
        one_of("tree_attention_impl", self.tree_attention_impl, TREE_ATTENTION_IMPLS)
        one_of("nbn_mode", self.nbn_mode, NBN_MODES)
        one_of("matching_pooling", self.matching_pooling, MATCHING_POOLINGS)
        one_of("pair_encoder", self.pair_encoder, PAIR_ENCODERS)
        if self.max_leaves & (self.max_leaves - 1):
            raise ValueError(f"max_leaves={self.max_leaves} must be a power of two (a full binary tree)")
        if self.leaf_function == "none" and self.embedding_dim != self.hidden_size:
            raise ValueError(
                f"leaf_function='none' uses the word vectors as leaves, so embedding_dim ({self.embedding_dim}) must "
                f"equal hidden_size ({self.hidden_size}); use leaf_function='lstm' to map between them"
            )
        if self.nli_interaction != "none" or self.pair_encoder != "shared":
            if self.node_function != "slstm":
                raise ValueError(
                    f"node_function={self.node_function!r}: nli_interaction and pair_encoder models build their "
                    f"(premise / answer) trees with S-LSTM; set node_function='slstm'"
                )
            if self.problem_type == "regression":
                raise ValueError("nli_interaction / pair_encoder models have classification heads, not regression")
        if self.nli_interaction != "none" and self.pair_encoder != "shared":
            raise ValueError("nli_interaction and pair_encoder='anf_question' cannot be combined")

    @property
    def is_pair_model(self) -> bool:
        return super().is_pair_model or self.nli_interaction != "none" or self.pair_encoder != "shared"

    @property
    def tree_padding(self) -> str:
        """The padding mode in effect: `"fixed"` or `"per_example"` (`"auto"` resolved, spec §2)."""
        if self.padding_mode != "auto":
            return self.padding_mode
        nli = self.is_pair_model and self.problem_type == "single_label_classification"
        return "fixed" if nli else "per_example"

    @property
    def uses_tree_matching(self) -> bool:
        return "tree_matching" in self.nli_interaction

    @property
    def sentence_dim(self) -> int:
        """Width of `pooler_output`: k (the root h_{2n-1}, or h^tree with attention)."""
        return self.hidden_size


__all__ = ["NTIConfig"]
