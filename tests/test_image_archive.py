"""`--image-archive`: `docker save` tarballs and OCI image layouts read without a Docker
engine (doctor/image/archive.py): layers applied in order, whiteouts and opaque folders
honoured, the config's ENV/User/Entrypoint used, and a clear exit 2 for a bad input.

The archives are real: `docker save` of an image built on the CI base image
(tests/image_helpers.py), and OCI layouts made from it by skopeo (Debian's skopeo 1.9,
`skopeo copy docker-archive:... oci:...`; Docker 28 with the vfs store here writes the
legacy `docker save` format, without index.json). The opaque folder is a layer added to
that OCI layout by hand, with correct digests (the vfs engine records a removed and
re-made folder as `.wh.` files, never as `.wh..wh..opq`)."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from fwdoctor.cli import main as cli
from fwdoctor.engine import collect
from fwdoctor.image import archive as image_archive
from fwdoctor.image import local_engine
from fwdoctor.probes import PROBES
from tests.image_helpers import BASE_IMAGE, LAYERED_DOCKERFILE, LAYERED_TAG, build, docker_engine, member, tar_bytes
from conftest import require_module


def run_cli(*args: str):
    return CliRunner().invoke(cli, list(args))


def docker_save_tar(tmp_path: Path, layers: list[bytes], config: dict, name: str = "img.tar") -> Path:
    """A `docker save`-shaped tarball (legacy layout) around hand-made layers."""
    members: list[tuple[tarfile.TarInfo, bytes | None]] = []
    names = []
    for i, layer in enumerate(layers):
        names.append(f"l{i}/layer.tar")
        members.append((member(names[-1]), layer))
    members.append((member("cfg.json"), json.dumps({"config": config}).encode()))
    members.append((member("manifest.json"), json.dumps([{"Config": "cfg.json", "RepoTags": ["x:1"], "Layers": names}]).encode()))
    path = tmp_path / name
    path.write_bytes(tar_bytes(members))
    return path


def tree_names(inspected, folder: str) -> list[str]:
    return inspected.tree.names(folder)


# ----------------------------------------------------------------------------- without an engine
def test_hand_made_layers_apply_in_order_with_whiteouts_and_opaque_folders(tmp_path):
    lower = tar_bytes([
        (member("etc", tarfile.DIRTYPE, 0o755), None),
        (member("etc/os-release"), b"ID=debian\n"),
        (member("opt/a/old.txt"), b"a"),
        (member("opt/b/gone.txt"), b"b"),
        (member("opt/c/kept.txt"), b"c"),
    ])
    upper = tar_bytes([
        (member("opt/a", tarfile.DIRTYPE, 0o755), None),
        (member("opt/a/.wh..wh..opq"), b""),
        (member("opt/a/new.txt"), b"n"),
        (member("opt/b/.wh.gone.txt"), b""),
        (member("opt/.wh.c"), b""),
        (member("etc/os-release"), b"ID=ubuntu\n"),
    ])
    path = docker_save_tar(tmp_path, [lower, upper], {"Env": ["A=1", "PATH=/bin"], "User": "1000", "Entrypoint": ["/x"]})
    inspected = image_archive.load(str(path))
    assert tree_names(inspected, "/opt") == ["a", "b"]
    assert tree_names(inspected, "/opt/a") == ["new.txt"] and tree_names(inspected, "/opt/b") == []
    host = inspected.host()
    assert host.read_text("/etc/os-release") == "ID=ubuntu\n"
    assert inspected.env == {"A": "1", "PATH": "/bin"} and host.env["A"] == "1"
    assert inspected.config["User"] == "1000" and inspected.config["Entrypoint"] == ["/x"]


def test_a_hostile_layer_touches_nothing_outside_and_says_what_it_refused(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    layer = tar_bytes([
        (member(str(outside / "abs")), b"x"),
        (member("../../escape"), b"x"),
        (member("dev/sda", tarfile.BLKTYPE), None),
        (member("lib", tarfile.SYMTYPE, linkname=str(outside)), None),
        (member("lib/evil.so"), b"x"),
        (member("opt/.wh..."), b""),
    ])
    inspected = image_archive.load(str(docker_save_tar(tmp_path, [layer], {})))
    assert list(outside.iterdir()) == []
    reasons = [s.split(": ", 1)[1] for s in inspected.skipped]
    assert reasons == ["absolute path", "'..' in the path", "device node", "parent folder is a link or a file", "whiteout of '..'"]


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda tmp: tmp / "missing.tar", "no such file or folder"),
        (lambda tmp: (tmp / "notes.txt").write_text("hello\n") and tmp / "notes.txt", "not a tar archive"),
        (lambda tmp: (tmp / "empty.tar").write_bytes(tar_bytes([(member("x"), b"x")])) and tmp / "empty.tar",
         "no index.json (OCI layout) and no manifest.json (docker save)"),
        (lambda tmp: (tmp / "bad.tar").write_bytes(tar_bytes([(member("manifest.json"), b"[{")])) and tmp / "bad.tar",
         "manifest.json is not valid JSON"),
        (lambda tmp: (tmp / "nolayer.tar").write_bytes(tar_bytes([
            (member("c.json"), b'{"config": {}}'),
            (member("manifest.json"), b'[{"Config": "c.json", "Layers": ["abc/layer.tar"]}]'),
        ])) and tmp / "nolayer.tar", "manifest.json names layer abc/layer.tar, which is not in the archive"),
        (lambda tmp: (tmp / "oci.tar").write_bytes(tar_bytes([
            (member("index.json"), json.dumps({"schemaVersion": 2, "manifests": [{"digest": "sha256:" + "ab" * 32}]}).encode()),
        ])) and tmp / "oci.tar", "the manifest names blobs/sha256/" + "ab" * 32 + ", which is not in the archive"),
        (lambda tmp: (tmp / "corrupt.tar").write_bytes(tar_bytes([
            (member("c.json"), b'{"config": {}}'),
            (member("l/layer.tar"), b"\x1f\x8b" + b"garbage" * 100),
            (member("manifest.json"), b'[{"Config": "c.json", "Layers": ["l/layer.tar"]}]'),
        ])) and tmp / "corrupt.tar", "layer l/layer.tar is not a readable tar"),
    ],
    ids=["missing", "not-a-tar", "no-manifest", "bad-json", "missing-layer", "missing-blob", "corrupt-layer"],
)
def test_a_bad_archive_is_exit_2_with_a_message_naming_it(tmp_path, make, message):
    path = make(tmp_path)
    result = run_cli("check", "--image-archive", str(path))
    assert result.exit_code == 2, result.output
    assert f"--image-archive {path}: " in result.output and message in result.output
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit)


def test_image_archive_is_one_source_among_the_others(tmp_path):
    result = run_cli("check", "--image-archive", str(tmp_path), "--root", str(tmp_path))
    assert result.exit_code == 2 and "--root and --image-archive cannot be combined" in result.output


# ----------------------------------------------------------------------------- real archives
@pytest.fixture(scope="module")
def engine():
    client = docker_engine()
    if client is None:
        pytest.skip(f"no Docker engine with {BASE_IMAGE} (run .ci/setup-docker.sh)")
    return client


@pytest.fixture(scope="module")
def saved(engine, tmp_path_factory) -> Path:
    build(LAYERED_TAG, LAYERED_DOCKERFILE, tmp_path_factory.mktemp("layered-ctx"))
    path = tmp_path_factory.mktemp("saved") / "layered.tar"
    subprocess.run(["docker", "save", "-o", str(path), LAYERED_TAG], check=True, capture_output=True, timeout=600)
    return path


@pytest.fixture(scope="module")
def exported_facts(engine, saved) -> dict:
    return collect(local_engine.inspect(LAYERED_TAG, client=engine).host(), PROBES).to_json()


def skopeo_oci(saved: Path, dest: Path, *extra: str) -> Path:
    if not shutil.which("skopeo"):
        pytest.skip("skopeo is not installed (apt-get install skopeo)")
    subprocess.run(["skopeo", "copy", "-q", *extra, f"docker-archive:{saved}", f"oci:{dest}:layered"], check=True, capture_output=True, timeout=600)
    return dest


@pytest.mark.docker
def test_a_docker_save_tarball_reads_like_the_export_of_the_image(saved, exported_facts):
    inspected = image_archive.load(str(saved))
    assert collect(inspected.host(), PROBES).to_json() == exported_facts
    # RUN rm in the second layer: whiteouts, honoured.
    assert tree_names(inspected, "/opt") == ["keep", "opq"]
    assert tree_names(inspected, "/opt/keep") == [] and tree_names(inspected, "/opt/opq") == ["new.txt"]
    assert inspected.config["User"] == "65534" and inspected.config["Entrypoint"] == ["/bin/true"]
    assert inspected.env["FWDOCTOR_IMAGE_TEST"] == "1"


@pytest.mark.docker
def test_an_oci_layout_folder_and_its_tarball_read_like_the_export(saved, exported_facts, tmp_path):
    layout = skopeo_oci(saved, tmp_path / "oci")
    assert json.loads((layout / "index.json").read_text())["manifests"][0]["mediaType"] == "application/vnd.oci.image.manifest.v1+json"
    assert collect(image_archive.load(str(layout)).host(), PROBES).to_json() == exported_facts
    tarred = tmp_path / "oci.tar"
    with tarfile.open(tarred, "w") as archive:
        archive.add(layout, arcname=".")
    inspected = image_archive.load(str(tarred))
    assert collect(inspected.host(), PROBES).to_json() == exported_facts
    assert tree_names(inspected, "/opt/opq") == ["new.txt"]


def _add_layer(layout: Path, layer_tar: bytes) -> None:
    """Append a gzip layer to an OCI layout, with the digests a registry would check."""
    blobs = layout / "blobs" / "sha256"

    def put(data: bytes) -> dict:
        digest = hashlib.sha256(data).hexdigest()
        (blobs / digest).write_bytes(data)
        return {"digest": f"sha256:{digest}", "size": len(data)}

    index = json.loads((layout / "index.json").read_text())
    manifest = json.loads((blobs / index["manifests"][0]["digest"].split(":")[1]).read_text())
    config = json.loads((blobs / manifest["config"]["digest"].split(":")[1]).read_text())
    compressed = gzip.compress(layer_tar, mtime=0)
    manifest["layers"].append({"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", **put(compressed)})
    config["rootfs"]["diff_ids"].append("sha256:" + hashlib.sha256(layer_tar).hexdigest())
    manifest["config"].update(put(json.dumps(config).encode()))
    index["manifests"][0].update(put(json.dumps(manifest).encode()))
    (layout / "index.json").write_text(json.dumps(index))


@pytest.mark.docker
def test_an_opaque_folder_in_a_later_oci_layer_hides_what_the_earlier_ones_put_there(saved, tmp_path):
    layout = skopeo_oci(saved, tmp_path / "oci")
    _add_layer(layout, tar_bytes([
        (member("opt/opq", tarfile.DIRTYPE, 0o755), None),
        (member("opt/opq/.wh..wh..opq"), b""),
        (member("opt/opq/fresh.txt"), b"f"),
    ]))
    # skopeo re-reads the edited layout, checking every digest: a valid OCI layout.
    resaved = tmp_path / "resaved.tar"
    subprocess.run(["skopeo", "copy", "-q", f"oci:{layout}:layered", f"docker-archive:{resaved}"], check=True, capture_output=True, timeout=600)
    for source in (layout, resaved):
        inspected = image_archive.load(str(source))
        assert tree_names(inspected, "/opt/opq") == ["fresh.txt"], source
        assert tree_names(inspected, "/opt") == ["keep", "opq"]


# One branch per test: the zstandard module is in the dev extras, and its absence is made
# in-process (an import of a None entry in sys.modules raises ImportError, as when it is
# not installed), so both run everywhere instead of whichever this machine happens to have.
@pytest.mark.docker
def test_zstd_layers_are_read_like_gzip_ones(saved, exported_facts, tmp_path):
    require_module("zstandard", "pip install zstandard")
    layout = skopeo_oci(saved, tmp_path / "ociz", "--dest-compress-format", "zstd")
    assert collect(image_archive.load(str(layout)).host(), PROBES).to_json() == exported_facts


@pytest.mark.docker
def test_zstd_layers_without_the_zstandard_module_are_refused_saying_so(saved, tmp_path, monkeypatch):
    layout = skopeo_oci(saved, tmp_path / "ociz", "--dest-compress-format", "zstd")
    monkeypatch.setitem(sys.modules, "zstandard", None)
    result = run_cli("check", "--image-archive", str(layout))
    assert result.exit_code == 2
    assert "is zstd-compressed and the zstandard module is not installed (pip install zstandard)" in result.output
    assert "layer blobs/sha256/" in result.output


@pytest.mark.docker
def test_check_gives_the_same_report_from_the_engine_and_from_the_tarball(saved):
    from_engine = run_cli("check", "--image", LAYERED_TAG, "--json")
    from_tarball = run_cli("check", "--image-archive", str(saved), "--json")
    assert from_engine.exit_code == from_tarball.exit_code and from_engine.exit_code in (0, 1), from_tarball.output
    engine_report, tarball_report = json.loads(from_engine.output), json.loads(from_tarball.output)
    assert engine_report["findings"] == tarball_report["findings"] and engine_report["facts"] == tarball_report["facts"]
    assert engine_report["facts"]["torch.version"]["value"] == "2.13.0+cu124"
