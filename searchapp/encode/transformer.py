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


def _cast_linear_weights(model: torch.nn.Module, dtype: torch.dtype) -> None:
    """Store every Linear layer's weight and bias in ``dtype`` once, for a model that runs under autocast.

    Autocast casts a float32 weight to bf16 on every call and drops the copy when its context ends: on short
    batches those casts were most of a bf16 forward pass, which made bf16 slower than fp32 on small files, and the
    casts doubled the peak memory (docs/performance.md, "Every CPU path in one run", "bf16 on small inputs"). Cast
    once, the weights round exactly as autocast rounds them, so the vectors are unchanged; the other layers
    (embeddings, LayerNorm) stay float32, as autocast keeps them.
    """
    for module in model.modules():
        if isinstance(module, torch.nn.Linear):
            module.weight.data = module.weight.data.to(dtype)
            if module.bias is not None:
                module.bias.data = module.bias.data.to(dtype)


class TransformerModel:
    """A BERT-style encoder loaded from a local directory, run without gradients on the CPU or a CUDA GPU."""

    def __init__(self, model: str, threads: int | None = None, precision: str = "fp32",
                 attention: str | None = None, device: str = "cpu") -> None:
        """``attention``: transformers' ``attn_implementation`` (``"eager"`` for the ONNX export, whose fuser
        knows that form); its default otherwise. ``device``: ``cpu``, ``cuda:N`` (resolved: encode/device.py)."""
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
        self.device = torch.device(device)
        self.cuda = self.device.type == "cuda"
        # int8 is the quantised ONNX graph's alone (``TorchEncoder`` refuses it); where ``auto`` means int8 on this
        # CPU and torch embeds all the same (a pooling the graph cannot run), torch runs in fp32.
        resolved = resolve_precision(precision, device)
        self.precision = "fp32" if resolved == "int8" else resolved
        if self.cuda:
            self.model.to(self.device)
        elif self.precision == "bf16":
            _cast_linear_weights(self.model, torch.bfloat16)
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

    def last_layer(self) -> tuple[torch.nn.Module, list[str], tuple[torch.Tensor, ...]]:
        """For exporters: a module of the model's positional inputs returning the last layer's states ``(B, T, d)``,
        its input names in order (ids, mask[, token types]) and a sample input for tracing."""
        names = ["input_ids", "attention_mask"] + (["token_type_ids"] if self.token_types else [])
        inner = self.model

        class LastLayer(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.inner = inner

            def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
                return self.inner(**dict(zip(names, inputs, strict=True))).last_hidden_state

        sample = torch.ones((2, 8), dtype=torch.long)
        return LastLayer(), names, tuple(sample if n != "token_type_ids" else torch.zeros_like(sample) for n in names)

    def inputs(self, texts: list[str], truncate: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """Token ids and attention mask of ``texts`` padded to the longest: int64 ``(B, T)`` each, on the host
        (in pinned memory for a GPU, so that their copy to it does not wait for the host).

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
        ids = torch.zeros((batch, longest), dtype=torch.long, pin_memory=self.cuda)
        mask = torch.zeros((batch, longest), dtype=torch.long, pin_memory=self.cuda)
        for i, e in enumerate(encodings):
            n = len(e.ids)
            ids[i, :n] = torch.tensor(e.ids, dtype=torch.long)
            mask[i, :n] = 1
        return ids, mask

    def run(self, ids: torch.Tensor, mask: torch.Tensor, all_layers: bool = True) -> LayerStates:
        """The forward pass over :meth:`inputs`; the states and mask on the model's device. On a GPU this returns
        once the work is queued: the caller may prepare the next batch while it runs."""
        ids = ids.to(self.device, non_blocking=True)
        mask = mask.to(self.device, non_blocking=True)
        half = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(self.precision)
        with torch.inference_mode(), torch.autocast(self.device.type, dtype=half or torch.bfloat16,
                                                    enabled=half is not None):
            extra = {"token_type_ids": torch.zeros_like(ids)} if self.token_types else {}
            out = self.model(input_ids=ids, attention_mask=mask, output_hidden_states=all_layers, **extra)
        # Pooling always runs in float32, whatever the forward pass used.
        if not all_layers:
            return LayerStates(out.last_hidden_state.float().unsqueeze(0), mask)
        return LayerStates(torch.stack(out.hidden_states).float(), mask)

    def forward(self, texts: list[str], truncate: bool = False, all_layers: bool = True) -> LayerStates:
        """Run the model on ``texts`` (padded to the longest); with ``all_layers`` false, keep only the last
        layer's states (a pooling of the last layer needs no more, and the other layers cost a copy each).
        ``ConfigError`` for a text over the model's limit unless ``truncate`` (see :meth:`inputs`)."""
        return self.run(*self.inputs(texts, truncate), all_layers=all_layers)
