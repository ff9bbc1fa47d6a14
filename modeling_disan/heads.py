"""Task heads and sentence-pair handling shared by every family.

A pair arrives as a standard pair tokenization ``A [SEP] B`` with ``token_type_ids`` (0 for A and the separator, 1 for
B). :func:`split_pair` turns it into two left-aligned single-sentence batches, so one shared encoder encodes each
sentence exactly as it would encode it alone. Remote-code safe: torch, transformers and sibling files only.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from transformers.modeling_outputs import SequenceClassifierOutput

from .attention import activation
from .configuration_common import SentenceEncoderConfig


# -- pairs ---------------------------------------------------------------------------------------------------------
def pair_type_ids(input_ids: torch.Tensor, token_type_ids: torch.Tensor | None, sep_token_id: int) -> torch.Tensor:
    """Segment ids; without ``token_type_ids`` everything after the first ``[SEP]`` is the second sentence."""
    if token_type_ids is not None:
        if token_type_ids.shape != input_ids.shape:
            raise ValueError(
                f"token_type_ids shape {tuple(token_type_ids.shape)} does not match input_ids {tuple(input_ids.shape)}"
            )
        return token_type_ids.to(input_ids.device)
    is_sep = (input_ids == sep_token_id).long()
    return ((is_sep.cumsum(1) - is_sep) > 0).long()


def gather_left(input_ids: torch.Tensor, keep: torch.Tensor, pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Move the kept tokens of each row to the front, in order; trim to the longest row. Returns (ids, mask)."""
    order = torch.argsort((~keep).to(torch.int8), dim=1, stable=True)
    lengths = keep.sum(1)
    width = max(int(lengths.max()), 1)
    order = order[:, :width]
    mask = torch.arange(width, device=keep.device)[None, :] < lengths[:, None]
    ids = torch.gather(input_ids, 1, order).masked_fill(~mask, pad_id)
    return ids, mask


def split_pair(input_ids, mask, token_type_ids, config: SentenceEncoderConfig):
    """Split a pair batch into ((ids_a, mask_a), (ids_b, mask_b)); rows missing either sentence raise ValueError."""
    types = pair_type_ids(input_ids, token_type_ids, config.sep_token_id)
    content = mask & (input_ids != config.sep_token_id)
    first, second = content & (types == 0), content & (types == 1)
    for name, part in (("first", first), ("second", second)):
        missing = (~part.any(1)).nonzero().flatten()
        if len(missing):
            raise ValueError(
                f"row {int(missing[0])} has no {name} sentence: this model classifies sentence pairs, so pass "
                f"text and text_pair (a pair tokenization with token_type_ids)"
            )
    pad = config.pad_token_id if config.pad_token_id is not None else 0
    return gather_left(input_ids, first, pad), gather_left(input_ids, second, pad)


def pair_features(u: torch.Tensor, v: torch.Tensor, kind: str) -> torch.Tensor:
    """Matching features of two sentence vectors (DiSAN §5.1; Distance-SAN §4.1; DSA §4; NTI §4)."""
    if kind == "concat_sub_mul":
        return torch.cat([u, v, u - v, u * v], dim=-1)  # [s^p; s^h; s^p − s^h; s^p ⊙ s^h]
    if kind == "concat_absdiff_mul":
        return torch.cat([u, v, (u - v).abs(), u * v], dim=-1)
    raise ValueError(f"unknown pair_features {kind!r}")


