"""Publishing checkpoints to the Hugging Face hub: model, tokenizer, code files, then the model card last."""

from __future__ import annotations

import json
import os

from huggingface_hub import CommitOperationAdd
from transformers import AutoConfig, AutoModel, AutoModelForSequenceClassification, AutoTokenizer
from transformers.utils import hub as transformers_hub


def default_card_path(checkpoint_dir: str, cards_root: str = "hub_cards") -> str:
    """``hub_cards/<name>/README.md`` where ``<name>`` is the results file's recipe name or the directory name."""
    name = os.path.basename(os.path.normpath(checkpoint_dir))
    results = os.path.join(checkpoint_dir, "results.json")
    if os.path.exists(results):
        with open(results, encoding="utf-8") as handle:
            name = json.load(handle).get("name") or name
    return os.path.join(cards_root, name, "README.md")


def load_checkpoint(checkpoint_dir: str):
    """(model, tokenizer) of a checkpoint directory; the head class follows the saved ``architectures``."""
    if not os.path.isfile(os.path.join(checkpoint_dir, "config.json")):
        raise FileNotFoundError(f"{checkpoint_dir} is not a checkpoint directory (no config.json)")
    if not os.path.isfile(os.path.join(checkpoint_dir, "tokenizer.json")):
        raise FileNotFoundError(
            f"{checkpoint_dir} has no tokenizer (tokenizer.json): save the tokenizer with the model "
            f"(scripts/train.py does) before pushing or loading it"
        )
    config = AutoConfig.from_pretrained(checkpoint_dir)
    head = any(a.endswith("ForSequenceClassification") for a in (config.architectures or []))
    auto = AutoModelForSequenceClassification if head else AutoModel
    return auto.from_pretrained(checkpoint_dir), AutoTokenizer.from_pretrained(checkpoint_dir)


def push_card(repo_id: str, card_path: str, revision: str | None = None, token: str | None = None):
    """Upload ``card_path`` as the repo's README.md (after the model and tokenizer, which write their own)."""
    if not os.path.isfile(card_path):
        raise FileNotFoundError(
            f"no model card at {card_path}: generate it with `python scripts/make_card.py <results.json>`"
        )
    return transformers_hub.hf_api().create_commit(
        repo_id=repo_id, operations=[CommitOperationAdd(path_in_repo="README.md", path_or_fileobj=card_path)],
        commit_message="Upload model card", token=token, revision=revision,
    )


def push_checkpoint(checkpoint_dir: str, repo_id: str, *, private: bool | None = None, revision: str | None = None,
                    token: str | None = None, card_path: str | None = None) -> str:
    """Push a checkpoint directory as a complete hub repo: ``config.json`` (full ``auto_map``),
    ``model.safetensors``, the code files for ``trust_remote_code``, the tokenizer, and the card last."""
    card_path = card_path or default_card_path(checkpoint_dir)
    if not os.path.isfile(card_path):  # fail before uploading anything
        raise FileNotFoundError(
            f"no model card at {card_path}: generate it with `python scripts/make_card.py "
            f"{os.path.join(checkpoint_dir, 'results.json')}`"
        )
    model, tokenizer = load_checkpoint(checkpoint_dir)
    model.push_to_hub(repo_id, private=private, revision=revision, token=token,
                      commit_message="Upload model (modeling-disan)")
    tokenizer.push_to_hub(repo_id, revision=revision, token=token, commit_message="Upload tokenizer")
    push_card(repo_id, card_path, revision=revision, token=token)
    return repo_id


__all__ = ["push_checkpoint", "push_card", "load_checkpoint", "default_card_path"]
