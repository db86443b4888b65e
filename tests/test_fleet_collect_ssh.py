"""`fleet collect --hosts` for real: this test starts its own sshd on 127.0.0.1 (a free
port, a throwaway host key, one authorized key, key login only) and gathers this host's
facts through plain ssh and through pdsh, as a cluster admin's login node would.

Needs root (sshd's privilege separation) and openssh-server/pdsh (.ci/setup-slurm.sh
installs them); skipped without, except under FWDOCTOR_STRICT=1 (CI), where
tests/conftest.py turns the skip into a failure.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FWDOCTOR = Path(sys.executable).parent / "fwdoctor"


def _which(name: str) -> str | None:
    return shutil.which(name) or next((p for p in (f"/usr/sbin/{name}", f"/sbin/{name}") if os.access(p, os.X_OK)), None)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    """(port, ssh options for fleet collect): an sshd for this module only."""
    sshd_bin, keygen = _which("sshd"), _which("ssh-keygen")
    if os.geteuid() != 0:
        pytest.skip("sshd for the fleet collect test needs root")
    if not sshd_bin or not keygen or not _which("ssh"):
        pytest.skip("openssh-server/openssh-client not installed (run .ci/setup-slurm.sh)")
    home = tmp_path_factory.mktemp("sshd")
    for key in ("host_key", "user_key"):
        subprocess.run([keygen, "-q", "-t", "ed25519", "-N", "", "-f", str(home / key)], check=True, timeout=30)
    (home / "authorized_keys").write_text((home / "user_key.pub").read_text())
    port = _free_port()
    host_key = (home / "host_key.pub").read_text().split()[:2]
    (home / "known_hosts").write_text("".join(f"[{name}]:{port} {host_key[0]} {host_key[1]}\n" for name in ("127.0.0.1", "localhost")))
    (home / "sshd_config").write_text("\n".join([
        "ListenAddress 127.0.0.1", f"Port {port}", f"HostKey {home / 'host_key'}",
        f"AuthorizedKeysFile {home / 'authorized_keys'}", f"PidFile {home / 'sshd.pid'}",
        "PasswordAuthentication no", "KbdInteractiveAuthentication no", "UsePAM no",
        "StrictModes no", "PermitRootLogin prohibit-password", "",
    ]))
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege-separation folder
    proc = subprocess.Popen([sshd_bin, "-D", "-f", str(home / "sshd_config"), "-E", str(home / "sshd.log")])
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log = (home / "sshd.log").read_text() if (home / "sshd.log").exists() else ""
                    pytest.fail(f"sshd did not start on 127.0.0.1:{port}: {log[-2000:]}")
                time.sleep(0.1)
        options = ["-p", str(port), "-i", str(home / "user_key"), "-o", "IdentitiesOnly=yes",
                   "-o", f"UserKnownHostsFile={home / 'known_hosts'}", "-o", "StrictHostKeyChecking=yes", "-o", "LogLevel=ERROR"]
        yield port, options
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _collect(hosts: Path, out: Path, via: str, ssh_options: list[str], *extra: str) -> subprocess.CompletedProcess:
    argv = [str(FWDOCTOR), "fleet", "collect", "--hosts", str(hosts), "--via", via, "--out", str(out),
            "--fwdoctor", str(FWDOCTOR), "--connect-timeout", "5", "--timeout", "240", *extra, "--", *ssh_options]
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=REPO)


@pytest.mark.parametrize("via", ["ssh", "pdsh"])
def test_facts_of_two_hosts_are_gathered_through_a_real_sshd(sshd, tmp_path, via):
    if via == "pdsh" and _which("pdsh") is None:
        pytest.skip("pdsh not installed (run .ci/setup-slurm.sh)")
    _, options = sshd
    hosts = tmp_path / "hosts.txt"
    hosts.write_text("# two names for this machine\nlocalhost\n127.0.0.1\n")
    out = tmp_path / "out"
    result = _collect(hosts, out, via, options)
    assert result.returncode == 0, result.stderr
    assert sorted(os.listdir(out)) == ["127.0.0.1.json", "localhost.json"]
    for name in os.listdir(out):
        document = json.loads((out / name).read_text())
        assert document["kind"] == "facts"
        assert document["host"]["name"] == socket.gethostname()
        assert document["facts"]["python.version"]["value"]


@pytest.mark.parametrize("via", ["ssh", "pdsh"])
def test_an_unreachable_host_is_named_and_the_others_still_written(sshd, tmp_path, via):
    if via == "pdsh" and _which("pdsh") is None:
        pytest.skip("pdsh not installed (run .ci/setup-slurm.sh)")
    _, options = sshd
    hosts = tmp_path / "hosts.txt"
    hosts.write_text("127.0.0.1\n127.0.0.2\n")  # sshd listens on 127.0.0.1 only: .2 refuses
    out = tmp_path / "out"
    result = _collect(hosts, out, via, options)
    assert result.returncode == 1
    assert "fwdoctor: node 127.0.0.2: failed: ssh could not run the command (exit status 255)" in result.stderr
    assert "Connection refused" in result.stderr  # ssh's own words, from the node's stderr tail
    assert os.listdir(out) == ["127.0.0.1.json"]


def test_a_remote_fwdoctor_path_with_a_space_is_quoted_for_the_remote_shell(sshd, tmp_path):
    _, options = sshd
    folder = tmp_path / "my tools"
    folder.mkdir()
    (folder / "fwdoctor").symlink_to(FWDOCTOR)
    hosts = tmp_path / "hosts.txt"
    hosts.write_text("127.0.0.1\n")
    argv = [str(FWDOCTOR), "fleet", "collect", "--hosts", str(hosts), "--via", "ssh", "--out", str(tmp_path / "out"),
            "--fwdoctor", str(folder / "fwdoctor"), "--", *options]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / "out" / "127.0.0.1.json").read_text())["kind"] == "facts"


def test_a_hostile_hosts_file_runs_no_ssh_at_all(sshd, tmp_path):
    _, options = sshd
    marker = tmp_path / "pwned"
    hosts = tmp_path / "hosts.txt"
    hosts.write_text(f"127.0.0.1\n-oProxyCommand=touch {marker}\n")
    result = _collect(hosts, tmp_path / "out", "ssh", options)
    assert result.returncode == 2
    assert "line 2: host '-oProxyCommand=touch" in result.stderr
    assert not marker.exists() and not (tmp_path / "out").exists()
