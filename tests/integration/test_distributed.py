"""Distributed ingest on a real local Ray cluster, in a loopback-only network namespace: the same rows as an
in-process ingest, a second run embeds nothing, a killed driver or actor resumes to the same result, and no Ray
process listens on anything but loopback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa

from searchapp import Index

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "HF_HUB_OFFLINE": "1"}

CHILD = textwrap.dedent('''
    import json, os, signal, sys, time
    args = json.loads(sys.argv[1])
    sys.path.insert(0, args["root"])
    import psutil, ray
    import searchapp.ingest.pipeline as pipeline
    pipeline.FLUSH_PASSAGES = 8  # several commits for a small corpus
    import searchapp.ingest.distributed as distributed
    distributed.PREPARE_BATCH = distributed.ENCODE_BATCH = 4  # several actor calls: a kill lands mid-way
    from searchapp import Index
    from searchapp.store.postgres import PostgresStores
    real_write = PostgresStores.write
    commits, killed = [], []
    def write(self, remove, add):
        real_write(self, remove, add)
        commits.append(len(add))
        print("committed", len(add), flush=True)
        if args["mode"] == "ingest" and len(commits) == 1:
            actors = [p for p in psutil.process_iter(["name"]) if (p.info["name"] or "").startswith("ray::MapWorker")]
            os.kill(actors[0].pid, signal.SIGKILL)
            killed.append(actors[0].pid)
        if args["mode"] == "kill_driver":
            time.sleep(0.5)
    PostgresStores.write = write
    ray.init(num_cpus=2, include_dashboard=False)
    out = {"refused": []}
    if args["mode"] == "ingest":
        # A cluster too small for the actors asked for is refused before anything is written (this one has 2
        # CPUs and no GPU), in the same cluster as the ingests that follow: one Ray start for the lot.
        from searchapp import SearchappError
        with Index.open_or_create(args["index"] + "-small") as small:
            for asked in ({"actors": 2}, {"actors": 1, "gpus_per_actor": 1}):
                try:
                    small.ingest(args["folder"], workers="ray", **asked)
                except SearchappError as exc:
                    out["refused"].append(str(exc))
            out["small_passages"] = small.stats().passages
    with Index.open_or_create(args["url"], max_tokens=32, precision="fp32") as ix:
        out["first"] = ix.ingest(args["folder"], workers="ray").to_dict()
        out["second"] = ix.ingest(args["folder"], workers="ray").to_dict()
    if args["mode"] == "ingest":
        with Index.open_or_create(args["index"], max_tokens=32, precision="fp32") as ix:
            out["folder"] = ix.ingest(args["folder"], workers="ray").to_dict()
    listening = []
    for p in psutil.process_iter(["name"]):
        try:
            conns = p.net_connections(kind="inet")
        except psutil.Error:
            continue
        listening += [[p.info["name"], c.laddr.ip] for c in conns if c.status == psutil.CONN_LISTEN]
    out["listening"] = listening
    out["killed"] = killed
    print("RESULT " + json.dumps(out), flush=True)
''')


def namespace_reason() -> str | None:
    """Why a loopback-only network namespace cannot be made here, or None."""
    try:
        probe = subprocess.run(["unshare", "--net", "ip", "link", "set", "lo", "up"], capture_output=True,
                               text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"cannot make a network namespace: {exc}"
    if probe.returncode != 0:
        return f"cannot make a network namespace: {probe.stderr.strip()[:200]}"
    return None


def child(mode: str, url: str, folder: Path, index: Path | None = None) -> subprocess.Popen[str]:
    """The child in a network namespace of its own with only loopback up: Ray cannot send traffic off the
    machine from there, whatever it tries (its usage-stats probes among them)."""
    args = json.dumps({"mode": mode, "url": url, "folder": str(folder), "index": str(index), "root": str(ROOT)})
    script = f"ip link set lo up && exec {sys.executable} -c \"$CHILD_SCRIPT\" '{args}'"
    env = {**os.environ, **ENV, "CHILD_SCRIPT": CHILD, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(["unshare", "--net", "bash", "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT, start_new_session=True)


def finish(proc: subprocess.Popen[str]) -> dict:  # type: ignore[type-arg]
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    line = next(line for line in out.splitlines() if line.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])  # type: ignore[no-any-return]


def write_corpus(folder: Path, n: int = 30) -> None:
    folder.mkdir()
    (folder / "broken.pdf").write_bytes(b"not a pdf")  # fails to load on a worker: a warning, as in-process
    for i in range(n):
        text = " ".join(f"Note {i}, part {j}: rotate the signing keys of team {i % 4} before the audit {j}."
                        for j in range(3))
        (folder / f"note{i:02d}.txt").write_text(text + "\n")


def rows(url: str) -> list[tuple]:  # type: ignore[type-arg]
    """Every passage: document path, ordinal, span, text and vector (float32)."""
    with Index(url) as ix, ix.stores.engine.connect() as conn:
        result = conn.execute(sa.text('SELECT d.path, p.ordinal, p.start, p."end", p.text, p.embedding::text '
                                      "FROM passages p JOIN documents d ON d.id = p.document_id "
                                      "ORDER BY d.path, p.ordinal")).all()
    return [(*r[:5], np.array(r[5].strip("[]").split(","), dtype=np.float32)) for r in result]


def assert_same_rows(a: list[tuple], b: list[tuple]) -> None:  # type: ignore[type-arg]
    assert [r[:5] for r in a] == [r[:5] for r in b]
    for x, y in zip(a, b, strict=True):
        np.testing.assert_allclose(x[5], y[5], atol=1e-6)


@pytest.fixture()
def reference(tmp_path: Path, pg_url: str) -> tuple[Path, list[tuple]]:  # type: ignore[type-arg]
    reason = namespace_reason()
    if reason is not None:
        pytest.skip(reason)
    pytest.importorskip("ray", reason="the ray extra is not installed: pip install 'searchapp[ray]'")
    folder = tmp_path / "notes"
    write_corpus(folder)
    ref_url = pg_url.replace("schema=t_", "schema=ref_")
    # In-process, the real model; fp32 on both sides ("auto" may resolve differently in two processes).
    with Index.open_or_create(ref_url, max_tokens=32, precision="fp32") as ix:
        ix.ingest(folder)
    return folder, rows(ref_url)


def test_a_ray_ingest_stores_the_rows_of_an_in_process_one(tmp_path: Path, pg_url: str, reference) -> None:  # type: ignore[no-untyped-def]
    """One Ray cluster, one child: a cluster too small for the actors asked is refused at once; the first ingest
    has an encoder actor killed after its first commit (replaced, the ingest completes); its rows equal the
    in-process ingest's; a second run embeds nothing; the folder backend stores the same passages; nothing
    listens off loopback."""
    folder, expected = reference
    result = finish(child("ingest", pg_url, folder, tmp_path / "ix"))
    first, gpu = result["refused"]
    assert first.startswith("--actors 2 needs 2.5 CPUs"), first
    # A cluster without GPUs (this one: ray.init found none) refuses GPU actors at once, rather than leaving them
    # pending for ever.
    assert gpu.startswith("--actors 1 --gpus-per-actor 1 needs 1 GPUs in the Ray cluster; it has 0"), gpu
    assert result["small_passages"] == 0
    assert len(result["killed"]) == 1  # an encoder actor was killed after the first commit
    assert result["first"]["added"] == 30 and result["first"]["failed"] == 1
    assert result["first"]["failures"][0]["path"].endswith("broken.pdf")
    assert result["second"]["passages_embedded"] == 0 and result["second"]["unchanged"] == 30
    assert result["folder"]["added"] == 30
    assert_same_rows(rows(pg_url), expected)
    with Index(tmp_path / "ix") as folder_ix:  # the folder backend too: same passages as the database
        assert folder_ix.stats().passages == len(expected)
    assert result["listening"], "no listening socket found: the check would prove nothing"
    outside = [(name, ip) for name, ip in result["listening"] if ip not in ("127.0.0.1", "::1", "::ffff:127.0.0.1")]
    assert not outside


def test_a_killed_driver_resumes_to_the_same_result(pg_url: str, reference) -> None:  # type: ignore[no-untyped-def]
    folder, expected = reference
    proc = child("kill_driver", pg_url, folder)
    assert proc.stdout is not None
    commits = 0
    for line in proc.stdout:
        commits += line.startswith("committed")
        if commits == 2:
            os.killpg(proc.pid, signal.SIGKILL)  # the driver and the Ray cluster it started
            break
    proc.wait(timeout=60)
    partial = rows(pg_url)
    assert 0 < len(partial) < len(expected)
    result = finish(child("resume", pg_url, folder))
    assert result["first"]["passages_embedded"] == len(expected) - len(partial)
    assert_same_rows(rows(pg_url), expected)


def off_machine_connects(trace: str) -> list[str]:
    """The ``connect()`` calls of an ``strace -f -e trace=connect`` log to an address other than loopback."""
    import ipaddress
    import re

    found = []
    for line in trace.splitlines():
        match = re.search(r'inet_addr\("([^"]+)"\)|inet_pton\(AF_INET6, "([^"]+)"', line)
        if match:
            ip = ipaddress.ip_address(match.group(1) or match.group(2))
            mapped = getattr(ip, "ipv4_mapped", None)
            if not (ip.is_loopback or (mapped is not None and mapped.is_loopback)):
                found.append(line.strip())
    return found


def test_a_local_ray_ingest_connects_to_nothing_off_the_machine(tmp_path: Path) -> None:
    # Not only listening sockets: with include_dashboard=False Ray still started an API server whose usage module
    # asked the cloud metadata address (169.254.169.254:80) and the DNS resolver where it runs.
    reason = namespace_reason()
    if reason is not None:
        pytest.skip(reason)
    pytest.importorskip("ray", reason="the ray extra is not installed")
    if subprocess.run(["which", "strace"], capture_output=True).returncode != 0:
        pytest.skip("strace is not installed")
    folder = tmp_path / "notes"
    write_corpus(folder, n=3)
    trace = tmp_path / "connect.trace"
    command = (f"ip link set lo up && exec strace -f -qq -e trace=connect -o {trace} {sys.executable} -m searchapp "
               f"ingest {folder} --index {tmp_path / 'ix'} --workers ray --max-tokens 32 --precision fp32")
    # The user's environment as it is: no RAY_USAGE_STATS_ENABLED or other setting of the test's own.
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    env.pop("RAY_USAGE_STATS_ENABLED", None)
    res = subprocess.run(["unshare", "--net", "bash", "-c", command], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "added 3" in res.stdout
    log = trace.read_text()
    assert log.count("127.0.0.1") > 10, "no loopback connect seen: the trace would prove nothing"
    assert off_machine_connects(log) == []
