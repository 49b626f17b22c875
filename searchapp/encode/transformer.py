"""The model's forward pass: texts in, hidden states of every layer and the attention mask out.

This is the only module that imports torch and transformers at import time; everything else imports it lazily
so that ``searchapp --help`` and BM25-only work stay fast.
"""

from __future__ import annotations

import inspect
import os
from dataclasses import dataclass

import torch

from searchapp.encode.catalog import model_dir, model_max_tokens
from searchapp.encode.precision import resolve as resolve_precision
from searchapp.encode.tokenizer import SPECIAL_TOKENS, load_tokenizer
from searchapp.errors import ConfigError, ModelLoadError

# Never reach for a model hub: weights come from local directories only.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@dataclass(frozen=True)
class LayerStates:
    """Output of one forward pass.

    ``hidden_states``: float32 tensor ``(L + 1, B, T, d)``, index 0 the embedding layer; ``(1, B, T, d)``, the
    last layer alone, from ``forward(..., all_layers=False)``.
    ``attention_mask``: int64 tensor ``(B, T)``, 1 for real tokens (special tokens included), 0 for padding.
    """

    hidden_states: torch.Tensor
    attention_mask: torch.Tensor


class TransformerModel:
    """A BERT-style encoder loaded from a local directory, run without gradients on the CPU."""

    def __init__(self, model: str, threads: int | None = None, precision: str = "fp32",
                 attention: str | None = None) -> None:
        """``attention``: transformers' ``attn_implementation`` (``"eager"`` for the ONNX export, whose fuser
        knows that form); its default otherwise."""
        from transformers import AutoModel
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        if threads:
            torch.set_num_threads(threads)
        path = model_dir(model)
        try:
            extra = {"attn_implementation": attention} if attention else {}
            self.model = AutoModel.from_pretrained(str(path), local_files_only=True, **extra)
        except (OSError, ValueError) as exc:
            raise ModelLoadError(f"{path}: cannot load model: {exc}") from exc
        self.model.eval()
        self.precision = resolve_precision(precision)
        self.tokenizer = load_tokenizer(model)
        self.max_length = model_max_tokens(model)
        # BERT takes token_type_ids; MPNet and RoBERTa-style models do not.
        self.token_types = "token_type_ids" in inspect.signature(self.model.forward).parameters
        self.dimension = int(self.model.config.hidden_size)
        self.num_layers = int(self.model.config.num_hidden_layers)

    @property
    def max_text_tokens(self) -> int:
        """Word pieces a text may have, special tokens excluded."""
        return self.max_length - SPECIAL_TOKENS

    def forward(self, texts: list[str], truncate: bool = False, all_layers: bool = True) -> LayerStates:
        """Run the model on ``texts`` (padded to the longest); with ``all_layers`` false, keep only the last
        layer's states (a pooling of the last layer needs no more, and the other layers cost a copy each).

        A text longer than the model's limit raises ``ConfigError`` unless ``truncate`` is set: passages are
        split to fit beforehand, so only queries may be cut, and only when the caller says so.
        """
        encodings = self.tokenizer.encode_batch(texts)
        longest = max((len(e.ids) for e in encodings), default=0)
        if longest > self.max_length:
            if not truncate:
                raise ConfigError(
                    f"text of {longest} tokens exceeds the model limit of {self.max_length}; split it first"
                )
            for e in encodings:
                e.truncate(self.max_length)
            longest = self.max_length
        batch = len(encodings)
        ids = torch.zeros((batch, longest), dtype=torch.long)
        mask = torch.zeros((batch, longest), dtype=torch.long)
        for i, e in enumerate(encodings):
            n = len(e.ids)
            ids[i, :n] = torch.tensor(e.ids, dtype=torch.long)
            mask[i, :n] = 1
        bf16 = self.precision == "bf16"
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            extra = {"token_type_ids": torch.zeros_like(ids)} if self.token_types else {}
            out = self.model(input_ids=ids, attention_mask=mask, output_hidden_states=all_layers, **extra)
        # Pooling always runs in float32, whatever the forward pass used.
        if not all_layers:
            return LayerStates(out.last_hidden_state.float().unsqueeze(0), mask)
        return LayerStates(torch.stack(out.hidden_states).float(), mask)

