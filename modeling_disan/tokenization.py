"""Word-level tokenizer built from a training split (DESIGN: data flow), saved with every checkpoint.

``[PAD]`` = 0, ``[UNK]`` = 1, ``[SEP]`` = 2; pairs are ``A [SEP] B`` with token type ids 0 (A and the separator) and
1 (B). Words are split PTB-style (``isn't`` → ``is n't``, ``3.5`` stays one token), optionally lower-cased.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers, processors
from transformers import PreTrainedTokenizerFast

PAD, UNK, SEP = "[PAD]", "[UNK]", "[SEP]"
SPECIAL_TOKENS = (PAD, UNK, SEP)

# PTB-like word split: clitics (n't, 's, 're, ...), numbers with inner . or , kept whole, hyphenated words whole,
# every other non-space, non-word character on its own.
PTB_LIKE = (
    r"\w+(?=n't\b)|n't\b|\w+(?='(?:s|re|ve|ll|d|m)\b)|'(?:s|re|ve|ll|d|m)\b"
    r"|\d+(?:[.,]\d+)+|\w+(?:-\w+)*|[^\w\s]"
)


def _pre_tokenizer():
    return pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Split(Regex(PTB_LIKE), behavior="isolated")]
    )


def _normalizer(lowercase: bool):
    steps = [normalizers.NFKC()] + ([normalizers.Lowercase()] if lowercase else [])
    return normalizers.Sequence(steps)


def split_words(texts: Iterable[str], lowercase: bool) -> Iterable[list[str]]:
    """The tokenizer's own word split, for counting a vocabulary."""
    norm, pre = _normalizer(lowercase), _pre_tokenizer()
    for text in texts:
        yield [word for word, _ in pre.pre_tokenize_str(norm.normalize_str(text))]


def build_vocab(texts: Iterable[str], lowercase: bool = True, min_freq: int = 1, max_size: int | None = None,
                extra_words: Iterable[str] = ()) -> dict[str, int]:
    """Vocabulary of the training texts (most frequent first, ties alphabetical), special tokens first."""
    counts = Counter(word for words in split_words(texts, lowercase) for word in words)
    words = sorted((w for w, c in counts.items() if c >= min_freq and w not in SPECIAL_TOKENS),
                   key=lambda w: (-counts[w], w))
    if max_size is not None:
        words = words[: max(0, max_size - len(SPECIAL_TOKENS))]
    vocab = {tok: i for i, tok in enumerate(SPECIAL_TOKENS)}
    for word in list(words) + [w for w in extra_words if w not in counts]:
        vocab.setdefault(word, len(vocab))
    return vocab


def tokenizer_from_vocab(vocab: dict[str, int], lowercase: bool = True, model_max_length: int = 512):
    """A ``PreTrainedTokenizerFast`` (saved as tokenizer.json, reloaded by ``AutoTokenizer``) over ``vocab``."""
    for i, tok in enumerate(SPECIAL_TOKENS):
        if vocab.get(tok) != i:
            raise ValueError(f"vocabulary must map {tok} to id {i}, got {vocab.get(tok)}")
    tok = Tokenizer(models.WordLevel(vocab, unk_token=UNK))
    tok.normalizer = _normalizer(lowercase)
    tok.pre_tokenizer = _pre_tokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="$A:0", pair=f"$A:0 {SEP}:0 $B:1", special_tokens=[(SEP, vocab[SEP])]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token=UNK,
        pad_token=PAD,
        sep_token=SEP,
        model_max_length=model_max_length,
        padding_side="right",
        model_input_names=["input_ids", "token_type_ids", "attention_mask"],
    )


def build_tokenizer(texts: Iterable[str], lowercase: bool = True, min_freq: int = 1, max_size: int | None = None,
                    extra_words: Iterable[str] = (), model_max_length: int = 512):
    """Build the word-level tokenizer from training texts (pairs: pass both sides' texts)."""
    vocab = build_vocab(texts, lowercase, min_freq, max_size, extra_words)
    return tokenizer_from_vocab(vocab, lowercase, model_max_length)


__all__ = ["PTB_LIKE", "SPECIAL_TOKENS", "split_words", "build_vocab", "tokenizer_from_vocab", "build_tokenizer"]
