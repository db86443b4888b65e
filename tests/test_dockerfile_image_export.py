"""doctor/image/unpack.py and local_engine.py: an image's filesystem is unpacked defensively (no absolute or `..`
members, no device nodes, nothing written through links) and its ENV parsed, without the
image ever being started."""

from __future__ import annotations

import io
import os
import stat
import tarfile
from pathlib import Path

import pytest

from conftest import require_module

from fwdoctor.image import local_engine
from fwdoctor.image.inspected import ImageError, parse_env
from fwdoctor.image.unpack import safe_extract
from image_helpers import member, tar_bytes


def test_a_normal_tree_is_unpacked_with_files_dirs_and_links(tmp_path):
    data = tar_bytes([
        (member("usr", tarfile.DIRTYPE, 0o755), None),
        (member("usr/lib", tarfile.DIRTYPE, 0o755), None),
        (member("usr/lib/libcudnn.so.9.24.0", mode=0o644), b"ELF"),
        (member("usr/lib/libcudnn.so.9", tarfile.SYMTYPE, linkname="libcudnn.so.9.24.0"), None),
        (member("usr/lib/hard", tarfile.LNKTYPE, linkname="usr/lib/libcudnn.so.9.24.0"), None),
    ])
    skipped = safe_extract(io.BytesIO(data), str(tmp_path))
    assert skipped == []
    assert (tmp_path / "usr/lib/libcudnn.so.9").read_bytes() == b"ELF"
    assert os.readlink(tmp_path / "usr/lib/libcudnn.so.9") == "libcudnn.so.9.24.0"
    assert (tmp_path / "usr/lib/hard").read_bytes() == b"ELF"


@pytest.mark.parametrize(
    "bad, why",
    [
        (member("/etc/passwd"), "absolute path"),
        (member("../escape"), "'..' in the path"),
        (member("a/../../escape"), "'..' in the path"),
        (member("dev/nvidia0", tarfile.CHRTYPE), "device node"),
        (member("dev/sda", tarfile.BLKTYPE), "device node"),
        (member("run/fifo", tarfile.FIFOTYPE), "FIFO"),
    ],
)
def test_a_dangerous_member_is_skipped_with_the_reason(tmp_path, bad, why):
    data = tar_bytes([(bad, b"x" if bad.isfile() else None)])
    skipped = safe_extract(io.BytesIO(data), str(tmp_path / "root"))
    assert skipped == [f"{bad.name}: {why}"]
    assert not (tmp_path / "escape").exists() and not (tmp_path / "etc").exists()


