"""Shared fixtures: isolated working dir and home, a deterministic fake encoder, the real model once, a throw-away
PostgreSQL server, and indexes on each storage backend (``backend``, ``index_location``, ``index_at``, ``stores``)."""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.fakes import FakeEncoder

if TYPE_CHECKING:
    from searchapp import Index
    from searchapp.store.base import Stores

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"

# The CPU flags the suite runs under (``pytest --cpu-flags``), never the machine's own: behaviour that follows the
# flags (``precision auto``, who embeds bf16 passages) is then the same on every CPU the suite runs on. Handed to
# searchapp (and to every process a test starts) as ``SEARCHAPP_CPU_FLAGS``.
CPU_FLAG_SETS = {
    "no-bf16": "fpu sse sse2 ssse3 sse4_1 sse4_2 avx avx2 fma f16c",  # most laptops and cloud CPUs (AVX2)
    "bf16": "fpu sse sse2 ssse3 sse4_1 sse4_2 avx avx2 fma f16c avx512f avx512bw avx512_bf16 amx_tile amx_bf16",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--cpu-flags", choices=sorted(CPU_FLAG_SETS), default="no-bf16",
                     help="the CPU class the suite runs as: no-bf16 (AVX2, the default) or bf16 (AMX / AVX-512 bf16)")


def pytest_configure(config: pytest.Config) -> None:
    import os

    from searchapp.encode import precision

    os.environ[precision.CPU_FLAGS_ENV] = CPU_FLAG_SETS[config.getoption("--cpu-flags")]
    precision.native_bf16.cache_clear()


def pytest_report_header(config: pytest.Config) -> str:
    return f"cpu flags given: {config.getoption('--cpu-flags')} (not this machine's)"


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test runs in its own folder with its own home, so default index paths never collide."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("SEARCHAPP_INDEX", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)  # the cache under this test's home (paths.cache_root)
    # git's global excludes file under this test's home too, and no system-wide git config (ingest/ignore.py)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    # Queries embed with torch unless a test asks for the ONNX path (tests/integration/test_onnx_encoder.py):
    # with a home per test, every test would otherwise export the model's graph again.
    monkeypatch.setenv("SEARCHAPP_ONNX", "0")
    # Likewise bf16 ingests embed with torch unless a test asks for OpenVINO (tests/integration/test_openvino.py).
    monkeypatch.setenv("SEARCHAPP_OPENVINO", "0")
    monkeypatch.chdir(tmp_path)


@pytest.fixture()
def fake_encoder() -> FakeEncoder:
    return FakeEncoder()


@pytest.fixture()
def fake_model(fake_encoder: FakeEncoder, monkeypatch: pytest.MonkeyPatch) -> FakeEncoder:
    """Every index this test opens without an encoder (the CLI's, say) embeds with ``fake_encoder``: CLI tests of
    dense and hybrid queries without the real model."""
    from searchapp.index import Index

    monkeypatch.setattr(Index, "_make_encoder", lambda self: fake_encoder)
    return fake_encoder


SMALL_TEXTS = [
    "Rotate the signing keys with the rotate command every quarter.",
    "Signing keys expire after a year unless rotated.",
    "The database stores passages and vectors on disk.",
    "Tomatoes want water twice a week in summer.",
    "Keys to the garden shed hang by the door.",
]


@pytest.fixture()
def small_index(tmp_path: Path, fake_encoder: FakeEncoder):  # type: ignore[no-untyped-def]
    """An index at ``tmp_path / "ix"`` holding ``SMALL_TEXTS`` as texts ``t0``... with the fake encoder."""
    from searchapp import Index, IndexConfig

    ix = Index(tmp_path / "ix", create=True, config=IndexConfig(), encoder=fake_encoder)
    ix.add_texts(SMALL_TEXTS, ids=[f"t{i}" for i in range(len(SMALL_TEXTS))])
    yield ix
    ix.close()


@pytest.fixture(scope="session")
def real_encoder():  # type: ignore[no-untyped-def]
    """The bundled all-MiniLM-L6-v2 with mean pooling, loaded once per test session."""
    from searchapp.encode.encoder import TorchEncoder

    enc = TorchEncoder()
    enc.encode(["warm up"])
    return enc


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """One throw-away PostgreSQL 18 (pgvector, pg_textsearch) per test session, on a unix socket only."""
    from tests.pg_server import available, start

    reason = available()
    if reason is not None:
        pytest.skip(reason)
    server = start(tmp_path_factory.mktemp("pg"))
    server.create_database("searchapp_test")
    yield server
    server.stop()


@pytest.fixture()
def pg_url(pg_server, request: pytest.FixtureRequest) -> str:  # type: ignore[no-untyped-def]
    """An index location in a schema of its own, for this test."""
    schema = "t_" + hashlib.sha1(request.node.nodeid.encode()).hexdigest()[:16]
    return pg_server.url("searchapp_test") + f"&schema={schema}"


BACKENDS = ("folder", "postgresql")


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """The storage backend this test runs on: a test asking for it (or for ``index_location``, ``index_at`` or
    ``stores``) runs once per backend. The ``postgresql`` run is skipped only where ``pg_server`` cannot start
    (``tests.pg_server.available()`` says why); CI starts it."""
    return str(request.param)


@pytest.fixture()
def location_of(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Callable[[str], str]:
    """Locations of fresh indexes on this test's backend, by name: a folder ``tmp_path / name``, or a schema of
    its own in the session's PostgreSQL database (``"ix"`` is ``pg_url``'s schema)."""
    if backend == "postgresql":
        url: str = request.getfixturevalue("pg_url")
        return lambda name: url if name == "ix" else f"{url}_{name}"
    return lambda name: str(tmp_path / name)


@pytest.fixture()
def index_location(location_of: Callable[[str], str]) -> str:
    """Where this test's index lives on its backend: ``tmp_path / "ix"`` (as a string), or ``pg_url``."""
    return location_of("ix")


@pytest.fixture()
def index_at(location_of: Callable[[str], str], fake_encoder: FakeEncoder) -> Iterator[Callable[..., Index]]:
    """``index_at(name="ix", encoder=None, **settings)`` creates an index at ``location_of(name)`` on this test's
    backend with ``IndexConfig.from_flat(**settings)`` and ``fake_encoder`` (unless given another) and returns the
    open ``Index``; whatever it opened is closed after the test."""
    from searchapp import Index, IndexConfig

    opened: list[Index] = []

    def create(name: str = "ix", encoder: Any = None, **settings: Any) -> Index:
        ix = Index(location_of(name), create=True, config=IndexConfig.from_flat(**settings),
                   encoder=fake_encoder if encoder is None else encoder)
        opened.append(ix)
        return ix

    yield create
    for ix in opened:
        ix.close()


@pytest.fixture()
def stores(index_at: Callable[..., Index]) -> Stores:
    """The opened ``Stores`` of a fresh, empty index (settings stored, ``fake_encoder``'s dimension) on this
    test's backend."""
    return index_at().stores


def small_fetches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Streamed reads (export) fetch 2 rows at a time from now on, so that a read which were not one snapshot would
    see a writer's rows in a later fetch: ``STREAM_ROWS`` (store/base.py) set in every store module loaded that
    reads it, whichever backend module that is."""
    for name, module in list(sys.modules.items()):
        if name.startswith("searchapp.store.") and hasattr(module, "STREAM_ROWS"):
            monkeypatch.setattr(module, "STREAM_ROWS", 2)
