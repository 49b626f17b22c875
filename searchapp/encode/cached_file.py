"""A file of the cache (an exported ONNX graph, its int8 form, OpenVINO's model) that is checked before each use
and made again when it is not what was written.

The cache is shared: by the processes of one install (an ingest, a query, a server), by installs in other
folders (encode/graph_cache.py keys a file by what determines it, not by who made it), and by whatever else can
write the folder. So a file found there is not trusted for being there:

- Each file is recorded when it is written: ``<file>.manifest`` (JSON) holds the size and sha256 of the file and
  of its companions (OpenVINO's ``.bin``) and which install wrote it. The manifest is written last, so a file
  without one was never finished (or predates manifests) and is made again.
- Before a file is used its kind and size are checked every time (a ``stat``), and its digest whenever its
  size, modification or change time or inode differ from when it was last hashed and found whole (recorded in
  ``<file>.verified``, so that each one-shot command does not hash it again). Hashing costs about half
  of loading: the fused fp32 graph of all-MiniLM-L6-v2 (90 MB) hashes in 0.07 s and its int8 graph (59 MB) in
  0.05 s on this project's CPU with the file in the page cache (``python -W ignore -m
  searchapp.encode.cached_file FILE`` prints it), where ONNX Runtime takes 0.14 s and 0.09 s to load them.
- Only a regular file (or a link to one) is opened; a FIFO, a device (a link to ``/dev/null``) or a folder in
  its place counts as broken and is replaced, never read (a FIFO would block the reader for ever).
- A file is made by one process at a time (``flock`` on ``<file>.lock``), in a private folder beside it
  (``.<file>.<pid>.*.tmp/``), which holds everything the maker writes (ONNX Runtime's quantiser writes a
  fixed-name ``*-inferred.onnx`` beside its input), then moved into place with ``os.replace``: a reader sees the
  old file, no file, or the new file whole, never a part.
- A cache folder that cannot be made or written costs one warning: the file is made in a private temporary
  folder for this process, removed when it ends.
- Cleaning up after a new file removes only files the same install wrote for the same model (its own older
  keys, recorded in their manifests); another install's files sharing the folder are left alone.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import hashlib
import json
import logging
import os
import shutil
import stat
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from searchapp.errors import ModelLoadError, first_line

log = logging.getLogger(__name__)

MANIFEST = ".manifest"
VERIFIED = ".verified"  # the stat of a file when it was last hashed and found as recorded
_MAX_MANIFEST = 64 * 1024
_BLOCK = 1 << 20
# Files this process has hashed and found as recorded: path -> (size, mtime_ns, inode, device, manifest digest).
_VERIFIED: dict[str, tuple[int, int, int, int, int, str]] = {}
# One maker per process (``flock`` covers the others); re-entered where making one file needs another first
# (the int8 graph is quantised from the fp32 one).
_BUILD_LOCK = threading.RLock()
_fallback: Path | None = None
# Who is told, before a file is made, what is being made (the command line's progress: a first run's export and
# quantisation take half a minute, and must not look like a hang). Called on the thread that makes it.
listeners: list[Callable[[str], None]] = []


@contextlib.contextmanager
def announcing(listener: Callable[[str], None]) -> Iterator[None]:
    """``listener`` hears what is made while the block runs."""
    listeners.append(listener)
    try:
        yield
    finally:
        listeners.remove(listener)


class Unwritable(OSError):
    """The cache folder of a file cannot be made or written."""


def problem(target: Path, companions: tuple[str, ...] = ()) -> str | None:
    """Why ``target`` (and its companions, files beside it whose names end ``target``'s stem plus each suffix)
    cannot be used as it stands, or ``None`` where it is whole as recorded. Never blocks on what it finds."""
    try:
        kind = _kind(target)
        if kind is None:
            return "missing"
        if kind != "file":
            return f"{kind}, not a regular file"
        record = _read_manifest(target)
        if record is None:
            return f"not recorded as whole (no readable {target.name}{MANIFEST})"
        files = record.get("files")
        if not isinstance(files, dict):
            return f"not recorded as whole ({target.name}{MANIFEST} lists no files)"
        for path in [target, *(target.with_suffix(s) for s in companions)]:
            why = _check(path, files.get(path.name), record["_digest"])
            if why is not None:
                return why if path == target else f"its {path.name} is {why}"
    except OSError as exc:
        return f"unreadable ({first_line(exc)})"
    return None


def made(target: Path, make: Callable[[Path], None], owner: str,
         companions: tuple[str, ...] = ()) -> Path:
    """``target`` where it is whole as recorded, else made by ``make(path)`` (which writes ``path`` and its
    companions) and recorded; the path of the file, which is in a private temporary folder where the cache folder
    cannot be written (one warning). ``ModelLoadError`` naming the file and the reason where it cannot be made."""
    why = problem(target, companions)
    if why is None:
        return target
    try:
        return _build(target, make, owner, companions)
    except Unwritable as exc:
        spare = _fallback_root(target, exc) / target.parent.name / target.name
        if problem(spare, companions) is None:
            return spare
        try:
            return _build(spare, make, owner, companions)
        except Unwritable as again:
            raise ModelLoadError(f"{target}: cannot be made: {first_line(again)}; set SEARCHAPP_CACHE to a "
                                 f"folder this user can write") from again


def existing(target: Path, companions: tuple[str, ...] = ()) -> Path | None:
    """Where a whole ``target`` is found without making it: in the cache, or in this process's private fallback
    folder; ``None`` where neither holds one."""
    if problem(target, companions) is None:
        return target
    if _fallback is not None:
        spare = _fallback / target.parent.name / target.name
        if problem(spare, companions) is None:
            return spare
    return None


def remove_replaced(current: Path, owner: str, companions: tuple[str, ...] = ()) -> list[Path]:
    """Remove the files ``owner`` wrote for ``current``'s model and kind under other keys (an older model or tool
    set), with their manifests and locks, once ``current`` is whole; the files removed. A file whose manifest
    names another owner (another install sharing the cache), or that has none, is not this one's to remove. A
    file another process is still reading stays readable to it."""
    if "-" not in current.name:  # not a keyed name (``<model>-<key><suffix>``): nothing it replaces
        return []
    stem = current.name[: current.name.rindex("-") + 1]
    removed = []
    for other in current.parent.glob(f"{_glob_escape(stem)}*{_glob_escape(current.suffix)}"):
        key = other.name[len(stem): -len(current.suffix)]
        if other == current or len(key) != 16 or any(c not in "0123456789abcdef" for c in key):
            continue
        record = _read_manifest(other)
        if record is None or record.get("owner") != owner:
            continue
        for path in [other, *(other.with_suffix(s) for s in companions),
                     other.with_name(other.name + MANIFEST), other.with_name(other.name + VERIFIED),
                     other.with_name(other.name + ".lock")]:
            try:
                path.unlink()
                removed.append(path)
            except OSError:
                pass
    return removed


def file_sha256(path: Path) -> str:
    """sha256 (hex) of the regular file at ``path``, read without blocking on what is not one (``OSError``)."""
    fd = _open_regular(path)
    h = hashlib.sha256()
    with os.fdopen(fd, "rb") as fh:
        for block in iter(lambda: fh.read(_BLOCK), b""):
            h.update(block)
    return h.hexdigest()


def _build(target: Path, make: Callable[[Path], None], owner: str, companions: tuple[str, ...]) -> Path:
    with _BUILD_LOCK, _locked(target):
        if problem(target, companions) is None:  # another process made it while this one waited
            return target
        _remove_stale_work(target)
        try:
            work = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.{os.getpid()}.", suffix=".tmp"))
        except OSError as exc:
            raise Unwritable(exc.errno or errno.EACCES, f"{target.parent}: {first_line(exc)}") from exc
        try:
            was = _kind(target)
            fresh = work / target.name
            for listener in list(listeners):
                listener(f"preparing the model for this machine: {target.name} (once; later runs reuse it)")
            try:
                make(fresh)
            except ModelLoadError as exc:
                raise ModelLoadError(f"{target}: cannot be made: {first_line(exc, 400)} (SEARCHAPP_CACHE may name a "
                                     f"folder holding a whole one)") from exc
            files = {p.name: {"size": p.stat().st_size, "sha256": file_sha256(p)}
                     for p in [fresh, *(fresh.with_suffix(s) for s in companions)]}
            manifest = target.with_name(target.name + MANIFEST)
            # The old record goes first: a reader between these steps finds the file unrecorded and waits on the
            # lock, instead of taking a new file for the old one or the reverse.
            manifest.unlink(missing_ok=True)
            for suffix in companions:
                os.replace(fresh.with_suffix(suffix), target.with_suffix(suffix))
            os.replace(fresh, target)
            (work / manifest.name).write_text(json.dumps({"files": files, "owner": owner}, sort_keys=True),
                                              encoding="utf-8")
            os.replace(work / manifest.name, manifest)
        except OSError as exc:
            raise ModelLoadError(f"{target}: cannot be written: {first_line(exc)}; remove it, or set "
                                 f"SEARCHAPP_CACHE to another folder") from exc
        finally:
            shutil.rmtree(work, ignore_errors=True)
        if was is not None:
            log.warning("warning: %s was %s and has been made again", target, _was(was))
        why = problem(target, companions)
        if why is not None:  # something outside this process's lock replaced it meanwhile
            raise ModelLoadError(f"{target}: {why} right after it was made; set SEARCHAPP_CACHE to a folder "
                                 f"only searchapp writes")
        remove_replaced(target, owner, companions)
        return target


@contextlib.contextmanager
def _locked(target: Path) -> Iterator[None]:
    """Holds ``<target>.lock`` exclusively (``flock``: released by the kernel if the holder dies); ``Unwritable``
    where the folder or the lock cannot be made."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(target.with_name(target.name + ".lock"),
                     os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0), 0o666)
    except OSError as exc:
        raise Unwritable(exc.errno or errno.EACCES, f"{target.parent}: {first_line(exc)}") from exc
    try:
        try:
            import fcntl
        except ImportError:  # no flock (Windows): the private folders still keep makers apart
            yield
            return
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _remove_stale_work(target: Path) -> None:
    """Private folders of ``target`` left by makers that died: under the lock no other maker of it is at work."""
    for folder in target.parent.glob(f".{_glob_escape(target.name)}.*.tmp"):
        if folder.is_dir() and not folder.is_symlink():
            shutil.rmtree(folder, ignore_errors=True)


