"""recipes/apply.py and recipes/download.py with small real commands and a real HTTP
server on 127.0.0.1: atomic writes, skip checks (idempotence), a failing step that stops
the plan and says how to undo, interruption, refusals, logging, verified downloads."""

from __future__ import annotations

import hashlib
import http.server
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from fwdoctor.recipes import apply as ap
from fwdoctor.recipes import download as dl
from fwdoctor.recipes.plan import FileWrite, Plan, Step

PY = sys.executable


def touch_step(path: Path, **kw) -> Step:
    return Step((PY, "-c", "import sys; open(sys.argv[1], 'a').write('x')", str(path)), why=f"touch {path.name}", skip_if=("test", "-e", str(path)), undo=f"rm -f {path}", **kw)


def test_a_second_apply_of_the_same_plan_changes_nothing(tmp_path):
    target = tmp_path / "made"
    plan = Plan("t", "make a file", steps=(touch_step(target),), files=(FileWrite(str(tmp_path / "conf"), "a=1\n"),))
    first = ap.apply_plan(plan, log_path=str(tmp_path / "log1"))
    assert first.status == ap.APPLIED and target.read_text() == "x"
    second = ap.apply_plan(plan, log_path=str(tmp_path / "log2"))
    assert second.status == ap.UNCHANGED
    assert [o.status for o in second.outcomes] == ["skipped", "skipped"]
    assert target.read_text() == "x"


def test_files_are_written_whole_and_a_different_existing_file_is_backed_up(tmp_path):
    conf = tmp_path / "dir with space" / "it's.conf"
    conf.parent.mkdir()
    conf.write_text("old\n")
    plan = Plan("t", "write", files=(FileWrite(str(conf), "new\n", mode=0o600),))
    result = ap.apply_plan(plan, log_path=str(tmp_path / "log"))
    assert conf.read_text() == "new\n" and (conf.stat().st_mode & 0o777) == 0o600
    assert Path(str(conf) + ap.BACKUP_SUFFIX).read_text() == "old\n"
    assert result.outcomes[0].undo == f"mv -f {shlex.quote(str(conf) + ap.BACKUP_SUFFIX)} {shlex.quote(str(conf))}"
    assert [p.name for p in conf.parent.iterdir() if p.name.endswith(".tmp")] == []


def test_a_failing_step_stops_the_plan_and_the_summary_says_what_was_done_and_how_to_undo(tmp_path):
    first, third = tmp_path / "one", tmp_path / "three"
    plan = Plan(
        "t",
        "three steps",
        steps=(touch_step(first), Step((PY, "-c", "import sys; print('boom on stderr', file=sys.stderr); sys.exit(4)"), why="fail"), touch_step(third)),
    )
    log = tmp_path / "apply.log"
    result = ap.apply_plan(plan, log_path=str(log))
    assert result.status == ap.FAILED and not result.ok
    assert first.exists() and not third.exists()
    assert result.message.startswith("step 2 of 3 failed")
    summary = result.summary()
    assert "boom on stderr" in summary
    assert f"rm -f {first}" in summary and "to undo, run in this order:" in summary
    text = log.read_text()
    assert "boom on stderr" in text and "# exit 4" in text and "# finished: failed" in text


