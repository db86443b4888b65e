"""Every command goes through fwdoctor.runner: argv, C locale, a timeout that kills the group."""

from __future__ import annotations

import sys
import time

from fwdoctor import runner


def test_output_is_captured_with_a_c_locale():
    result = runner.run([sys.executable, "-c", "import os; print(os.environ['LC_ALL'])"], env={"PATH": "/usr/bin"})
    assert result.ok
    assert result.stdout.strip() == "C"


def test_a_hung_command_and_its_children_are_killed_at_the_timeout(tmp_path):
    marker = tmp_path / "child-survived"
    script = f"import subprocess,time; subprocess.Popen(['sh','-c','sleep 3; touch {marker}']); time.sleep(60)"
    start = time.monotonic()
    result = runner.run([sys.executable, "-c", script], timeout=1.0)
    assert result.timed_out and not result.ok
    assert "no answer within the timeout" in result.describe_failure()
    assert time.monotonic() - start < 30
    time.sleep(3.5)
    assert not marker.exists(), "the child of a timed-out command kept running"


def test_a_missing_program_is_a_result_not_an_exception():
    result = runner.run(["/nonexistent/nvidia-smi"])
    assert result.error == "not found"
    assert result.describe_failure() == "/nonexistent/nvidia-smi: not found"


def test_garbage_bytes_are_decoded_without_raising():
    result = runner.run([sys.executable, "-c", "import sys; sys.stdout.buffer.write(b'\\xff\\xfe ok')"])
    assert result.ok and result.stdout.endswith(" ok")


def test_a_failing_command_reports_its_status_and_last_stderr_line():
    result = runner.run([sys.executable, "-c", "import sys; sys.stderr.write('first\\nFailed to initialize NVML\\n'); sys.exit(9)"])
    assert result.returncode == 9
    assert result.describe_failure().endswith("exit status 9: Failed to initialize NVML")


def test_stream_hands_over_merged_lines_in_order_as_they_come():
    seen: list[str] = []
    script = "import sys\nprint('one', flush=True)\nsys.stderr.write('two\\n'); sys.stderr.flush()\nprint('three', flush=True)\nsys.exit(4)"
    result = runner.stream([sys.executable, "-c", script], timeout=30, on_stderr_line=seen.append, merge_stderr=True)
    assert seen == ["one", "two", "three"]
    assert result.returncode == 4 and not result.timed_out
    assert result.stderr_tail.splitlines()[-1] == "three"


def test_stream_reports_a_missing_program_without_raising():
    result = runner.stream(["/nonexistent/torchrun"], timeout=5)
    assert result.error == "not found" and not result.ok
