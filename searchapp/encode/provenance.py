"""What embedded an index's vectors: the precisions, device classes and encoder backends of its ingests.

An index records them in its settings, one row each (a JSON list, sorted; more than one name when runs differed:
``bf16+fp32``), just before the first write of a run that stores vectors, so that a run failing later (a full disk
say) leaves none of its vectors unrecorded. ``searchapp status`` shows them; nothing decides from them, and an index
that has never embedded records nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, fields

from searchapp.encode.encoder import LazyEncoder
from searchapp.encode.spec import EncoderSpec, backend_of, device_of, precision_of
from searchapp.errors import SchemaError
from searchapp.types import EncoderLike

# The settings rows, by field of :class:`Provenance`.
ROWS = {"precision": "vectors_precision", "device": "vectors_device", "encoder": "vectors_encoder"}


@dataclass(frozen=True)
class EmbeddedWith:
    """What one run embeds in, on and with: ``fp32``/``bf16``/``fp16``, ``cpu``/``cuda``, the encoder backend
    (encode/spec.py: ``onnx``, ``openvino``, ``torch``); ``None`` for what an encoder given from outside does not
    say."""

    precision: str | None
    device: str | None
    encoder: str | None

    @classmethod
    def of(cls, encoder: EncoderLike, spec: EncoderSpec | None) -> EmbeddedWith:
        """What ``encoder`` embeds with: a ``LazyEncoder`` is the one ``spec`` builds (loaded by now: a backend
        that could not be made here gave way to the next, and the backend named is the one that did); any other
        was given from outside (``spec`` is ``None``), and only what it says of itself is known."""
        if spec is not None and isinstance(encoder, LazyEncoder):
            return cls(spec.embeds_in, spec.on, backend_of(encoder.loaded))
        return cls(precision_of(encoder), device_of(encoder), backend_of(encoder))

    @classmethod
    def pinned(cls, spec: EncoderSpec) -> EmbeddedWith:
        """What workers embed with from a spec pinned for them (``EncoderSpec.pinned``: its precision resolved, its
        device their class, and they build the backend it prefers)."""
        return cls(spec.precision, spec.device, spec.ingests_with.name)


@dataclass(frozen=True)
class Provenance:
    """What an index's stored vectors were embedded in, on and with, each sorted (empty: not recorded)."""

    precision: tuple[str, ...] = ()
    device: tuple[str, ...] = ()
    encoder: tuple[str, ...] = ()

    @classmethod
    def from_settings(cls, settings: Mapping[str, str]) -> Provenance:
        """Read from an index's settings rows; ``SchemaError`` naming a row that is not a JSON list of names."""
        found: dict[str, tuple[str, ...]] = {}
        for name, row in ROWS.items():
            try:
                value = json.loads(settings.get(row, "[]"))
            except ValueError:
                value = None
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise SchemaError(f"settings row {row}: {settings[row]!r} is not a JSON list of names")
            found[name] = tuple(value)
        return cls(**found)

    def recording(self, run: EmbeddedWith) -> dict[str, str]:
        """The settings rows that add what ``run`` embeds with to this record (none where it holds it all)."""
        rows = {}
        for f in fields(self):
            held, used = getattr(self, f.name), getattr(run, f.name)
            if used is not None and used not in held:
                rows[ROWS[f.name]] = json.dumps(sorted({*held, used}))
        return rows
