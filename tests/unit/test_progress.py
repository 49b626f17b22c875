"""The ingest's reporter: stages before embedding, then passages done of the total with the rate and the time
left, in place on a terminal and as lines in a log, at least every few seconds."""

from __future__ import annotations

import io
import time

import pytest

import searchapp.cli.progress as progress
from searchapp.cli.progress import IngestProgress, clock


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def fake_clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(progress.time, "monotonic", c)
    return c


def test_clock() -> None:
    assert [clock(0), clock(59.6), clock(61), clock(3600 + 62)] == ["0:00", "1:00", "1:01", "1:01:02"]


def test_a_log_gets_the_stages_then_rate_and_time_left(fake_clock: Clock) -> None:
    out = io.StringIO()
    with IngestProgress(out, terminal=False, every=5.0) as p:
        p.stage("listing files")
        p.stage("reading files 1/300")
        p.stage("reading files 2/300")  # the same stage within 5 s: no line
        p(0, 1000)
        fake_clock.now += 30  # the model loads with the first batch: left out of the rate once more are in
        p(100, 1000)
        fake_clock.now += 10
        p(300, 1000)
        fake_clock.now += 10
        p(500, 1000)
        fake_clock.now += 10
        p(1000, 1000)
    lines = out.getvalue().splitlines()
    assert lines[:3] == ["listing files", "reading files 1/300", "embedded 0/1000 passages (0%)"]
    assert lines[3] == "embedded 100/1000 passages (10%), 3.3 passages/s, 4:30 left"  # the model's load in it
    # Then 100 -> 300 in 10 s: 20 passages/s, 700 left: 35 s.
    assert lines[4] == "embedded 300/1000 passages (30%), 20.0 passages/s, 0:35 left"
    assert lines[5] == "embedded 500/1000 passages (50%), 20.0 passages/s, 0:25 left"
    assert lines[-1].startswith("embedded 1000/1000 passages (100%)")
    assert "\r" not in out.getvalue()


def test_a_log_hears_from_a_long_batch_every_few_seconds() -> None:
    """A line at least every few seconds even when no batch ends (real time: the timer thread)."""
    out = io.StringIO()
    with IngestProgress(out, terminal=False, every=0.05) as p:
        p(0, 100)
        p(10, 100)
        time.sleep(0.4)  # no report from the ingest in this time
    lines = out.getvalue().splitlines()
    assert len([line for line in lines if line.startswith("embedded 10/100")]) >= 3


def test_a_terminal_gets_one_line_redrawn(fake_clock: Clock) -> None:
    out = io.StringIO()
    with IngestProgress(out, terminal=True) as p:
        p.stage("loading the model")
        p(0, 50)
        fake_clock.now += 1
        p(10, 50)
        fake_clock.now += 1
        p(20, 50)
        p.stage("saving")  # shorter than the line before it: padded over
    text = out.getvalue()
    assert text.count("\n") == 1 and text.endswith("\n")
    raw = [f for f in text.rstrip("\n").split("\r") if f]
    frames = [f.rstrip() for f in raw]
    assert frames[0] == "loading the model"
    assert frames[-2] == "embedded 20/50 passages (40%), 10.0 passages/s, 0:03 left"
    assert frames[-1] == "saving" and len(raw[-1]) == len(raw[-2])
