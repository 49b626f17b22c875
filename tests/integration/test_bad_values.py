"""Bad values get one line naming the thing and the reason, never a traceback (issue: hardening, round 2)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from searchapp import Index, IndexConfig
from searchapp.cli import app
from searchapp.errors import ConfigError

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("args", [
    ["ingest", "docs", "--threads", "-2"],
    ["ingest", "docs", "--batch-size", "0"],
    ["query", "x", "-k", "0"],
    ["serve", "--port", "70000"],
    ["serve", "--port", "-1"],
    ["serve", "--max-body-mb", "-1"],
])
def test_out_of_range_options_are_usage_errors(tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("some text")
    res = runner.invoke(app, args)
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output and "Invalid value" in res.output


def test_an_index_path_that_is_a_file_and_a_missing_query(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    res = runner.invoke(app, ["status", "--index", "afile"])
    assert res.exit_code == 2 and "afile is a file, not an index folder" in res.stderr
    res = runner.invoke(app, ["query"])
    assert res.exit_code == 2 and "give a query TEXT or --file FILE" in res.output


def test_a_query_file_of_blank_lines_is_an_error(tmp_path: Path, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    with Index(tmp_path / ".searchapp", create=True, config=IndexConfig(), encoder=fake_encoder) as ix:
        ix.add_texts(["some text"], ids=["a"])
    (tmp_path / "blank.txt").write_text("\n  \n\n")
    res = runner.invoke(app, ["query", "--file", "blank.txt", "--mode", "lexical"])
    assert res.exit_code == 2 and "no query in it" in res.stderr


def test_a_pooling_layer_outside_the_model_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("some text")
    res = runner.invoke(app, ["ingest", "docs", "--pooling", "layers", "--pooling-param", "layers=-99"])
    assert res.exit_code == 2
    assert "layers must be a non-empty list of integers (e.g. layers=-2,-1), got -99" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_serve_on_a_port_in_use_fails_before_announcing(tmp_path: Path) -> None:
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    port = busy.getsockname()[1]
    try:
        res = subprocess.run([sys.executable, "-m", "searchapp", "serve", "--index", str(tmp_path / "ix"), "--port",
                              str(port)], capture_output=True, text=True, timeout=120,
                             env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)})
    finally:
        busy.close()
    assert res.returncode == 2 and "cannot listen" in res.stderr and "serving" not in res.stderr
    assert "Traceback" not in res.stderr and not (tmp_path / "ix").exists()


def test_python_api_inputs_are_validated(tmp_path: Path, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    with Index(tmp_path / "ix", create=True, config=IndexConfig(), encoder=fake_encoder) as ix:
        ix.add_texts(["rotate the keys"], ids=["a"])
        for call, match in [
            (lambda: ix.remove("a"), "ids must be a list"),
            (lambda: ix.search_batch("rotate keys"), "queries must be a list"),
            (lambda: ix.add_texts("rotate keys"), "texts must be a list"),
            (lambda: ix.search(None), "the query must be a string"),  # type: ignore[arg-type]
            (lambda: ix.search("x", k="3"), "k must be a whole number"),  # type: ignore[arg-type]
            (lambda: ix.search("x", k=2.5), "k must be a whole number"),  # type: ignore[arg-type]
            (lambda: ix.add_texts(["x"], metadatas=[{"bad key!": 1}]), "metadata key 'bad key!'"),
            (lambda: ix.add_texts(["x"], metadatas=[{"nested": {"a": 1}}]), "nested objects cannot be filtered"),
            (lambda: ix.add_texts([3]), "texts must be strings"),  # type: ignore[list-item]
        ]:
            with pytest.raises(ConfigError, match=match):
                call()
        assert ix.stats().documents == 1  # nothing half done
    with pytest.raises(ConfigError, match="threads must be a whole number"):
        Index(tmp_path / "ix", encoder=fake_encoder, threads=-2)


@pytest.mark.parametrize("workers", ["bogus", "ray:", "ray:nohost", "ray:127.0.0.1:99999", "nothing-there"])
def test_a_bad_workers_value_or_a_cluster_address_with_nothing_there_fails_at_once(
    tmp_path: Path, workers: str, fake_encoder,  # type: ignore[no-untyped-def]
) -> None:
    # Ray retried an address with nothing there for minutes; a bad value was refused only after the model loaded
    # and the index was created.
    if workers == "nothing-there":
        with socket.socket() as s:  # a loopback port that nothing listens on
            s.bind(("127.0.0.1", 0))
            workers = f"ray:127.0.0.1:{s.getsockname()[1]}"
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("some text")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = __import__("time").monotonic()
    res = subprocess.run([sys.executable, "-m", "searchapp", "ingest", "docs", "--index", "ix", "--workers", workers],
                         cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
    assert __import__("time").monotonic() - started < 30
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and res.stderr.startswith("error: "), res.stderr
    reach = workers.startswith("ray:127.0.0.1:") and not workers.endswith(":99999")
    assert ("cannot reach a Ray cluster" in res.stderr) == reach, res.stderr
    assert not (tmp_path / "ix").exists()
    with Index(tmp_path / "api", create=True, config=IndexConfig(), encoder=fake_encoder) as ix:
        with pytest.raises(ConfigError, match="workers" if not reach else "cannot reach"):
            ix.ingest(tmp_path / "docs", workers=workers)
        assert ix.stats().documents == 0


def test_a_cluster_address_is_tried_once_per_ingest(tmp_path: Path, fake_model, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The CLI checks the workers before it creates an index, and the ingest takes that check as made: the
    address is tried over TCP once, not once by the CLI and again by the index."""
    import searchapp.ingest.distributed as distributed

    tried: list[tuple[str, int]] = []
    real = socket.create_connection

    def counted(address, *args, **kwargs):  # type: ignore[no-untyped-def]
        tried.append(address)
        return real(address, *args, **kwargs)

    def stop(options) -> None:  # type: ignore[no-untyped-def]  # where Ray would be started: no further
        raise ConfigError("stopped before Ray")

    monkeypatch.setattr(socket, "create_connection", counted)
    monkeypatch.setattr(distributed, "connect", stop)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("some text")
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        res = runner.invoke(app, ["ingest", "docs", "--index", "ix", "--workers", f"ray:127.0.0.1:{port}"])
    assert res.exit_code == 2 and "stopped before Ray" in res.stderr, res.output
    assert tried == [("127.0.0.1", port)]


