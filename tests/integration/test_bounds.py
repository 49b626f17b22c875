"""Every integer the library, the CLI or the HTTP API is given has bounds, and a value outside them (2**63 and up,
a negative where none is valid, a string or a bool for a number) is one line / HTTP 422, never an OverflowError,
HTTP 500 or a traceback (issue: hardening, round 3)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from searchapp import Index, IndexConfig
from searchapp.cli import app, commands
from searchapp.errors import ConfigError
from searchapp.server.app import create_app
from searchapp.setting import MAX_QUERY_TERMS
from searchapp.types import MAX_WHOLE

BIG = 2**63  # one past what SQLite, PostgreSQL's bigint and FAISS's ids hold
runner = CliRunner()


@pytest.fixture()
def ix(tmp_path: Path, fake_encoder) -> Index:  # type: ignore[no-untyped-def]
    index = Index(tmp_path / "ix", create=True, config=IndexConfig(), encoder=fake_encoder)
    index.add_texts(["rotate the signing keys", "water the garden"], ids=["a", "b"])
    yield index
    index.close()


CALLS: dict[str, Callable[[Index], Any]] = {
    "k": lambda ix: ix.search("keys", k=BIG, mode="lexical"),
    "offset": lambda ix: ix.search("keys", offset=BIG, mode="lexical"),
    "offset hybrid": lambda ix: ix.search("keys", offset=BIG),
    "k0": lambda ix: ix.search("keys", k0=BIG),
    "rrf_k": lambda ix: ix.search("keys", rrf_k=BIG, method="rrf"),
    "start": lambda ix: ix.document("a", start=BIG),
    "max_chars": lambda ix: ix.document("a", max_chars=BIG),
    "passage_id": lambda ix: ix.context(BIG),
    "chars": lambda ix: ix.context(1, chars=BIG),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_python_api_refuses_integers_past_int64_naming_the_bound(ix: Index, name: str) -> None:
    with pytest.raises(ConfigError, match=str(MAX_WHOLE)):
        CALLS[name](ix)


def test_the_largest_bound_itself_is_accepted(ix: Index) -> None:
    # offset + k past int64 is clamped, not an overflow: the first page is simply empty.
    assert ix.search("keys", k=MAX_WHOLE, offset=MAX_WHOLE, mode="lexical") == []
    assert ix.search("keys", k=MAX_WHOLE, mode="lexical")[0].path == "a"
    assert ix.document("a", start=MAX_WHOLE, max_chars=MAX_WHOLE).text == ""


@pytest.mark.parametrize("passage_id", [-1, 0, "1", 1.0, True])
def test_a_passage_id_that_is_not_a_positive_whole_number_is_a_type_error(ix: Index, passage_id: Any) -> None:
    # ix.context("1") said "no passage with id 1" although passage 1 exists: a wrong type, not a missing passage.
    with pytest.raises(ConfigError, match="passage_id must be a whole number"):
        ix.context(passage_id)
    assert ix.context(1).text == "rotate the signing keys"


@pytest.mark.parametrize("kwargs, bound", [
    ({"lock_wait": 86400000000}, "10000000"), ({"lock_wait": float("nan")}, "10000000"),
    ({"batch_size": BIG}, str(MAX_WHOLE)), ({"threads": BIG}, "2147483647"),
])
def test_index_settings_name_their_bound(ix: Index, kwargs: dict[str, Any], bound: str) -> None:
    with pytest.raises(ConfigError, match=bound):
        Index(ix.location, **kwargs)


@pytest.mark.parametrize("value", [BIG, float("nan"), 1e308])
def test_max_file_mb_is_bounded(ix: Index, tmp_path: Path, value: float) -> None:
    (tmp_path / "docs").mkdir()
    with pytest.raises(ConfigError, match="max_file_mb must be a number of MB in"):
        ix.ingest(tmp_path / "docs", max_file_mb=value)


def _http(ix: Index) -> TestClient:
    return TestClient(create_app(ix), base_url="http://localhost", raise_server_exceptions=False)


@pytest.mark.parametrize("path", [
    f"/documents/a?start={BIG}", f"/passages/{BIG}/context", "/passages/-1/context", "/passages/0/context",
    f"/passages/1/context?chars={BIG}", f"/documents/a?max_chars={BIG}",
])
def test_http_routes_refuse_integers_outside_their_bounds_with_422(ix: Index, path: str) -> None:
    res = _http(ix).get(path)
    assert res.status_code == 422, res.text
    assert res.json()["error"]["type"] == "invalid_request_error"


@pytest.mark.parametrize("body", [
    {"k": BIG}, {"offset": BIG}, {"fusion": {"rrf_k": BIG}}, {"fusion": {"k0": BIG}}, {"fusion": {"rrf_k": 10**30}},
    {"offset": True}, {"k": True}, {"k": "3"}, {"min_score": "0.5"}, {"explain": "yes"}, {"fusion": {"alpha": "1"}},
])
def test_search_bodies_are_strict_and_bounded(ix: Index, body: dict[str, Any]) -> None:
    # `"offset": true` paged to the second hit and `"min_score": "0.5"` filtered as 0.5: both are client mistakes.
    client = _http(ix)
    for route, extra in (("/search", {"query": "keys"}), ("/search/batch", {"queries": ["keys"]})):
        res = client.post(route, json={**extra, **body})
        assert res.status_code == 422, (route, body, res.text)
    # A whole number where a float is asked is still a number.
    assert client.post("/search", json={"query": "keys", "min_score": 0, "fusion": {"alpha": 1}}).status_code == 200


def _numeric_options() -> list[tuple[str, Any]]:
    out = []
    for name, command in sorted(commands().items()):
        for param in command.params:
            if param.param_type_name == "option" and param.type_descriptor.annotation in (int, float):
                out.append((name, param))
    return out


def test_every_numeric_cli_option_of_every_command_has_an_upper_bound() -> None:
    # Unbounded, a value past int64 ran into the library (a 176-line traceback for `query -k 2**63`).
    unbounded = [f"{cmd} {p.opts[0]}" for cmd, p in _numeric_options()
                 if p.max is None and p.opts[0] != "--lexical-spread"]
    assert unbounded == []
    assert len(_numeric_options()) > 20  # the walk found the options


@pytest.mark.parametrize("args", [
    ["query", "x", "-k", str(BIG)], ["query", "x", "--offset", str(BIG)], ["query", "x", "--k0", str(BIG)],
    ["query", "x", "--rrf-k", str(BIG)], ["query", "x", "--offset", "-1"], ["remove", "x", "--wait", "86400000000"],
    ["ingest", "docs", "--batch-size", str(BIG)], ["ingest", "docs", "--threads", str(BIG)],
    ["ingest", "docs", "--max-file-mb", "1e308"], ["serve", "--max-body-mb", "1e308"],
])
def test_cli_integers_out_of_range_are_usage_errors_naming_the_bound(tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "docs").mkdir()
    res = runner.invoke(app, args, env={"COLUMNS": "400"})
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output and "Invalid value" in res.output
    assert "than or equal to" in res.output  # the bound named


@pytest.mark.parametrize("settings", [{"nprobe": BIG}, {"nprobe": -1}, {"ivf_threshold": BIG}, {"ivf_threshold": 0}])
def test_vector_index_settings_are_bounded(tmp_path: Path, fake_encoder, settings: dict[str, int]) -> None:  # type: ignore[no-untyped-def]
    # FAISS takes nprobe as a C int: 2**63 was an OverflowError at the first IVF search.
    with pytest.raises(ConfigError, match="must be a whole number in"):
        Index(tmp_path / "new", create=True, config=IndexConfig.from_flat(**settings), encoder=fake_encoder)
    assert not (tmp_path / "new").exists()


def _words(n: int) -> str:
    return " ".join(f"w{i}" for i in range(n - 1)) + " keys"


@pytest.mark.parametrize("mode", ["lexical", "hybrid"])
def test_a_query_s_terms_after_analysis_are_bounded_on_every_surface(ix: Index, mode: str) -> None:
    # 10,000 characters of Chinese are within the HTTP bound on characters but thousands of two-letter units for
    # the lexical engine: the bound counts the terms that reach it, whatever the script.
    assert ix.search(_words(MAX_QUERY_TERMS), mode=mode)[0].path == "a"
    for query in (_words(MAX_QUERY_TERMS + 1), "".join(chr(0x4E00 + i) for i in range(3000))):
        with pytest.raises(ConfigError, match=f"at most {MAX_QUERY_TERMS:,}"):
            ix.search(query, mode=mode)
    assert ix.search(_words(MAX_QUERY_TERMS + 1), mode="dense")  # the vectors take any query
    over = _words(MAX_QUERY_TERMS + 1)
    res = runner.invoke(app, ["query", over, "--mode", mode, "--index", str(ix.location)])
    assert res.exit_code == 2 and "distinct terms" in res.stderr and "Traceback" not in res.output
    client = TestClient(create_app(ix), base_url="http://localhost")
    r = client.post("/search", json={"query": over, "mode": mode})
    assert r.status_code == 400 and "distinct terms" in r.json()["error"]["message"]


def test_long_cjk_and_mixed_queries_run_in_bounded_time_on_every_backend(index_at) -> None:  # type: ignore[no-untyped-def]
    # A fuzz of what reaches the lexical engine: random runs of Chinese, Japanese, Thai and Latin words up to the
    # HTTP bound of 10,000 characters, each either searched or refused in one line (more than MAX_QUERY_TERMS
    # distinct terms after analysis); the whole run under a wall-clock bound (PostgreSQL's work is in its own
    # process, so CPU time would not see it). A 10,000-character Chinese query took 7.2 s on 11,000 passages.
    import random
    import time

    ix = index_at()
    rng = random.Random(53)
    scripts = [(0x4E00, 0x9FFF), (0x3040, 0x30FF), (0x0E01, 0x0E30)]

    def text(n: int) -> str:
        out = []
        while sum(map(len, out)) < n:
            low, high = rng.choice(scripts)
            out.append("".join(chr(rng.randint(low, high)) for _ in range(rng.randint(1, 40))))
            out.append(" " + " ".join(rng.choice(["keys", "rotate", "東京", "の", "signing"]) for _ in range(3)) + " ")
        return "".join(out)[:n]

    ix.add_texts([text(400) for _ in range(200)], ids=[f"d{i}" for i in range(200)])
    began = time.monotonic()
    answered = refused = 0
    for n in [10, 100, 1000, 3000, 10_000] * 4:
        query = text(n)
        for mode in ("lexical", "hybrid"):
            try:
                ix.search(query, mode=mode, k=10)
                answered += 1
            except ConfigError as exc:
                assert "distinct terms" in str(exc) and "\n" not in str(exc)
                refused += 1
    assert answered and refused
    assert time.monotonic() - began < 60
