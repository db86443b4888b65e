"""Facts that say whose they are (issue 14, item 1): `facts`, `check --json` and the smoke
documents carry `host` {name, source} and `collected_at` (UTC); `check --facts` keeps the
file's; old facts files without them still load. `fleet report` names nodes by host.name.

(Not tests/test_provenance.py, which checks the KB's `source:` citations.)
"""

from __future__ import annotations

import datetime as dt
import json
import os
import socket
import tarfile
from pathlib import Path

import pytest

from fwdoctor.host import Host
from fwdoctor.model import Fact, Facts, Provenance
from fwdoctor.probes import READS
from fwdoctor.probes import system
from tests.image_helpers import member, tar_bytes

ROOTS = Path(__file__).resolve().parent / "roots"
STAMP = "%Y-%m-%dT%H:%M:%SZ"


def _utc(text: str) -> dt.datetime:
    return dt.datetime.strptime(text, STAMP).replace(tzinfo=dt.timezone.utc)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0)


# ----------------------------------------------------------------------------- the fact
def test_the_hostname_file_gives_its_first_name_line_comments_and_blanks_ignored():
    assert system.parse_hostname_file("# set by the installer\n\n  node-0417  \nother\n") == "node-0417"
    assert system.parse_hostname_file("# only a comment\n\n") is None
    assert system.parse_hostname_file("") is None


def test_a_root_folder_is_named_by_its_etc_hostname(tmp_path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "hostname").write_text("# cloud-init\ngpu-node-07\n")
    fact = system.hostname_fact(Host.at_root(tmp_path))
    assert (fact.value, fact.source) == ("gpu-node-07", "/etc/hostname")


def test_a_root_without_etc_hostname_has_no_name_and_says_why(tmp_path):
    fact = system.hostname_fact(Host.at_root(tmp_path))
    assert fact.is_known and fact.value is None and fact.source == "no /etc/hostname"


def test_an_etc_hostname_that_is_a_fifo_is_unknown_and_the_other_system_facts_stand(tmp_path):
    (tmp_path / "etc").mkdir()
    os.mkfifo(tmp_path / "etc" / "hostname")  # opening it would block: it must never be opened
    (tmp_path / "etc" / "os-release").write_text("ID=debian\nVERSION_ID=12\n")
    facts = dict((f.key, f) for f in system.system_probe.func(Host.at_root(tmp_path), Facts()))
    assert not facts["system.hostname"].is_known and "not a regular file" in facts["system.hostname"].why
    assert facts["system.os"].value["id"] == "debian"


def test_the_live_host_is_named_by_gethostname():
    fact = system.hostname_fact(Host.live_host())
    assert (fact.value, fact.source) == (socket.gethostname(), "gethostname()")


def test_etc_hostname_is_a_declared_read_so_images_keep_its_bytes():
    assert any(read.pattern == "/etc/hostname" for read in READS)


# ----------------------------------------------------------------------------- documents
def test_live_facts_name_this_host_and_when_in_utc(cli):
    before = _now()
    result = cli("facts")
    after = _now()
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert doc["schema_version"] == 1 and doc["kind"] == "facts"
    assert doc["host"] == {"name": socket.gethostname(), "source": "gethostname()"}
    assert before <= _utc(doc["collected_at"]) <= after
    assert doc["facts"]["system.hostname"] == {"value": socket.gethostname(), "source": "gethostname()"}


def test_facts_and_check_of_a_root_carry_its_hostname(cli, tmp_path):
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "etc" / "hostname").write_text("node-0417\n")
    facts = json.loads(cli("facts", "--root", str(root)).stdout)
    assert facts["host"] == {"name": "node-0417", "source": "/etc/hostname"}
    check = json.loads(cli("check", "--json", "--root", str(root)).stdout)
    assert check["host"] == {"name": "node-0417", "source": "/etc/hostname"}
    assert _utc(check["collected_at"]) <= _utc(check["checked_at"])


def test_a_fixture_root_without_hostname_has_a_null_name(cli):
    root = ROOTS / "torch-driver-ok"
    doc = json.loads(cli("check", "--json", "--root", str(root), "--env-file", str(root / "fixture.env")).stdout)
    assert doc["host"] == {"name": None, "source": "no /etc/hostname"}
    assert _utc(doc["collected_at"])  # always a time for facts collected now


def test_check_facts_keeps_the_files_host_and_collection_time(cli, tmp_path):
    saved = json.loads(cli("facts", "--root", str(ROOTS / "torch-driver-ok")).stdout)
    saved["host"] = {"name": "node-0099", "source": "gethostname()"}
    saved["collected_at"] = "2026-01-02T03:04:05Z"
    path = tmp_path / "node-0099.json"
    path.write_text(json.dumps(saved))
    before = _now()
    doc = json.loads(cli("check", "--json", "--facts", str(path)).stdout)
    assert doc["host"] == {"name": "node-0099", "source": "gethostname()"}
    assert doc["collected_at"] == "2026-01-02T03:04:05Z"  # when collected, not when re-judged
    assert _utc(doc["checked_at"]) >= before
    # and `facts --facts` passes the same provenance on unchanged
    again = json.loads(cli("facts", "--facts", str(path)).stdout)
    assert again["host"] == saved["host"] and again["collected_at"] == saved["collected_at"]


