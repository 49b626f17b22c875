"""``EncoderSpec``: what an index embeds with, and the one place that chooses the encoder doing it.

An ingest, the queries and every Ray actor build their encoder from the same spec: the index's model and pooling,
the precision asked, the batch size and threads. The encoders are backends, strategies in a registry
(``BACKENDS``) tried in order of preference: the first one switched on in the process that serves the spec for
its purpose (ingest or query) and can be made here wins. Torch serves every precision but int8 and is always
on, so a spec always gets an encoder (an int8 one through ONNX Runtime, a core dependency).

- ``onnx-int8``: ``OnnxEncoder`` on the int8 graph quantised from the exported one, last-layer poolings only;
  the passages and queries of an int8 index (``auto`` on a CPU with AVX2 and without bf16: encode/precision.py).
- ``onnx``: ``OnnxEncoder`` (encode/onnx_encoder.py), last-layer poolings only; the passages of an fp32 index
  and the queries of any index (its graph embeds in float32, like the torch fp32 path to a cosine of 0.9999), so
  a query process never imports torch once the graph exists. ``SEARCHAPP_ONNX=0`` switches it off.
- ``openvino``: ``OpenVinoEncoder`` (encode/openvino_encoder.py, the ``openvino`` extra), last-layer poolings
  only; the passages of a bf16 index on a CPU with bf16 instructions (``auto`` there: the CPU's flags decide,
  encode/precision.py), the model compiled under OpenVINO's bf16 hint: the fastest CPU path measured, dense
  nDCG@10 within 0.005 of fp32 on every visible split (docs/performance.md, "Every CPU path in one run"). On
  wherever the package is
  installed; ``SEARCHAPP_OPENVINO=0`` switches it off (``openvino_encoder.DEFAULT``).
- ``torch``: ``TorchEncoder`` (encode/encoder.py), any pooling and precision, on the CPU or a CUDA GPU (``device``).

The device is the spec's too: ``auto`` (a GPU where one is usable, else the CPU), ``cpu``, ``cuda``, ``cuda:N``
(encode/device.py). The ONNX graph runs on the CPU, so on a GPU the passages go through torch; a question is
still embedded through ONNX Runtime (one short text: a GPU would not be faster, and a query stays torch-free).

Another backend is one more entry: what it serves, how it is made, what it prepares.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

from searchapp.encode import onnx_encoder, openvino_encoder
from searchapp.encode.catalog import DEFAULT_MODEL
from searchapp.encode.device import check_device, device_class, resolve_device
from searchapp.encode.encoder import LazyEncoder, TorchEncoder
from searchapp.encode.precision import PRECISIONS, check_precision, native_bf16, resolve
from searchapp.errors import ConfigError, ModelLoadError, first_line
from searchapp.types import EncoderLike

Purpose = Literal["ingest", "query"]


@dataclass(frozen=True)
class EncoderSpec:
    """The settings an encoder is built from. ``precision`` is as asked (``auto``, ``fp32``, ``bf16``, ``fp16``);
    ``device`` as asked (``auto``, ``cpu``, ``cuda``, ``cuda:N``); ``backends`` names the backends that may be
    used (``None``: those switched on in this process)."""

    model: str = DEFAULT_MODEL
    pooling: str = "mean"
    pooling_params: dict[str, Any] = field(default_factory=dict)
    precision: str = "fp32"
    batch_size: int = 32
    threads: int | None = None
    backends: tuple[str, ...] | None = None
    device: str = "cpu"

    def __post_init__(self) -> None:
        check_precision(self.precision)
        check_device(self.device)
        if self.device == "cpu":
            resolve(self.precision, "cpu")  # fp16 is refused for the CPU here, not when the model loads
        if self.precision == "int8" and not onnx_encoder.can_run(self.pooling, self.pooling_params):
            raise ConfigError(f"precision int8 runs through the model's ONNX graph: pooling '{self.pooling}' "
                              f"{'with parameters ' if self.pooling_params else ''}cannot (only "
                              f"{', '.join(onnx_encoder.ONNX_POOLINGS)} without parameters, ONNX Runtime installed)")
        unknown = sorted(set(self.backends or ()) - set(BACKENDS))
        if unknown:
            raise ConfigError(f"unknown encoder backend {', '.join(unknown)}: use {', '.join(BACKENDS)}")

    @property
    def on(self) -> str:
        """The device class passages are embedded on here: ``cpu`` or ``cuda`` (``auto`` resolved)."""
        return device_class(self.device)

    @property
    def embeds_in(self) -> str:
        """The precision passages are embedded in: ``fp32``, ``bf16``, ``fp16`` or ``int8`` (``auto`` resolved for
        this process's device, fp32 where it would be int8 and the int8 graph cannot run this pooling;
        ``DeviceError`` for a GPU this machine does not have)."""
        chosen = resolve(self.precision, resolve_device(self.device))
        if chosen == "int8" and self.precision == "auto" and not (
                onnx_encoder.enabled() and onnx_encoder.can_run(self.pooling, self.pooling_params)):
            return "fp32"
        return chosen

    def pinned(self, gpus: float = 0) -> EncoderSpec:
        """This spec with this process's decisions fixed, so that workers elsewhere (Ray actors) embed as this
        process would: the backends switched on here, and the precision resolved. With ``gpus`` per worker the
        workers embed on their GPU (Ray gives each its own as ``cuda:0``), in fp16 where ``auto`` was asked: every
        CUDA GPU has it, and this process cannot see the workers' GPUs to ask for bf16."""
        backends = tuple(b.name for b in self._allowed())
        if gpus > 0:
            precision = "fp16" if self.precision == "auto" else self.precision
            return replace(self, precision=check_precision(precision), device="cuda", backends=backends)
        return replace(self, precision=self.embeds_in, device="cpu", backends=backends)

    def build(self, purpose: Purpose = "ingest") -> EncoderLike:
        """The encoder of the first backend that serves this spec for ``purpose`` and can be made here;
        ``ModelLoadError`` where none can, with each one's reason (a broken cached graph names its file)."""
        reasons = []
        for backend in self._candidates(purpose):
            try:
                encoder = backend.make(self)
            except ModelLoadError as exc:  # the next backend may serve; the reason is said if none does
                reasons.append(f"{backend.name}: {first_line(exc, 600)}")
                continue
            if encoder is not None:
                return encoder
        why = f" ({'; '.join(reasons)})" if reasons else ""
        raise ModelLoadError(f"{self.model}: none of the encoder backends {', '.join(self._names())} can embed "
                             f"with pooling '{self.pooling}' here{why}")

    def query_encoder(self, ingest: EncoderLike) -> EncoderLike:
        """What embeds queries, given the ingest encoder built from this spec (a ``LazyEncoder`` is unwrapped):
        ``ingest`` itself where queries prefer its backend too (one ONNX session or torch model for both), else
        the encoder of a backend preferred for queries (a bf16 index's questions through ONNX), else ``ingest``."""
        first = next(iter(self._candidates("ingest")), None)
        for backend in self._candidates("query"):
            if backend is first:
                break
            try:
                encoder = backend.make(self)
            except ModelLoadError:  # a preference only: the ingest encoder embeds queries too
                continue
            if encoder is not None:
                return encoder
        return ingest.loaded if isinstance(ingest, LazyEncoder) else ingest

    def prepare(self) -> None:
        """Make ready now what later processes embedding with this spec will want (the ONNX graph, exported
        while an ingest has torch loaded anyway); what fails only means they choose another backend."""
        for backend in self._allowed():
            backend.prepare(self)

    @property
    def ingests_with(self) -> Backend:
        """The backend this process embeds this spec's passages with (the first that serves it for ingest; torch
        serves everything). Cheap: nothing is loaded."""
        return self._candidates("ingest")[0]

    def _allowed(self) -> list[Backend]:
        if self.backends is None:
            return [b for b in BACKENDS.values() if b.switched_on()]
        return [b for b in BACKENDS.values() if b.name in self.backends]

    def _candidates(self, purpose: Purpose) -> list[Backend]:
        return [b for b in self._allowed() if b.serves(self, purpose)]

    def _names(self) -> list[str]:
        return [b.name for b in self._allowed()]


