"""The streaming runner of the build step: whole log kept, ninja [N/M] reported as it comes,
a hung build killed at its timeout, a missing program reported instead of raised."""

from __future__ import annotations

import os

from fwdoctor.recipes import torch_source as ts

NINJA_LIKE = r"""
for i in 1 2 3; do echo "  [$i/3] Building CUDA object k$i.cu.o"; done
echo "-- other output"
echo "warning on stderr" >&2
exit ${EXIT:-0}
"""


def test_the_log_keeps_every_line_and_progress_follows_ninja(tmp_path):
    seen = []
    log = tmp_path / "logs" / "build.log"
    status = ts.stream(["sh", "-c", NINJA_LIKE], env=dict(os.environ), cwd=str(tmp_path), timeout=60,
                       log_path=str(log), on_progress=lambda d, t: seen.append((d, t)))
    assert status.ok and status.last_progress == (3, 3)
    assert seen == [(1, 3), (2, 3), (3, 3)]
    text = log.read_text()
    assert "[2/3] Building CUDA object k2.cu.o" in text and "warning on stderr" in text and "# exit status 0" in text


def test_a_failing_build_reports_its_exit_status_and_last_lines(tmp_path):
    status = ts.stream(["sh", "-c", NINJA_LIKE], env={**os.environ, "EXIT": "3"}, cwd=str(tmp_path), timeout=60,
                       log_path=str(tmp_path / "b.log"))
    assert not status.ok and status.reason == "exit status 3"
    assert "-- other output" in status.tail


def test_a_hung_build_is_killed_at_its_timeout(tmp_path):
    status = ts.stream(["sh", "-c", "echo started; sleep 600"], env=dict(os.environ), cwd=str(tmp_path), timeout=1,
                       log_path=str(tmp_path / "b.log"))
    assert status.timed_out and not status.ok
    assert "killed" in status.reason and "started" in status.tail


def test_a_missing_program_is_a_reason_not_an_exception(tmp_path):
    status = ts.stream(["/nonexistent/python", "setup.py"], env=dict(os.environ), cwd=str(tmp_path), timeout=5,
                       log_path=str(tmp_path / "b.log"))
    assert not status.ok and status.reason.startswith("could not start /nonexistent/python")


def test_progress_is_printed_at_most_every_few_seconds_but_always_at_the_end():
    lines = []
    show = ts._progress_printer(lines.append, every_s=3600)
    for done in range(1, 101):
        show(done, 100)
    assert lines == ["build: 1/100 (1.0%)", "build: 100/100 (100.0%)"]
