"""Images are read in one pass into a bounded in-memory tree (doctor/image/tree.py,
doctor/image/host.py): the probes see the same files, names, links and sizes as in the fully
unpacked image, content is kept only for the reads the probes declare
(fwdoctor.probes.READS), and nothing in the stream ever touches the host filesystem."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from fwdoctor.engine import collect
from fwdoctor.host import Host, UnreadableError, load_env_file
from fwdoctor.image import local_engine
from fwdoctor.image.host import ImageHost
from fwdoctor.image.keep import KeepPlan, probe_plan
from fwdoctor.image.stream import ChunkReader
from fwdoctor.image.tree import TreeBuilder
from fwdoctor.image.unpack import safe_extract
from fwdoctor.probes import PROBES, READS
from fwdoctor.probes.libscan import EMBEDDED_SCAN_CHUNK, scan_embedded
from tests.image_helpers import BASE_IMAGE, BIG_TAG, LAYERED_DOCKERFILE, LAYERED_TAG, build, docker_engine, member, tar_bytes

ROOTS = Path(__file__).parent / "roots"
CASES = [(root.name, env.name) for root in sorted(ROOTS.iterdir()) if root.is_dir() for env in sorted(root.glob("*.env"))]


def tree_of(data: bytes, plan=None, layer: bool = False, budget: int | None = None) -> TreeBuilder:
    builder = TreeBuilder(plan or probe_plan(), **({"budget": budget} if budget else {}))
    builder.apply(io.BytesIO(data), layer=layer)
    return builder


def tar_of_folder(folder: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as archive:
        archive.add(folder, arcname=".")
    return buf.getvalue()


class RecordingImageHost(ImageHost):
    """Notes every read the tree could not answer (a probe reading an undeclared file)."""

    refused: list[str]

    def read_bytes(self, path, limit=4 * 1024 * 1024):
        try:
            return super().read_bytes(path, limit)
        except UnreadableError as exc:
            self.refused.append(f"{self.resolve(path)}: {exc.reason}")
            raise


# ----------------------------------------------------------------------------- the declaration
@pytest.mark.parametrize(
    "pattern, path, matches",
    [
        ("**/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6", True),
        ("**/libc.so.6", "/libc.so.6", True),
        ("**/libc.so.6", "/usr/lib/libc.so.60", False),
        ("**/torch-*.dist-info/METADATA", "/v/lib/python3.11/site-packages/torch-2.9.1.dist-info/METADATA", True),
        ("**/torch-*.dist-info/METADATA", "/v/torch-2.9/x.dist-info/METADATA", False),  # * stays in one folder
        ("/etc/os-release", "/etc/os-release", True),
        ("/etc/os-release", "/x/etc/os-release", False),
        ("/proc/**", "/proc/driver/nvidia/version", True),
        ("**/include/python*/patchlevel.h", "/usr/include/python3.11/patchlevel.h", True),
        ("**/libnccl.so*", "/usr/lib/x86_64-linux-gnu/libnccl.so.2", True),
        ("**/libnccl.so*", "/usr/lib/x86_64-linux-gnu/libnccl_static.a", False),
    ],
)
def test_read_patterns_are_globs_over_the_whole_path(pattern, path, matches):
    from fwdoctor.probes.base import Read

    assert (KeepPlan([Read(pattern)]).rule(path) is not None) is matches


def test_the_declared_reads_bound_every_file_and_the_nccl_scan_stops_at_its_marker():
    plan = probe_plan()
    assert all(r.limit <= 64 * 1024 * 1024 for r in READS)
    limit, until = plan.rule("/usr/lib/x86_64-linux-gnu/libnccl.so.2")
    assert limit == 32 * 1024 * 1024 and until is not None
    assert plan.rule("/opt/venv/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so") is None
    assert plan.rule("/etc/os-release") == (4 * 1024 * 1024, None)


@pytest.mark.parametrize("root, env_name", CASES, ids=[f"{r}:{e}" for r, e in CASES])
def test_each_fixture_root_read_from_a_stream_gives_the_facts_of_the_unpacked_folder(root, env_name):
    """The whole probe set over tests/roots/*: the streamed tree must answer every probe as
    the folder does, and no probe may read a file the READS list does not declare."""
    folder = ROOTS / root
    env = load_env_file(str(folder / env_name))
    builder = tree_of(tar_of_folder(folder))
    host = RecordingImageHost.of_tree(builder.tree, env)
    host.refused = []
    streamed = collect(host, PROBES).to_json()
    assert host.refused == [], "a probe read files no Read in fwdoctor.probes.READS declares"
    # An image names no host (system.probes' hostname_fact); a root folder names its own.
    assert streamed["facts"]["system.hostname"]["value"] is None
    assert _without_hostname(streamed) == _without_hostname(collect(Host.at_root(folder, env), PROBES).to_json())


def test_without_the_declared_contents_the_facts_differ():
    """The comparison above can fail: an empty plan loses torch's version."""
    folder = ROOTS / "torch-driver-ok"
    env = load_env_file(str(folder / "fixture.env"))
    empty = tree_of(tar_of_folder(folder), plan=KeepPlan([]))
    facts = collect(ImageHost.of_tree(empty.tree, env), PROBES)
    assert facts.get("torch.version") is None
    assert collect(Host.at_root(folder, env), PROBES).get("torch.version")


# ----------------------------------------------------------------------------- the tree
def test_files_keep_names_sizes_modes_and_links_but_content_only_when_declared():
    blob = os.urandom(64) * (1 << 14)  # 1 MiB
    data = tar_bytes([
        (member("usr/lib/x86_64-linux-gnu/libcudnn.so.9.24.0", mode=0o755), blob),
        (member("usr/lib/x86_64-linux-gnu/libcudnn.so.9", tarfile.SYMTYPE, linkname="libcudnn.so.9.24.0"), None),
        (member("etc/os-release"), b'ID=debian\nVERSION_ID="12"\n'),
        (member("usr/bin/tool", mode=0o750), b"\x7fELF"),
        (member("usr/bin/hard", tarfile.LNKTYPE, mode=0o750, linkname="usr/bin/tool"), None),
    ])
    builder = tree_of(data)
    host = ImageHost.of_tree(builder.tree, {})
    assert builder.kept == len(b'ID=debian\nVERSION_ID="12"\n')  # nothing else was kept
    assert host.stat("/usr/lib/x86_64-linux-gnu/libcudnn.so.9").st_size == len(blob)
    assert host.is_symlink("/usr/lib/x86_64-linux-gnu/libcudnn.so.9")
    assert host.resolve("/usr/lib/x86_64-linux-gnu/libcudnn.so.9") == "/usr/lib/x86_64-linux-gnu/libcudnn.so.9.24.0"
    assert host.is_executable("/usr/bin/tool") and host.is_executable("/usr/bin/hard")
    assert host.listdir("/usr/bin") == ["hard", "tool"]
    assert host.read_text("/etc/os-release").startswith("ID=debian")
    with pytest.raises(UnreadableError, match="not kept from the image"):
        host.read_bytes("/usr/bin/tool")


def test_the_nccl_scan_finds_the_same_string_in_the_kept_prefix(tmp_path):
    """The marker 3 MB into a 40 MB library: the tree keeps up to the end of the 1 MiB chunk
    holding it (not the 32 MB the scan may read), and the probe's scan finds the same."""
    lib = bytes(3 << 20) + b"NCCL version 2.21.5+cuda12.4\x00" + bytes(37 << 20)
    data = tar_bytes([(member("usr/lib/x86_64-linux-gnu/libnccl.so.2"), lib)])
    builder = tree_of(data)
    assert builder.kept == 4 * EMBEDDED_SCAN_CHUNK
    safe_extract(io.BytesIO(data), str(tmp_path))
    assert scan_embedded(ImageHost.of_tree(builder.tree, {}), "/usr/lib/x86_64-linux-gnu/libnccl.so.2") == ("2.21.5", "12.4")
    assert scan_embedded(Host.at_root(tmp_path), "/usr/lib/x86_64-linux-gnu/libnccl.so.2") == ("2.21.5", "12.4")


def test_kept_content_has_a_budget_and_the_skip_list_says_when_it_is_spent():
    data = tar_bytes([(member("var/lib/dpkg/status"), b"x" * 5000), (member("etc/os-release"), b"ID=debian\n")])
    builder = tree_of(data, budget=4096)
    assert builder.skipped == ["var/lib/dpkg/status: content not kept (the 0 MB budget for kept files is spent)"]
    assert ImageHost.of_tree(builder.tree, {}).read_text("/etc/os-release") == "ID=debian\n"


@pytest.mark.parametrize(
    "bad, why",
    [
        (member("/etc/passwd"), "absolute path"),
        (member("../escape"), "'..' in the path"),
        (member("a/../../escape"), "'..' in the path"),
        (member("dev/nvidia0", tarfile.CHRTYPE), "device node"),
        (member("run/fifo", tarfile.FIFOTYPE), "FIFO"),
        (member("etc/shadow-copy", tarfile.LNKTYPE, linkname="etc/missing"), "hard link to etc/missing outside the unpacked files"),
    ],
)
def test_a_hostile_member_is_skipped_with_the_reason(bad, why):
    builder = tree_of(tar_bytes([(bad, b"x" if bad.isfile() else None)]))
    assert builder.skipped == [f"{bad.name}: {why}"]
    assert set(builder.tree.nodes) == {"/"} | ({"/etc"} if bad.name.startswith("etc/") else set())


def test_nothing_goes_through_a_symlink_and_links_resolve_inside_the_image(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("host file")
    data = tar_bytes([
        (member("lib", tarfile.SYMTYPE, linkname=str(outside)), None),
        (member("lib/evil.so"), b"payload"),
        (member("usr/local/cuda", tarfile.SYMTYPE, linkname="../../../../.." + str(outside)), None),
    ])
    builder = tree_of(data)
    assert builder.skipped == ["lib/evil.so: parent folder is a link or a file"]
    assert sorted(p.name for p in outside.iterdir()) == ["secret"]
    host = ImageHost.of_tree(builder.tree, {})
    # Both links point at the host's folder by name; inside the image they lead nowhere.
    assert host.resolve("/usr/local/cuda/secret") == str(outside / "secret")
    assert host.read_text("/usr/local/cuda/secret") is None and host.read_text("/lib/secret") is None


def test_a_folder_member_over_a_link_never_changes_the_link_target(tmp_path):
    """The on-disk skeleton (`export`): a hostile `x -> /outside` then `x/` with mode 0777
    must not chmod the outside folder."""
    outside = tmp_path / "outside"
    outside.mkdir(mode=0o700)
    data = tar_bytes([(member("x", tarfile.SYMTYPE, linkname=str(outside)), None), (member("x", tarfile.DIRTYPE, mode=0o777), None)])
    safe_extract(io.BytesIO(data), str(tmp_path / "root"))
    assert (outside.stat().st_mode & 0o777) == 0o700
    assert (tmp_path / "root" / "x").is_dir() and not (tmp_path / "root" / "x").is_symlink()


def test_the_on_disk_skeleton_holds_placeholders_as_holes(tmp_path):
    data = tar_bytes([(member("opt/model.bin"), os.urandom(1 << 20) * 8), (member("etc/os-release"), b"ID=debian\n")])
    safe_extract(io.BytesIO(data), str(tmp_path), probe_plan())
    placeholder = os.stat(tmp_path / "opt/model.bin")
    assert placeholder.st_size == 8 << 20 and placeholder.st_blocks * 512 < 64 * 1024
    assert (tmp_path / "etc/os-release").read_text() == "ID=debian\n"


def test_the_chunk_reader_hands_out_any_read_size_over_any_chunking():
    payload = os.urandom(100_003)
    chunks = [payload[i:i + 4099] for i in range(0, len(payload), 4099)]
    reader = ChunkReader(chunks)
    got = [reader.read(n) for n in (1, 10240, 7, 1 << 20, 5)]
    assert b"".join(got) == payload and reader.read(10) == b""


def test_the_chunk_reader_seeks_forward_so_tarfile_skips_data_in_random_access_mode():
    reader = ChunkReader([b"abc", b"defgh", b"ij"])
    assert reader.read(2) == b"ab" and reader.seek(6) == 6 and reader.tell() == 6 and reader.read(3) == b"ghi"
    reader.seek(-1, 1)  # back inside the current chunk: allowed
    assert reader.read(1) == b"i"
    with pytest.raises(OSError, match="cannot seek back"):
        reader.seek(0)


@pytest.mark.parametrize("chunk", [7, 4096, 1 << 20])
def test_an_export_read_over_forward_seeks_builds_the_tree_a_stream_read_does(chunk):
    """inspect() reads the export in tarfile's "r:" mode over a ChunkReader; any chunking
    must give the tree (names, sizes, kept content) that "r|" gives."""
    data = tar_of_folder(ROOTS / "libs-nccl-cu12-beside-cu13")
    streamed = tree_of(data)
    seeking = TreeBuilder(probe_plan())
    seeking.apply(ChunkReader(data[i:i + chunk] for i in range(0, len(data), chunk)), mode="r:")
    assert seeking.tree.children == streamed.tree.children
    assert {p: (n.kind, n.mode, n.size, n.link, n.data) for p, n in seeking.tree.nodes.items()} == {
        p: (n.kind, n.mode, n.size, n.link, n.data) for p, n in streamed.tree.nodes.items()
    }
    assert seeking.kept == streamed.kept > 0


# ----------------------------------------------------------------------------- real images
@pytest.fixture(scope="module")
def engine():
    client = docker_engine()
    if client is None:
        pytest.skip(f"no Docker engine with {BASE_IMAGE} (run .ci/setup-docker.sh)")
    return client


@pytest.fixture(scope="module")
def layered(engine, tmp_path_factory):
    build(LAYERED_TAG, LAYERED_DOCKERFILE, tmp_path_factory.mktemp("layered-ctx"))
    return LAYERED_TAG


@pytest.mark.docker
def test_an_image_read_in_memory_gives_the_facts_of_its_full_unpacking(layered, engine, tmp_path):
    inspected = local_engine.inspect(layered, client=engine)
    full = tmp_path / "full"
    skipped = []
    local_engine._export_stream(layered, engine, lambda stream: skipped.extend(safe_extract(stream, str(full))))
    streamed = collect(inspected.host(), PROBES)
    unpacked = collect(Host.at_root(full, inspected.env), PROBES)
    # Everything alike but the host name: an image names none, while the unpacked export,
    # judged as a root folder, reads the /etc/hostname Docker wrote for the container (the
    # engine's name, or nothing, depending on how the engine created it).
    # So is /.dockerenv: the engine adds it to every container, the image does not hold it.
    assert streamed.get("system.hostname") is None
    assert unpacked.get("system.container") is True and streamed.get("system.container") is False
    unpacked_doc = _without_hostname(unpacked.to_json())
    unpacked_doc["facts"]["system.container"] = streamed.to_json()["facts"]["system.container"]
    assert _without_hostname(streamed.to_json()) == unpacked_doc
    assert inspected.skipped == tuple(skipped) and "dev/full: device node" in skipped
    nccl = streamed.get("nccl.installs")
    assert [(i["library_version"], i["cuda_major"]) for i in nccl] == [("2.21.5", 12)]
    assert streamed.get("torch.version") == "2.13.0+cu124"
    assert inspected.config["User"] == "65534" and inspected.env["FWDOCTOR_IMAGE_TEST"] == "1"
    assert inspected.tree.kept_bytes() < 8 * 1024 * 1024


# Facts an image answers differently from the same tree as a root folder: an image names no host
# (system.hostname), and only an image is judged for the driver libraries it ships (image.driver_libs).
_IMAGE_ONLY = ("system.hostname", "image.driver_libs")


def _without_hostname(doc: dict) -> dict:
    return {**doc, "facts": {k: v for k, v in doc["facts"].items() if k not in _IMAGE_ONLY}}


def _check_json(args: list[str], tmpdir: str | None = None) -> dict:
    env = {**os.environ, **({"TMPDIR": tmpdir} if tmpdir else {})}
    proc = subprocess.run(
        [sys.executable, "-c", "from fwdoctor.cli import main; main()", "check", *args, "--json"],
        capture_output=True, text=True, env=env, timeout=600,
    )
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    return json.loads(proc.stdout)


def _findings(report: dict) -> list:
    return sorted(json.dumps(f, sort_keys=True) for f in report["findings"])


@pytest.mark.docker
@pytest.mark.slow
def test_an_image_bigger_than_the_temporary_folder_is_judged_the_same(engine, tmp_path):
    """A 48 MiB tmpfs as TMPDIR, an image of ~470 MB (the base plus 300 MB of random bytes):
    unpacking it there runs out of space, the check does not notice."""
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("mounting a size-limited tmpfs needs root")
    tag = BIG_TAG
    build(tag, f"FROM {BASE_IMAGE}\nRUN head -c 300M /dev/urandom > /opt/weights.bin\n", tmp_path / "ctx")
    try:
        _judged_alike_in_a_small_tmpdir(engine, tag, tmp_path)
    finally:
        engine.images.remove(tag, force=True)  # ~470 MB (more on the vfs store): not left behind


def _judged_alike_in_a_small_tmpdir(engine, tag: str, tmp_path: Path) -> None:
    small = tmp_path / "small"
    small.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", str(small)], capture_output=True, timeout=60)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode()[:200]}")
    try:
        # The old way (unpack everything) does not fit: the test's premise.
        full_skipped: list[str] = []
        local_engine._export_stream(tag, engine, lambda stream: full_skipped.extend(safe_extract(stream, str(small / "full"))))
        assert any("No space left on device" in s for s in full_skipped)
        shutil.rmtree(small / "full")
        in_small = _check_json(["--image", tag], tmpdir=str(small))
        statvfs = os.statvfs(small)
        assert (statvfs.f_blocks - statvfs.f_bfree) * statvfs.f_frsize < 1024 * 1024  # nothing left behind
    finally:
        subprocess.run(["umount", str(small)], capture_output=True, timeout=60)
    ample = _check_json(["--image", tag])
    assert _findings(in_small) == _findings(ample) and in_small["facts"] == ample["facts"]
    assert in_small["facts"]["system.os"]["value"]