class Backend(Protocol):
    """One way of embedding: what it serves, how its encoder is made, what it prepares ahead."""

    name: str
    # Whose numerics its vectors have: ``torch`` for torch itself and for the graph exported from it that runs in
    # float32 (ONNX, the same vectors to a cosine of 0.9999), else the backend's own name. Vectors of another
    # family are close but not the same, so a cache of evaluated vectors is keyed by it (evaluate/runner.py).
    family: str

    def switched_on(self) -> bool:
        """Whether this process may use it (an environment switch); cheap, imports nothing heavy."""
        ...

    def serves(self, spec: EncoderSpec, purpose: Purpose) -> bool:
        """Whether it can embed for ``spec`` and ``purpose`` (pooling, precision, runtime installed); cheap."""
        ...

    def make(self, spec: EncoderSpec) -> EncoderLike | None:
        """Its encoder for ``spec``, or ``None`` where it cannot be made here (the next backend is tried)."""
        ...

    def made(self, encoder: object) -> bool:
        """Whether ``encoder`` is one of its encoders."""
        ...

    def prepare(self, spec: EncoderSpec) -> None:
        """Get ready what its later encoders for ``spec`` need (nothing for most)."""
        ...


class OnnxBackend:
    """``OnnxEncoder``: the model's exported graph on ONNX Runtime (exported on first need)."""

    name = "onnx"
    family = "torch"

    def switched_on(self) -> bool:
        return onnx_encoder.enabled()

    def serves(self, spec: EncoderSpec, purpose: Purpose) -> bool:
        # The graph embeds in float32 on the CPU: the passages of an fp32 index embedded there, and queries
        # whatever the passages were embedded in (bf16 and fp32 vectors of one model agree to a cosine of 0.9999).
        fits = purpose == "query" or (spec.on == "cpu" and spec.embeds_in == "fp32")
        return fits and onnx_encoder.can_run(spec.pooling, spec.pooling_params)

    def make(self, spec: EncoderSpec) -> EncoderLike | None:
        return onnx_encoder.load(spec.model, spec.pooling, spec.threads, batch_size=spec.batch_size)

    def made(self, encoder: object) -> bool:
        return isinstance(encoder, onnx_encoder.OnnxEncoder) and encoder.precision == "fp32"

    def prepare(self, spec: EncoderSpec) -> None:
        if self.serves(spec, "query"):
            onnx_encoder.prepare_graph(spec.model, spec.pooling, spec.pooling_params)