def test_nothing_is_written_through_a_symlink_that_leaves_the_tree(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "root"
    data = tar_bytes([
        (member("lib", tarfile.SYMTYPE, linkname=str(outside)), None),
        (member("lib/evil.so"), b"payload"),
    ])
    skipped = safe_extract(io.BytesIO(data), str(root))
    assert skipped == ["lib/evil.so: parent folder is a link out of the tree"]
    assert list(outside.iterdir()) == []


def test_a_hard_link_to_a_file_outside_the_tree_is_refused(tmp_path):
    data = tar_bytes([(member("etc/shadow-copy", tarfile.LNKTYPE, linkname="etc/missing"), None)])
    skipped = safe_extract(io.BytesIO(data), str(tmp_path))
    assert skipped == ["etc/shadow-copy: hard link to etc/missing outside the unpacked files"]


def test_setuid_bits_are_dropped(tmp_path):
    data = tar_bytes([(member("bin/su", mode=0o4755), b"#!")])
    safe_extract(io.BytesIO(data), str(tmp_path))
    assert not os.stat(tmp_path / "bin/su").st_mode & stat.S_ISUID


def test_image_env_is_parsed_into_a_mapping():
    env = parse_env(["PATH=/usr/bin:/bin", "NVIDIA_REQUIRE_CUDA=cuda>=13.0 brand=tesla,driver>=535", "EMPTY", "X=a=b"])
    assert env == {"PATH": "/usr/bin:/bin", "NVIDIA_REQUIRE_CUDA": "cuda>=13.0 brand=tesla,driver>=535", "EMPTY": "", "X": "a=b"}


class FakeContainer:
    def __init__(self, payload: bytes) -> None:
        self.payload, self.removed = payload, False

    def export(self, chunk_size: int):
        for i in range(0, len(self.payload), 7):  # odd chunking: the reader must reassemble
            yield self.payload[i:i + 7]

    def remove(self, force: bool = False) -> None:
        self.removed = True


class FakeClient:
    """Stands in for docker.DockerClient: images.get / containers.create only (no start)."""

    def __init__(self, payload: bytes, env: list[str]) -> None:
        outer = self
        self.container = FakeContainer(payload)
        self.created: list[dict] = []

        class Images:
            def get(self, tag):
                import docker.errors

                if tag != "demo:1":
                    raise docker.errors.ImageNotFound(f"No such image: {tag}")
                return type("Img", (), {"id": "sha256:abc", "attrs": {"Config": {"Env": env}}})()

        class Containers:
            def create(self, image_id, **kwargs):
                outer.created.append({"image": image_id, **kwargs})
                return outer.container

        self.images, self.containers = Images(), Containers()


def test_export_unpacks_a_created_never_started_container_and_removes_it():
    require_module("docker", "pip install 'fwdoctor[docker]'")
    payload = tar_bytes([(member("etc", tarfile.DIRTYPE, 0o755), None), (member("etc/os-release"), b'ID=ubuntu\nVERSION_ID="24.04"\n')])
    client = FakeClient(payload, ["CUDA_VERSION=13.0.2", "PATH=/usr/local/nvidia/bin:/usr/bin"])
    exported = local_engine.export("demo:1", client=client)
    assert Path(exported.root, "etc/os-release").read_text().startswith("ID=ubuntu")
    assert exported.env["CUDA_VERSION"] == "13.0.2"
    assert client.container.removed and client.created[0]["network_disabled"] is True


class SlowContainer(FakeContainer):
    """An engine that keeps streaming, one small chunk at a time, past any deadline."""

    def export(self, chunk_size: int):
        import time

        # One member that claims 1 GiB, then its content trickling in: a tar that never ends
        # early (zero blocks alone would read as the end of the archive).
        info = tarfile.TarInfo("opt/huge.bin")
        info.size = 1 << 30
        yield info.tobuf(format=tarfile.GNU_FORMAT)
        while True:
            time.sleep(0.05)
            yield b"x" * 4096


@pytest.mark.parametrize("read", ["export", "inspect"])
def test_an_export_that_streams_past_its_deadline_is_refused_naming_it(monkeypatch, read):
    # issue 24: --image-archive had a deadline per image; the engine's export had none.
    require_module("docker", "pip install 'fwdoctor[docker]'")
    monkeypatch.setattr(local_engine, "EXPORT_DEADLINE_S", 0.3)
    client = FakeClient(b"", [])
    client.container = SlowContainer(b"")
    with pytest.raises(ImageError, match=r"the export of 'demo:1': not read within 0.3 s \(the limit for one image\)"):
        getattr(local_engine, read)("demo:1", client=client)
    assert client.container.removed


def test_export_of_a_missing_image_is_an_image_error():
    require_module("docker", "pip install 'fwdoctor[docker]'")
    with pytest.raises(ImageError, match="no image 'nope:1' in the local engine"):
        local_engine.export("nope:1", client=FakeClient(b"", []))


def test_export_of_a_corrupt_stream_is_an_image_error():
    require_module("docker", "pip install 'fwdoctor[docker]'")
    client = FakeClient(b"this is not a tar stream at all" * 40, [])
    with pytest.raises(ImageError, match="not a readable tar stream"):
        local_engine.export("demo:1", client=client)
    assert client.container.removed


def test_check_image_without_an_engine_is_a_one_line_error(cli, monkeypatch):
    require_module("docker", "pip install 'fwdoctor[docker]'")
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    result = cli("check", "--image", "anything:1")
    assert result.exit_code == 2
    assert "--image anything:1: no Docker engine reachable" in result.output