def test_an_interrupted_apply_keeps_what_was_done_and_a_rerun_finishes_the_rest(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    plan = Plan("t", "two steps", steps=(touch_step(a), touch_step(b)))
    seen = []

    def progress(line: str) -> None:
        seen.append(line)
        if line.startswith("[2/2]"):
            raise KeyboardInterrupt  # what Ctrl-C does between steps

    result = ap.apply_plan(plan, log_path=str(tmp_path / "log"), progress=progress)
    assert result.status == ap.INTERRUPTED
    assert a.exists() and not b.exists()
    assert "rm -f" in result.summary()
    again = ap.apply_plan(plan, log_path=str(tmp_path / "log"))
    assert again.status == ap.APPLIED and b.exists()
    assert [o.status for o in again.outcomes] == ["skipped", "done"]


def test_a_refused_or_declined_plan_runs_nothing(tmp_path):
    target = tmp_path / "never"
    refused = ap.apply_plan(Plan("t", "x", steps=(touch_step(target),), refused="driver too old"), log_path=str(tmp_path / "l"))
    declined = ap.apply_plan(Plan("t", "x", steps=(touch_step(target),)), confirm=lambda plan: False, log_path=str(tmp_path / "l"))
    assert (refused.status, declined.status) == (ap.REFUSED, ap.DECLINED)
    assert not target.exists()


def test_plan_env_reaches_the_steps_without_changing_our_environment(tmp_path):
    out = tmp_path / "out"
    step = Step((PY, "-c", "import os, sys; open(sys.argv[1], 'w').write(os.environ['FW_X'] + os.environ['FW_Y'])", str(out)), env={"FW_Y": "-step"})
    ap.apply_plan(Plan("t", "env", steps=(step,), env={"FW_X": "plan"}), log_path=str(tmp_path / "l"))
    assert out.read_text() == "plan-step"
    assert "FW_X" not in os.environ


def test_a_step_that_hangs_is_killed_at_its_timeout_and_reported(tmp_path):
    plan = Plan("t", "hang", steps=(Step((PY, "-c", "import time; time.sleep(30)"), timeout_s=0.5),))
    result = ap.apply_plan(plan, log_path=str(tmp_path / "l"))
    assert result.status == ap.FAILED
    assert "no answer within 0.5s (killed)" in result.outcomes[0].output_tail


def test_a_failed_verification_is_reported_as_such(tmp_path):
    plan = Plan("t", "verify", steps=(touch_step(tmp_path / "v"),), verify=(Step((PY, "-c", "print('nope'); raise SystemExit(1)")),))
    result = ap.apply_plan(plan, log_path=str(tmp_path / "l"))
    assert result.status == ap.VERIFY_FAILED and "nope" in result.summary()


# ----------------------------------------------------------------------------- downloads
class _Handler(http.server.SimpleHTTPRequestHandler):
    stall_after: int | None = None

    def log_message(self, *args) -> None:  # keep test output clean
        pass

    def do_GET(self) -> None:  # noqa: N802
        if self.path.startswith("/stall/"):
            self.send_response(200)
            self.send_header("Content-Length", "10000000")
            self.end_headers()
            self.wfile.write(b"x" * 4096)
            self.wfile.flush()
            time.sleep(20)
            return
        super().do_GET()


@pytest.fixture
def server(tmp_path):
    root = tmp_path / "www"
    root.mkdir()
    handler = lambda *a, **k: _Handler(*a, directory=str(root), **k)  # noqa: E731
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def test_a_download_with_the_right_sha256_lands_whole_and_a_second_one_is_cached(server, tmp_path):
    root, url = server
    (root / "file.bin").write_bytes(b"payload" * 1000)
    digest = hashlib.sha256(b"payload" * 1000).hexdigest()
    dest = tmp_path / "dl" / "file.bin"
    assert dl.download(f"{url}/file.bin", str(dest), digest) == "downloaded"
    assert dest.read_bytes() == b"payload" * 1000
    assert dl.download(f"{url}/file.bin", str(dest), digest.upper()) == "cached"


def test_a_checksum_mismatch_leaves_nothing_behind(server, tmp_path):
    root, url = server
    (root / "file.bin").write_bytes(b"tampered")
    dest = tmp_path / "dl" / "file.bin"
    with pytest.raises(dl.ChecksumMismatch, match="sha256 mismatch: expected 0000"):
        dl.download(f"{url}/file.bin", str(dest), "0" * 64)
    assert list((tmp_path / "dl").iterdir()) == []


def test_a_missing_file_is_a_clear_error(server, tmp_path):
    _, url = server
    with pytest.raises(dl.DownloadError, match="HTTP 404"):
        dl.download(f"{url}/absent.run", str(tmp_path / "x"), "0" * 64)


def test_a_bad_digest_argument_is_rejected_before_any_request():
    with pytest.raises(ValueError, match="not a sha256 digest"):
        dl.normalize_sha256("abc")
    assert dl.normalize_sha256("sha256-YQhn3NbZTE42xJJPHQG52yjsCBZOivbHZPIbhCAGlfg=") == "610867dcd6d94c4e36c4924f1d01b9db28ec08164e8af6c764f21b84200695f8"


def test_a_download_killed_with_sigterm_midway_removes_its_partial_file(server, tmp_path):
    _, url = server
    dest = tmp_path / "dl" / "big.run"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.Popen([PY, "-m", "fwdoctor.recipes.download", "--sha256", "0" * 64, f"{url}/stall/big.run", str(dest)], env=env, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(200):  # wait (up to 20 s) until the partial file exists
            if dest.parent.exists() and any(p.name.endswith(".part") for p in dest.parent.iterdir()):
                break
            time.sleep(0.1)
        else:
            pytest.fail("the download never started")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM  # 143: the exit status names the signal
    assert "interrupted (SIGTERM); nothing was written" in err
    assert list(dest.parent.iterdir()) == []
