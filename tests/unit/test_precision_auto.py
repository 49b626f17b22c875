"""``precision auto`` is decided by the CPU's capabilities: the same on every run of one machine."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from searchapp.encode import precision


def test_auto_follows_the_cpu_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(precision.CPU_FLAGS_ENV)  # the machine's /proc/cpuinfo, here a stand-in
    info = tmp_path / "cpuinfo"
    monkeypatch.setattr(precision, "CPUINFO", info)
    for flags, expected in (("fpu sse avx2 avx512f avx512bw", "int8"), ("fpu avx2 avx512f avx512_bf16", "bf16"),
                            ("fpu amx_tile amx_bf16", "bf16"), ("fpu sse sse2 sse4_2", "fp32"),
                            ("fp asimd asimddp", "fp32")):
        info.write_text(f"processor\t: 0\nflags\t\t: {flags}\n\nprocessor\t: 1\nflags\t\t: {flags}\n")
        precision.native_bf16.cache_clear()
        assert precision.resolve("auto") == expected, flags
    precision.native_bf16.cache_clear()
    monkeypatch.setattr(precision, "CPUINFO", tmp_path / "missing")
    assert precision.resolve("auto") == "fp32"  # flags unreadable: the safe choice
    precision.native_bf16.cache_clear()


def test_auto_resolves_identically_under_a_busy_cpu() -> None:
    stop = threading.Event()

    def spin() -> None:
        x = 0
        while not stop.is_set():
            x += 1

    busy = [threading.Thread(target=spin, daemon=True) for _ in range(2)]
    answers = []
    try:
        answers.append(precision.resolve("auto"))
        for t in busy:
            t.start()
        for _ in range(5):
            precision.native_bf16.cache_clear()
            answers.append(precision.resolve("auto"))
            time.sleep(0.01)
    finally:
        stop.set()
        for t in busy:
            t.join()
        precision.native_bf16.cache_clear()
    assert len(set(answers)) == 1
    flags = precision.cpu_flags()
    assert answers[0] == ("bf16" if precision.NATIVE_BF16_FLAGS & flags else
                          "int8" if precision.INT8_FLAGS & flags else "fp32")


def test_flags_given_stand_in_for_the_machines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``SEARCHAPP_CPU_FLAGS`` wins over ``/proc/cpuinfo`` both ways, so the suite (and a user) can decide as
    another CPU class would."""
    info = tmp_path / "cpuinfo"
    monkeypatch.setattr(precision, "CPUINFO", info)
    for machine, given, expected in (("fpu avx2 amx_bf16", "fpu avx2", "int8"), ("fpu avx2", "fpu sse2", "fp32"),
                                     ("fpu avx2", "fpu avx512_bf16", "bf16")):
        info.write_text(f"processor\t: 0\nflags\t\t: {machine}\n")
        monkeypatch.setenv(precision.CPU_FLAGS_ENV, given)
        precision.native_bf16.cache_clear()
        assert precision.resolve("auto") == expected, (machine, given)
    precision.native_bf16.cache_clear()