def _fallback_root(target: Path, exc: OSError) -> Path:
    """This process's private folder for files the cache folder cannot take (made, and warned of, once)."""
    global _fallback
    if _fallback is None:
        _fallback = Path(tempfile.mkdtemp(prefix="searchapp-cache-"))
        atexit.register(shutil.rmtree, _fallback, True)
        log.warning("warning: the cache folder cannot be written (%s): the model's graphs are made in %s for this "
                    "process only; set SEARCHAPP_CACHE to a folder this user can write", first_line(exc), _fallback)
    return _fallback


def _check(path: Path, recorded: object, manifest_digest: str) -> str | None:
    """Why ``path`` differs from its record, or ``None``: its kind and size each time, its digest when this
    process has not yet hashed it as it stands."""
    if not isinstance(recorded, dict) or not isinstance(recorded.get("size"), int) \
            or not isinstance(recorded.get("sha256"), str):
        return "not recorded"
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        return f"{_describe(st.st_mode)}, not a regular file"
    if st.st_size != recorded["size"]:
        return f"{st.st_size:,} bytes where {recorded['size']:,} were written"
    # The change time is the kernel's: any write to the file moves it, and no user tool sets it back (touch and
    # utime set the modification time only), so a file hashed as it stands need not be hashed again until it moves.
    stamp = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev, manifest_digest)
    if _VERIFIED.get(str(path)) == stamp or _stamp_on_disk(path) == list(stamp):
        _VERIFIED[str(path)] = stamp
        return None
    if file_sha256(path) != recorded["sha256"]:
        return "changed since it was written (its sha256 differs from the one recorded)"
    _VERIFIED[str(path)] = stamp
    _write_stamp(path, stamp)
    return None


