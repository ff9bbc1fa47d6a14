"""Pieces every family's modeling file shares: word embeddings, weight initialisation, input checks, base model.

Remote-code safe: imports torch, transformers and sibling modeling files only.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from transformers import PreTrainedModel
from transformers import initialization as init
from transformers.modeling_outputs import BaseModelOutputWithPooling

from .configuration_common import SentenceEncoderConfig


class WordEmbedding(nn.Embedding):
    """Word vectors whose rows can be frozen one by one (DiSAN spec §2: special and pretrained-only rows fixed).

    ``trainable_rows`` is a saved buffer; gradients of frozen rows are cut in ``forward`` (cheap: it acts on the
    looked-up ``[B, n, d]`` vectors, never on the full table).
    """

    def __init__(self, config: SentenceEncoderConfig):
        super().__init__(config.vocab_size, config.embedding_dim)
        rows = torch.ones(config.vocab_size, dtype=torch.bool)
        if config.zero_special_embeddings:
            rows[self.special_ids(config)] = False
        self.register_buffer("trainable_rows", rows, persistent=True)
        self.weight.requires_grad_(not config.freeze_embeddings)

    @staticmethod
    def special_ids(config) -> list[int]:
        return sorted({i for i in (config.pad_token_id, config.unk_token_id) if i is not None})

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        vectors = super().forward(input_ids)
        if self.weight.requires_grad and not bool(self.trainable_rows.all()):
            keep = self.trainable_rows[input_ids].unsqueeze(-1)
            vectors = torch.where(keep, vectors, vectors.detach())
        return vectors

    @torch.no_grad()
    def load_vectors(self, vectors: torch.Tensor, found: torch.Tensor, trainable: bool = True) -> None:
        """Copy pretrained rows (``found`` bool ``[V]``) into the table; ``trainable=False`` freezes those rows."""
        if vectors.shape != self.weight.shape:
            raise ValueError(
                f"pretrained vectors have shape {tuple(vectors.shape)} but the embedding table is "
                f"{tuple(self.weight.shape)} (vocab_size x embedding_dim)"
            )
        self.weight[found] = vectors[found].to(self.weight.dtype)
        if not trainable:
            self.trainable_rows[found] = False


class SentenceEncoderPreTrainedModel(PreTrainedModel):
    """Shared ``PreTrainedModel`` base: initialisation schemes and input checks (every family subclasses it)."""

    config_class = SentenceEncoderConfig
    main_input_name = "input_ids"
    supports_gradient_checkpointing = False
    # our losses are batch means and ignore the Trainer's num_items_in_batch: without this the Trainer rescales the
    # loss by the number of processes (its token-averaging convention) and DDP gradients come out doubled
    accepts_loss_kwargs = False
    _keys_to_ignore_on_load_unexpected = [r"classifier\..*", r"relatedness\..*"]
    # family classes by auto class, e.g. {"AutoModel": "DiSANModel", "AutoModelForSequenceClassification": ...}
    _auto_class_names: dict = {}

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *args, **kwargs):
        """``PreTrainedModel.from_pretrained``, with a corrupt or truncated weights file reported as a ValueError
        that names the file (instead of the deserializer's internal error)."""
        try:
            model = super().from_pretrained(pretrained_model_name_or_path, *args, **kwargs)
        except Exception as err:
            if type(err).__name__ != "SafetensorError" and "deserializ" not in str(err):
                raise
            raise ValueError(
                f"model.safetensors of {pretrained_model_name_or_path} is corrupt or truncated and cannot be "
                f"loaded ({err}); re-download or re-save the checkpoint"
            ) from err
        # safetensors memory-maps the file, so tensors can start at unaligned addresses, where CPU kernels take other
        # SIMD paths and results differ in the last bits: copy them into fresh memory so that a reloaded model gives
        # bit-identical outputs
        loaded = model[0] if isinstance(model, tuple) else model  # output_loading_info=True returns a pair
        with torch.no_grad():
            for tensor in list(loaded.parameters()) + list(loaded.buffers()):
                if tensor.device.type == "cpu" and tensor.data_ptr() % 64:
                    tensor.data = tensor.data.clone()
        return model

    def post_init(self):
        super().post_init()
        self.check_architectures()
        self.config.auto_map = self.full_auto_map()

    def check_architectures(self) -> None:
        """A config (e.g. a checkpoint's config.json) naming a class this family does not define is an error."""
        known = set(self._auto_class_names.values())
        unknown = [a for a in (self.config.architectures or []) if a not in known]
        if known and unknown:
            raise ValueError(
                f"config names architecture {unknown[0]!r}, which model_type {self.config.model_type!r} does not "
                f"define (known: {sorted(known)}); the checkpoint's config.json is wrong or from another library"
            )

    def full_auto_map(self) -> dict:
        """Every auto class of the family, so any checkpoint opens with AutoConfig, AutoModel and
        AutoModelForSequenceClassification under trust_remote_code (save_pretrained alone records only its own)."""
        model_module = type(self).__module__.rsplit(".", 1)[-1]
        config_module = type(self.config).__module__.rsplit(".", 1)[-1]
        auto_map = {"AutoConfig": f"{config_module}.{type(self.config).__name__}"}
        auto_map.update({auto: f"{model_module}.{name}" for auto, name in self._auto_class_names.items()})
        return auto_map

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        cfg = self.config
        if isinstance(module, WordEmbedding):
            # DiSAN §Training Setup: rows without a pretrained vector ~ U(−0.05, 0.05); PAD/UNK constant zero
            init.uniform_(module.weight, -cfg.embedding_init_range, cfg.embedding_init_range)
            if cfg.zero_special_embeddings and not getattr(module.weight, "_is_hf_initialized", False):
                module.weight[WordEmbedding.special_ids(cfg)] = 0.0
            return
        if isinstance(module, (nn.LayerNorm, nn.BatchNorm1d)):
            if module.weight is not None:
                init.ones_(module.weight)
                init.zeros_(module.bias)
            return
        for name, param in module.named_parameters(recurse=False):
            self._init_parameter(module, name, param)

    def _init_parameter(self, module: nn.Module, name: str, param: nn.Parameter) -> None:
        """One directly-owned parameter. Matrices (and conv kernels) by ``init_scheme``; vectors (biases) zero."""
        scheme = self.config.init_scheme
        if scheme == "uniform":  # NTI code: every parameter ~ U(−0.1, 0.1)
            init.uniform_(param, -self.config.init_range, self.config.init_range)
        elif param.ndim < 2:
            init.zeros_(param)  # "biases 0" (DiSAN; Distance-SAN and DSA: not stated -> 0)
        elif scheme == "glorot":
            init.xavier_uniform_(param)  # DiSAN §Training Setup: Glorot
        elif scheme == "he":
            init.kaiming_normal_(param, nonlinearity="leaky_relu")
            keep = 1.0 - getattr(module, "init_dropout", 0.0)  # DSA App. A: He init × √(1 − dropout), spec A5
            if keep != 1.0 and not getattr(param, "_is_hf_initialized", False):
                param.mul_(math.sqrt(keep))

    # -- inputs ------------------------------------------------------------------------------------------------------
    def check_inputs(self, input_ids, attention_mask) -> tuple[torch.Tensor, torch.Tensor]:
        """Validate ``input_ids``/``attention_mask`` and return (ids, bool mask). Every problem is a ValueError."""
        if input_ids is None:
            raise ValueError("input_ids is required (this model reads word ids, not inputs_embeds)")
        if not torch.is_tensor(input_ids):
            input_ids = torch.as_tensor(input_ids)
        if input_ids.dim() != 2:
            raise ValueError(f"input_ids must be a [batch, length] tensor, got shape {tuple(input_ids.shape)}")
        if input_ids.shape[0] == 0:
            raise ValueError("empty batch: input_ids has batch size 0")
        if input_ids.shape[1] == 0:
            raise ValueError("input_ids has length 0: every text must contain at least one token")
        if input_ids.shape[1] > self.config.max_length:
            raise ValueError(
                f"input of length {input_ids.shape[1]} exceeds max_length={self.config.max_length}; truncate "
                f"in the tokenizer (truncation=True, max_length=...) or raise config.max_length"
            )
        if input_ids.dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.bool):
            raise ValueError(f"input_ids must hold integer token ids, got dtype {input_ids.dtype}")
        low, high = int(input_ids.min()), int(input_ids.max())
        if low < 0 or high >= self.config.vocab_size:
            bad = high if high >= self.config.vocab_size else low
            raise ValueError(
                f"token id {bad} is outside the vocabulary [0, {self.config.vocab_size}): was the text encoded "
                f"with a different tokenizer than this model's?"
            )
        if attention_mask is None:
            mask = torch.ones_like(input_ids, dtype=torch.bool)
            if self.config.pad_token_id is not None:
                mask = input_ids != self.config.pad_token_id
        else:
            if not torch.is_tensor(attention_mask):
                attention_mask = torch.as_tensor(attention_mask)
            if attention_mask.shape != input_ids.shape:
                raise ValueError(
                    f"attention_mask shape {tuple(attention_mask.shape)} does not match input_ids "
                    f"{tuple(input_ids.shape)}"
                )
            mask = attention_mask.to(input_ids.device) > 0
        empty = (~mask.any(1)).nonzero().flatten()
        if len(empty):
            raise ValueError(
                f"row {int(empty[0])} of the batch has no tokens (all padding): empty texts cannot be encoded"
            )
        return input_ids, mask


