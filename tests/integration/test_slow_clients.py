"""Slow and many clients against the real `searchapp serve` (a process of its own, real sockets): headers that
never finish are cut off, connections beyond the cap are refused, other clients are served, and stderr stays
short."""

from __future__ import annotations

import os
import resource
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from searchapp import Index, IndexConfig
from tests.server_helpers import free_port

pytest.importorskip("uvicorn", reason="the server extra is not installed")
ROOT = Path(__file__).resolve().parents[2]
FDS = 256  # the server's descriptor limit: fewer than the slow clients, as a busy server's would be
SLOW = 300
# `searchapp serve` with the header deadline lowered, so the test waits one second for it instead of ten.
SERVE = textwrap.dedent("""
    import sys
    import searchapp.server.serving as serving
    serving.HEADER_TIMEOUT = 1.0
    from searchapp.cli import app
    app(sys.argv[1:])
""")


def get_status(port: int, timeout: float = 5.0) -> int:
    """The status code of ``GET /status`` on a new connection (0 when no answer came within ``timeout``)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(b"GET /status HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            head = s.recv(64)
    except OSError:
        return 0
    return int(head.split()[1]) if head.startswith(b"HTTP/1.1 ") else 0


def closed_by_server(s: socket.socket) -> bool:
    s.settimeout(0.05)
    try:
        return s.recv(1) == b""
    except TimeoutError:
        return False
    except OSError:  # reset
        return True


def test_slow_headers_are_cut_off_and_other_clients_are_served(tmp_path: Path, fake_encoder) -> None:  # type: ignore[no-untyped-def]
    with Index(tmp_path / "ix", create=True, config=IndexConfig(), encoder=fake_encoder) as ix:
        ix.add_texts(["Rotate the signing keys."], ids=["k1"])
    port = free_port()

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (FDS, FDS))

    server = subprocess.Popen(
        [sys.executable, "-c", SERVE, "serve", "-i", str(tmp_path / "ix"), "--port", str(port), "--lazy"],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(ROOT)},
        preexec_fn=limit,
    )
    held: list[socket.socket] = []
    try:
        deadline = time.monotonic() + 60
        while get_status(port, 1.0) != 200:
            assert server.poll() is None and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.2)
        # Many clients that start a request and never finish its headers, one that trickles a byte at a time.
        trickle = socket.create_connection(("127.0.0.1", port))
        trickle.sendall(b"GET /status HTTP/1.1\r\n")
        for _ in range(SLOW):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(b"GET /status HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
            held.append(s)
        started = time.monotonic()
        trickled_until = None
        while time.monotonic() - started < 4:
            try:
                trickle.sendall(b"x")
            except OSError:
                trickled_until = trickled_until or time.monotonic() - started
            time.sleep(0.1)
        assert trickled_until is not None and trickled_until < 3, "a client trickling its headers was not cut off"
        assert all(closed_by_server(s) for s in held), "connections whose headers never finished are still open"
        assert get_status(port) == 200, "the server no longer serves new clients"
    finally:
        for s in held:
            s.close()
        server.terminate()
        _, err = server.communicate(timeout=30)
    # No traceback per connection: the over-cap warning and asyncio's refused accept() at most once in 10 s each.
    assert len(err) < 5000 and "Traceback" not in err.decode(), err[-2000:]