class OnnxInt8Backend:
    """``OnnxEncoder`` on the int8 graph quantised from the exported one (made on first need): the passages and
    the queries of an int8 index, so that both sides of a comparison are embedded alike and a query process
    loads one graph a quarter the size."""

    name = "onnx-int8"
    # Its numerics changed when each text came to run alone (before, a vector followed its batch's activation
    # scale): a cache of vectors evaluated before is not this graph's.
    family = "onnx-int8-alone"

    def switched_on(self) -> bool:
        return onnx_encoder.enabled()

    def serves(self, spec: EncoderSpec, purpose: Purpose) -> bool:
        return spec.on == "cpu" and spec.embeds_in == "int8" and onnx_encoder.can_run(spec.pooling,
                                                                                       spec.pooling_params)

    def make(self, spec: EncoderSpec) -> EncoderLike | None:
        return onnx_encoder.load(spec.model, spec.pooling, spec.threads, batch_size=spec.batch_size,
                                 precision="int8")

    def made(self, encoder: object) -> bool:
        return isinstance(encoder, onnx_encoder.OnnxEncoder) and encoder.precision == "int8"

    def prepare(self, spec: EncoderSpec) -> None:
        pass


class OpenVinoBackend:
    """``OpenVinoEncoder``: the model compiled by OpenVINO under its bf16 hint (converted on first need)."""

    name = "openvino"
    family = "openvino"

    def switched_on(self) -> bool:
        return openvino_encoder.enabled()

    def serves(self, spec: EncoderSpec, purpose: Purpose) -> bool:
        # Passages only (a question goes through the ONNX graph, which starts faster), on a CPU whose bf16 is
        # native: elsewhere OpenVINO would run the hint in fp32 and the index would record bf16 wrongly.
        fits = purpose == "ingest" and spec.on == "cpu" and spec.embeds_in == "bf16" and native_bf16()
        return fits and openvino_encoder.available(spec.pooling, spec.pooling_params)

    def make(self, spec: EncoderSpec) -> EncoderLike | None:
        return openvino_encoder.load(spec.model, spec.pooling, spec.threads, batch_size=spec.batch_size)

    def made(self, encoder: object) -> bool:
        return isinstance(encoder, openvino_encoder.OpenVinoEncoder)

    def prepare(self, spec: EncoderSpec) -> None:
        pass


class TorchBackend:
    """``TorchEncoder``: torch's forward pass, any pooling and precision (the model loads on first use)."""

    name = "torch"
    family = "torch"

    def switched_on(self) -> bool:
        return True

    def serves(self, spec: EncoderSpec, purpose: Purpose) -> bool:
        # int8 is the quantised graph's alone (torch's own dynamic quantisation loses quality: docs/performance.md).
        return spec.embeds_in != "int8"

    def make(self, spec: EncoderSpec) -> EncoderLike | None:
        return TorchEncoder(model=spec.model, pooling=spec.pooling, pooling_params=spec.pooling_params,
                       batch_size=spec.batch_size, threads=spec.threads, precision=spec.precision,
                       device=spec.device)

    def made(self, encoder: object) -> bool:
        return isinstance(encoder, TorchEncoder)

    def prepare(self, spec: EncoderSpec) -> None:
        pass


# In order of preference; every list of backend names comes from here.
BACKENDS: dict[str, Backend] = {b.name: b for b in (OnnxInt8Backend(), OnnxBackend(), OpenVinoBackend(),
                                                     TorchBackend())}


def backend_of(encoder: object) -> str | None:
    """The name of the backend that made ``encoder`` (``None`` for one none of them made, such as a test's
    fake); ``searchapp.Encoder`` says which it built."""
    named = getattr(encoder, "backend", None)
    if isinstance(named, str) and named in BACKENDS:
        return named
    return next((b.name for b in BACKENDS.values() if b.made(encoder)), None)


def precision_of(encoder: object) -> str | None:
    """What an encoder given from outside says it embeds in: ``fp32``, ``bf16``, ``fp16`` or ``None`` if it does
    not say."""
    given = getattr(encoder, "precision", None)
    return resolve(given, resolve_device(device_of(encoder) or "cpu")) if given in PRECISIONS else None


def device_of(encoder: object) -> str | None:
    """The device class an encoder given from outside embeds on: ``cpu``, ``cuda``, or ``None`` if it does not say
    (an encoder with a precision but no device runs on the CPU)."""
    given = getattr(encoder, "device", None)
    if isinstance(given, str):
        return device_class(given)
    return "cpu" if getattr(encoder, "precision", None) in PRECISIONS else None