def test_too_many_ray_actors_for_a_local_cluster_are_refused_before_ray_starts_or_an_index_exists(
        tmp_path: Path) -> None:
    """`--workers ray --actors 100000` was refused only once Ray had started (seconds), and the new index then
    existed with its settings stored, so a re-run with other settings was refused."""
    import sys

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("rotate the signing keys")
    res = CliRunner().invoke(app, ["ingest", str(tmp_path / "docs"), "--index", str(tmp_path / "ix"),
                                   "--workers", "ray", "--actors", "100000"])
    assert res.exit_code == 2
    assert res.stderr.strip().startswith("error: --actors 100000 needs 100000.5 CPUs in the Ray cluster")
    assert "\n" not in res.stderr.strip()
    assert not (tmp_path / "ix").exists()
    ray = sys.modules.get("ray")
    assert ray is None or not ray.is_initialized()


def test_a_ray_cluster_at_an_address_is_checked_before_an_index_is_created(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """With a cluster address, the actors are checked against that cluster once it answers: before the index is
    opened (and so created), not after. The cluster here is a listening socket and a stand-in for Ray's answer."""
    from searchapp.ingest import distributed

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    asked: list[object] = []

    def too_small(options: object) -> None:
        asked.append(options)
        raise ConfigError("--actors 64 needs 64.5 CPUs in the Ray cluster; it has 8")

    monkeypatch.setattr(distributed, "connect", too_small)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("rotate the signing keys")
    try:
        res = CliRunner().invoke(app, ["ingest", str(tmp_path / "docs"), "--index", str(tmp_path / "ix"),
                                       "--workers", f"ray:127.0.0.1:{listener.getsockname()[1]}", "--actors", "64"])
    finally:
        listener.close()
    assert res.exit_code == 2 and len(asked) == 1
    assert res.stderr.strip() == "error: --actors 64 needs 64.5 CPUs in the Ray cluster; it has 8"
    assert not (tmp_path / "ix").exists()