def test_an_old_facts_file_without_host_or_time_still_loads(cli, tmp_path, use_test_kb):
    root = ROOTS / "torch-driver-too-old"
    saved = json.loads(cli("facts", "--root", str(root), "--env-file", str(root / "fixture.env")).stdout)
    for key in ("host", "collected_at", "schema_version", "kind", "fwdoctor"):
        del saved[key]
    del saved["facts"]["system.hostname"]  # the fact did not exist either
    path = tmp_path / "old.json"
    path.write_text(json.dumps(saved))
    result = cli("check", "--json", "--facts", str(path))
    doc = json.loads(result.stdout)
    assert result.exit_code == 1 and "driver-too-old-for-torch" in {f["id"] for f in doc["findings"]}
    assert doc["host"] == {"name": None, "source": f"facts file {path} (no host recorded)"}
    assert doc["collected_at"] is None  # never guessed from the file's mtime


def test_an_old_facts_file_with_a_hostname_fact_keeps_that_name(tmp_path):
    from fwdoctor.sources import read_facts_file

    path = tmp_path / "old.json"
    path.write_text(json.dumps({"facts": {"system.hostname": {"value": "n1", "source": "/etc/hostname"}}, "probe_failures": []}))
    facts = read_facts_file(str(path))
    assert facts.provenance == Provenance("n1", f"facts file {path} (no host recorded)", None)


@pytest.mark.parametrize("host, collected_at, message", [
    (["node"], "2026-01-02T03:04:05Z", '"host": expected an object'),
    ({"name": 7, "source": "x"}, "2026-01-02T03:04:05Z", '"host.name": expected a string or null'),
    ({"name": "n", "source": "x"}, "yesterday", '"collected_at": expected UTC time'),
    ({"name": "n", "source": "x"}, "2026-01-02 03:04:05", '"collected_at": expected UTC time'),
])
def test_a_facts_file_with_a_malformed_host_or_time_is_exit_2_naming_the_key(cli, tmp_path, host, collected_at, message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"host": host, "collected_at": collected_at, "facts": {}, "probe_failures": []}))
    result = cli("check", "--facts", str(path))
    assert result.exit_code == 2 and message in result.output and str(path) in result.output


def test_provenance_round_trips_through_facts_json():
    facts = Facts([Fact("system.hostname", "n2", source="gethostname()")], provenance=Provenance("n2", "gethostname()", "2026-12-01T10:00:00Z"))
    doc = facts.to_json()
    assert doc["host"] == {"name": "n2", "source": "gethostname()"} and doc["collected_at"] == "2026-12-01T10:00:00Z"
    assert Facts.from_json(doc).provenance == facts.provenance


def _docker_save(tmp_path: Path, layer: bytes) -> Path:
    """A `docker save`-shaped tarball (legacy layout) around one hand-made layer."""
    manifest = json.dumps([{"Config": "cfg.json", "RepoTags": ["x:1"], "Layers": ["l0/layer.tar"]}]).encode()
    path = tmp_path / "img.tar"
    path.write_bytes(tar_bytes([(member("l0/layer.tar"), layer), (member("cfg.json"), b'{"config": {"Env": ["PATH=/bin"]}}'),
                                (member("manifest.json"), manifest)]))
    return path


def test_an_image_names_no_host_even_with_an_etc_hostname(cli, tmp_path):
    # The file in an image is Docker's per-container one (an export of the engine's container
    # shows the name of the machine that made it): it would name the inspector, not a node.
    layer = tar_bytes([(member("etc", tarfile.DIRTYPE, 0o755), None), (member("etc/hostname"), b"built-image-host\n"),
                       (member("etc/os-release"), b"ID=debian\n")])
    doc = json.loads(cli("facts", "--image-archive", str(_docker_save(tmp_path, layer))).stdout)
    assert doc["host"]["name"] is None and doc["host"]["source"].startswith("an image")
    assert _utc(doc["collected_at"])


def test_smoke_json_names_this_host_and_when_it_ran(cli):
    nvcc = "/usr/local/cuda/bin/nvcc"
    if not os.access(nvcc, os.X_OK):
        pytest.skip("no CUDA toolkit at /usr/local/cuda")
    before = _now()
    result = cli("smoke", "kernel", "--compile-only", "--arch", "8.0", "--json", env={"PATH": f"/usr/local/cuda/bin:{os.environ['PATH']}"})
    doc = json.loads(result.stdout)
    assert doc["kind"] == "smoke" and doc["host"] == {"name": socket.gethostname(), "source": "gethostname()"}
    assert before <= _utc(doc["collected_at"]) <= _now()
