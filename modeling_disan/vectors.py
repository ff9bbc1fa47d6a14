"""GloVe-format word vectors (``word v1 ... vd`` per line, optionally gzipped) loaded into a model's embeddings.

Load after the model is built (after ``post_init``), otherwise the init would overwrite the vectors.
"""

from __future__ import annotations

import gzip
import logging
from dataclasses import asdict, dataclass

import torch

logger = logging.getLogger(__name__)


@dataclass
class VectorCoverage:
    """How much of the vocabulary a vector file covered."""

    path: str
    vocab_size: int
    found: int
    lowercase_matches: int
    coverage: float

    def to_dict(self) -> dict:
        return asdict(self)


def _open(path: str):
    return gzip.open(path, "rt", encoding="utf-8") if str(path).endswith(".gz") else open(path, encoding="utf-8")


def read_vectors(path: str, vocab: dict[str, int], dim: int) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Read only the vocabulary's words. Returns (vectors ``[V, dim]``, found bool ``[V]``, lower-case matches).

    An exact match wins over a lower-cased one (GloVe 840B is cased). Lines whose word contains spaces are split
    from the right. A line whose width differs from ``dim`` raises a ValueError naming file and line.
    """
    vectors = torch.zeros(len(vocab), dim)
    found = torch.zeros(len(vocab), dtype=torch.bool)
    exact = torch.zeros(len(vocab), dtype=torch.bool)
    lower_index: dict[str, list[int]] = {}
    for word, idx in vocab.items():
        lower_index.setdefault(word.lower(), []).append(idx)
    lowercase_matches = 0
    with _open(path) as handle:
        for lineno, line in enumerate(handle, 1):
            line = line.rstrip("\n").rstrip()
            if not line:
                continue
            parts = line.rsplit(" ", dim)
            if lineno == 1 and len(parts) == 2 and all(p.isdigit() for p in line.split()):
                continue  # word2vec-style "count dim" header
            if len(parts) != dim + 1:
                width = len(line.split(" ")) - 1
                raise ValueError(
                    f"{path}:{lineno}: vector has {width} values but the model's embedding_dim is {dim} "
                    f"(is this the right vector file?)"
                )
            word = parts[0]
            targets = [(vocab[word], True)] if word in vocab else []
            targets += [(i, False) for i in lower_index.get(word.lower(), []) if not exact[i] and not found[i]]
            if not targets:
                continue
            try:
                values = torch.tensor([float(x) for x in parts[1:]])
            except ValueError:
                raise ValueError(f"{path}:{lineno}: malformed vector line (non-numeric value)") from None
            for idx, is_exact in targets:
                vectors[idx] = values
                lowercase_matches += int(not is_exact and not found[idx])
                found[idx] = True
                exact[idx] |= is_exact
    return vectors, found, lowercase_matches


def load_glove_into(model, tokenizer, path: str, trainable: bool = True) -> VectorCoverage:
    """Copy GloVe vectors for the tokenizer's vocabulary into ``model``'s input embeddings.

    ``trainable=True``: covered rows stay trainable (DiSAN fine-tunes GloVe); ``False`` freezes them. Special tokens
    are never overwritten. Returns and logs the coverage report.
    """
    embedding = model.get_input_embeddings()
    vocab = tokenizer.get_vocab()
    if len(vocab) != embedding.weight.shape[0]:
        raise ValueError(
            f"tokenizer has {len(vocab)} words but the model's embedding has {embedding.weight.shape[0]} rows: "
            f"they must come from the same vocabulary"
        )
    vectors, found, lower = read_vectors(path, vocab, embedding.weight.shape[1])
    for special in tokenizer.all_special_ids:
        found[special] = False
    embedding.load_vectors(vectors, found, trainable=trainable)
    regular = len(vocab) - len(tokenizer.all_special_ids)
    report = VectorCoverage(str(path), len(vocab), int(found.sum()), lower, float(found.sum()) / max(regular, 1))
    logger.info("pretrained vectors: %d of %d words found (%.1f%%) in %s", report.found, regular,
                100 * report.coverage, path)
    return report


__all__ = ["VectorCoverage", "read_vectors", "load_glove_into"]