class SentenceEncoderModel(SentenceEncoderPreTrainedModel):
    """Base-model skeleton: embeddings -> family ``encode(x, mask)`` -> ``BaseModelOutputWithPooling``.

    A family subclass builds ``self.embeddings`` (a :class:`WordEmbedding`) and its encoder, then implements
    ``encode(x [B,n,d_e], mask [B,n]) -> (per-token states [B,n,D_tok], sentence vector [B,D])``.
    """

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embeddings

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.embeddings = value

    def encode(self, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        raise NotImplementedError

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        return_dict: bool | None = None,
        **kwargs,
    ) -> BaseModelOutputWithPooling | tuple:
        input_ids, mask = self.check_inputs(input_ids, attention_mask)
        out = self.encoder_outputs(self.embeddings(input_ids), mask, **kwargs)
        return out if (return_dict if return_dict is not None else self.config.return_dict) else out.to_tuple()

    def encoder_outputs(self, x: torch.Tensor, mask: torch.Tensor, **kwargs) -> BaseModelOutputWithPooling:
        """The model output for embedded tokens ``x`` [B, n, d_e]; a family with extra outputs (DSA's routing
        weights) overrides this, not ``forward``."""
        hidden, pooled = self.encode(x, mask)
        return BaseModelOutputWithPooling(last_hidden_state=hidden, pooler_output=pooled)


__all__ = ["WordEmbedding", "SentenceEncoderPreTrainedModel", "SentenceEncoderModel"]