# -- heads ---------------------------------------------------------------------------------------------------------
class MLPHead(nn.Module):
    """Classifier MLP built from the config's op lists, e.g. DiSAN ``dropout,linear,act`` + ``dropout,linear``."""

    def __init__(self, in_dim: int, out_dim: int, config: SentenceEncoderConfig):
        super().__init__()
        layers, width = [], in_dim
        for hidden in config.classifier_hidden_sizes:
            layers += self._ops(config.classifier_block, width, hidden, config, bias=True)
            width = hidden
        layers += self._ops(config.classifier_output, width, out_dim, config, bias=config.classifier_output_bias)
        self.layers = nn.Sequential(*layers)

    @staticmethod
    def _ops(spec: str, in_dim: int, out_dim: int, config, bias: bool) -> list[nn.Module]:
        ops, width = [], in_dim
        for op in (o.strip() for o in spec.split(",") if o.strip()):
            if op == "linear":
                ops.append(nn.Linear(width, out_dim, bias=bias))
                width = out_dim
            elif op == "dropout":
                ops.append(nn.Dropout(config.classifier_dropout))
            elif op == "act":
                ops.append(activation(config.classifier_act))
            elif op == "layernorm":
                ops.append(nn.LayerNorm(width, eps=1e-6))
            elif op == "batchnorm":
                ops.append(nn.BatchNorm1d(width))
        return ops

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.layers(features)


def sparse_target_distribution(scores: torch.Tensor, low: int, high: int) -> torch.Tensor:
    """Tai et al. (2015) target p for gold scores y in [low, high]: r^T p = y with two adjacent non-zeros."""
    y = scores.float().clamp(low, high) - low  # in [0, K-1]
    num = high - low + 1
    floor = y.floor().clamp(max=num - 1)
    frac = y - floor
    target = torch.zeros(*y.shape, num, device=y.device)
    target.scatter_(-1, floor.long().unsqueeze(-1), (1 - frac).unsqueeze(-1))
    upper = (floor + 1).clamp(max=num - 1).long().unsqueeze(-1)
    return target.scatter_add(-1, upper, torch.where(floor + 1 <= num - 1, frac, 0.0).unsqueeze(-1))