def _stamp_on_disk(path: Path) -> object:
    """The stat of ``path`` when a process last hashed it whole (``<file>.verified``), or ``None``: a one-shot
    query's process need not hash the 60-90 MB graph again (0.05-0.07 s a run) while the file has not moved."""
    try:
        return json.loads(path.with_name(path.name + VERIFIED).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _write_stamp(path: Path, stamp: tuple[int, int, int, int, int, str]) -> None:
    """Record ``stamp`` beside ``path`` (atomically; where the folder cannot be written, the next process hashes)."""
    target = path.with_name(path.name + VERIFIED)
    spare = target.with_name(f".{target.name}.{os.getpid()}.part")
    try:
        spare.write_text(json.dumps(list(stamp)), encoding="utf-8")
        os.replace(spare, target)
    except OSError:
        with contextlib.suppress(OSError):
            spare.unlink()


def _kind(path: Path) -> str | None:
    """``file``, another kind in words, or ``None`` where nothing (or a dangling link) is there."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return "file" if stat.S_ISREG(st.st_mode) else _describe(st.st_mode)


def _describe(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a special file"


def _was(kind: str) -> str:
    return "unrecorded, short or changed" if kind == "file" else f"{kind}, not a regular file"


def _open_regular(path: Path) -> int:
    """A descriptor on the regular file at ``path``; a FIFO or device is refused without blocking on it."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, f"{path}: {_describe(mode)}, not a regular file")
        return fd
    except BaseException:
        os.close(fd)
        raise


def _read_manifest(target: Path) -> dict[str, object] | None:
    """``target``'s manifest (with ``_digest``, its own sha256), or ``None`` where it is missing or not one."""
    try:
        fd = _open_regular(target.with_name(target.name + MANIFEST))
        with os.fdopen(fd, "rb") as fh:
            raw = fh.read(_MAX_MANIFEST + 1)
        data = json.loads(raw.decode("utf-8")) if len(raw) <= _MAX_MANIFEST else None
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    data["_digest"] = hashlib.sha256(raw).hexdigest()
    return data


def _glob_escape(text: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)


if __name__ == "__main__":  # the digest's cost on a file: python -m searchapp.encode.cached_file FILE...
    import sys
    import time

    for name in sys.argv[1:]:
        file_sha256(Path(name))  # into the page cache first: the figure is the hashing, not the disk
        started = time.perf_counter()
        file_sha256(Path(name))
        print(f"{name}: {Path(name).stat().st_size / 1e6:.1f} MB hashed in {time.perf_counter() - started:.3f} s")