class RelatednessHead(nn.Module):
    """Tai et al. (2015) similarity module (DiSAN spec §3.3): h_s = σ(W[u⊙v; |u−v|] + b), p̂ = softmax(W_p h_s + b_p).

    Returns (predicted score ŷ = r^T p̂ ``[B]``, log p̂ ``[B, K]``).
    """

    def __init__(self, sentence_dim: int, config: SentenceEncoderConfig):
        super().__init__()
        self.low, self.high = config.relatedness_min_score, config.relatedness_max_score
        self.hidden = nn.Linear(2 * sentence_dim, config.sim_hidden_size)  # W^(x), W^(+), b^(h)
        self.act = activation(config.sim_act)
        self.out = nn.Linear(config.sim_hidden_size, self.high - self.low + 1)  # W^(p), b^(p)
        self.register_buffer(
            "ratings", torch.arange(self.low, self.high + 1, dtype=torch.float32), persistent=False
        )

    def forward(self, u: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.act(self.hidden(torch.cat([u * v, (u - v).abs()], dim=-1)))
        log_probs = F.log_softmax(self.out(h).float(), dim=-1)
        return log_probs.exp() @ self.ratings, log_probs

    def loss(self, log_probs: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        """Batch mean of KL(p ‖ p̂) to the sparse target distribution."""
        target = sparse_target_distribution(scores, self.low, self.high)
        return F.kl_div(log_probs, target, reduction="batchmean")


@dataclass
class SentenceClassifierOutput(SequenceClassifierOutput):
    """``SequenceClassifierOutput`` plus the sentence vectors and, for relatedness, the score distribution p̂."""

    sentence_embeddings: torch.Tensor | None = None
    second_sentence_embeddings: torch.Tensor | None = None
    score_distribution: torch.Tensor | None = None


class SentenceClassifierMixin:
    """The shared ``*ForSequenceClassification`` behaviour: single sentences, sentence pairs and relatedness.

    A family class sets ``self.<base_model_prefix>`` to its base model and calls ``self.build_head(sentence_dim)``.
    """

    def build_head(self, sentence_dim: int) -> None:
        cfg = self.config
        if cfg.problem_type == "regression":
            self.relatedness = RelatednessHead(sentence_dim, cfg)
        else:
            width = sentence_dim * (4 if cfg.pair_features else 1)
            self.classifier = MLPHead(width, cfg.num_labels, cfg)

    def get_input_embeddings(self) -> nn.Embedding:
        return getattr(self, self.base_model_prefix).get_input_embeddings()

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        getattr(self, self.base_model_prefix).set_input_embeddings(value)

    def encode_sentences(self, input_ids, attention_mask, token_type_ids):
        """Returns (u, v): sentence vectors of the first and (for pair models) second sentence."""
        encoder = getattr(self, self.base_model_prefix)
        input_ids, mask = encoder.check_inputs(input_ids, attention_mask)
        if not self.config.is_pair_model:
            if token_type_ids is not None and bool((token_type_ids.to(mask.device)[mask] != 0).any()):
                raise ValueError(
                    "got a sentence pair (token_type_ids 1) but this model classifies single sentences; "
                    "set pair_features in the config to build a pair model"
                )
            return encoder(input_ids=input_ids, attention_mask=mask).pooler_output, None
        (ids_a, mask_a), (ids_b, mask_b) = split_pair(input_ids, mask, token_type_ids, self.config)
        u = encoder(input_ids=ids_a, attention_mask=mask_a).pooler_output
        v = encoder(input_ids=ids_b, attention_mask=mask_b).pooler_output
        return u, v

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        return_dict: bool | None = None,
        **kwargs,
    ) -> SentenceClassifierOutput | tuple:
        cfg = self.config
        u, v = self.encode_sentences(input_ids, attention_mask, token_type_ids)
        loss = distribution = None
        if cfg.problem_type == "regression":
            logits, log_probs = self.relatedness(u, v)
            logits, distribution = logits.unsqueeze(-1), log_probs.exp()
            if labels is not None:
                loss = self.relatedness.loss(log_probs, self._check_scores(labels))
        else:
            first, second = (u, v) if cfg.pair_order == "first_second" else (v, u)
            features = pair_features(first, second, cfg.pair_features) if cfg.pair_features else u
            logits = self.classifier(features)
            if labels is not None:
                loss = self._classification_loss(logits, labels)
        out = SentenceClassifierOutput(
            loss=loss,
            logits=logits,
            sentence_embeddings=u,
            second_sentence_embeddings=v,
            score_distribution=distribution,
        )
        return out if (return_dict if return_dict is not None else cfg.return_dict) else out.to_tuple()

    def _classification_loss(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        cfg = self.config
        labels = labels.to(logits.device)
        if labels.shape[0] != logits.shape[0]:
            raise ValueError(f"got {labels.shape[0]} labels for a batch of {logits.shape[0]}")
        if cfg.problem_type == "multi_label_classification":
            labels = labels.to(logits.dtype).view_as(logits)
            if bool(((labels != 0) & (labels != 1)).any()):
                raise ValueError("multi-label targets must be 0 or 1")
            return F.binary_cross_entropy_with_logits(logits, labels)
        if labels.dtype.is_floating_point:
            if bool((labels != labels.round()).any()):
                raise ValueError("classification labels must be integer class ids, got fractional values")
            labels = labels.long()
        bad = labels[(labels < 0) | (labels >= cfg.num_labels)]
        if len(bad):
            names = list(cfg.id2label.values()) if cfg.id2label else list(range(cfg.num_labels))
            raise ValueError(f"label {int(bad[0])} is outside the label set 0..{cfg.num_labels - 1} ({names})")
        return F.cross_entropy(logits.float(), labels.view(-1))

    def _check_scores(self, labels: torch.Tensor) -> torch.Tensor:
        cfg = self.config
        scores = labels.float().view(-1)
        low, high = cfg.relatedness_min_score, cfg.relatedness_max_score
        bad = scores[(scores < low) | (scores > high) | scores.isnan()]
        if len(bad):
            raise ValueError(f"relatedness score {float(bad[0])} is outside the score range [{low}, {high}]")
        return scores


__all__ = [
    "pair_type_ids",
    "gather_left",
    "split_pair",
    "pair_features",
    "MLPHead",
    "sparse_target_distribution",
    "RelatednessHead",
    "SentenceClassifierOutput",
    "SentenceClassifierMixin",
]
