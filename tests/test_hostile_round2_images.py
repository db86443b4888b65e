"""Hostile images, second round (issue 24, items 1, 2 and 6): every reader of a `docker save`
tarball or OCI layout has a budget. Decompression is capped on output and linear in it,
layer digests and diff_ids are compared with the content while it streams, layer counts,
JSON size and depth and path depth are bounded, and each refusal is one line naming the
archive and the limit (exit 2), never "internal error". The archives are built here in
Python (tar, gzip, bzip2), no engine needed; the time and memory of the bombs are measured
by benchmarks/image_bombs.py, the guards below only catch a hang."""

from __future__ import annotations

import bz2
import functools
import gzip
import hashlib
import io
import json
import random
import struct
import tarfile
import time
import tracemalloc
import zlib
from pathlib import Path

import pytest
from click.testing import CliRunner

from fwdoctor.cli import main as cli
from fwdoctor.image import archive as image_archive
from fwdoctor.image.inspected import ImageError
from tests.image_helpers import member, tar_bytes

GUARD_S = 20.0  # a hang guard, far above the ~0.3 s measured (benchmarks/image_bombs.py)


def run_cli(*args: str):
    return CliRunner().invoke(cli, list(args))


def docker_save(tmp_path: Path, layers: list[bytes], config: dict | None = None, name: str = "img.tar",
                diff_ids: list[str] | None = None, repeat: int = 1) -> Path:
    """A `docker save`-shaped tarball around hand-made layers; the config states each
    layer's diff_id (the sha256 of the uncompressed tar) unless `diff_ids` says otherwise."""
    members: list[tuple[tarfile.TarInfo, bytes | None]] = []
    names = []
    for i, layer in enumerate(layers):
        names.append(f"l{i}/layer.tar")
        members.append((member(names[-1]), layer))
    if diff_ids is None:
        diff_ids = ["sha256:" + hashlib.sha256(_plain(layer)).hexdigest() for layer in layers]
    cfg = {"config": config or {}, "rootfs": {"type": "layers", "diff_ids": diff_ids * repeat}}
    members.append((member("cfg.json"), json.dumps(cfg).encode()))
    members.append((member("manifest.json"), json.dumps([{"Config": "cfg.json", "RepoTags": ["x:1"], "Layers": names * repeat}]).encode()))
    path = tmp_path / name
    path.write_bytes(tar_bytes(members))
    return path


def _plain(layer: bytes) -> bytes:
    if layer[:2] == b"\x1f\x8b":
        return gzip.decompress(layer)
    if layer[:3] == b"BZh":
        return bz2.decompress(layer)
    return layer


def oci_layout(folder: Path, layers: list[bytes], config: dict | None = None) -> Path:
    """An OCI image layout folder with correct digests (what skopeo writes)."""
    blobs = folder / "blobs" / "sha256"
    blobs.mkdir(parents=True)

    def put(data: bytes, media: str) -> dict:
        digest = hashlib.sha256(data).hexdigest()
        (blobs / digest).write_bytes(data)
        return {"mediaType": media, "digest": f"sha256:{digest}", "size": len(data)}

    layer_descs = [put(gzip.compress(layer, mtime=0), "application/vnd.oci.image.layer.v1.tar+gzip") for layer in layers]
    cfg = {"architecture": "amd64", "os": "linux", "config": config or {},
           "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(layer).hexdigest() for layer in layers]}}
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": put(json.dumps(cfg).encode(), "application/vnd.oci.image.config.v1+json"), "layers": layer_descs}
    index = {"schemaVersion": 2, "manifests": [put(json.dumps(manifest).encode(), "application/vnd.oci.image.manifest.v1+json")]}
    (folder / "index.json").write_text(json.dumps(index))
    (folder / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
    return folder


def small_layer() -> bytes:
    return tar_bytes([
        (member("etc", tarfile.DIRTYPE, 0o755), None),
        (member("etc/os-release"), b"ID=debian\nVERSION_ID=12\n"),
        (member("usr/bin/python3", tarfile.SYMTYPE, linkname="python3.11"), None),
        (member("usr/bin/python3.11", mode=0o755), b"\x7fELF"),
    ])


def bomb_header(size: int) -> bytes:
    """The 512-byte tar header of one file of `size` zero bytes."""
    info = member("opt/zeros")
    info.size = size
    return info.tobuf(format=tarfile.GNU_FORMAT)


_GZIP_ZEROS = gzip.compress(b"\0" * (64 << 20), compresslevel=9, mtime=0)  # ~64 KB
_BZ2_ZEROS = bz2.compress(b"\0" * (64 << 20), 9)  # 79 bytes


@functools.lru_cache(maxsize=1)
def gzip_bomb() -> bytes:
    """~1 MB of gzip expanding to 1 GiB, one gzip stream as the issue's: a tar header, then
    raw deflate of 64 MiB of zeros repeated 16 times (a full flush before each resets the
    compressor, so each part is the same bytes), the final block and the real CRC and size."""
    count, chunk = 16, 64 << 20
    header = bomb_header(count * chunk)
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = deflate.compress(header) + deflate.flush(zlib.Z_FULL_FLUSH)
    zeros = deflate.compress(b"\0" * chunk) + deflate.flush(zlib.Z_FULL_FLUSH)
    crc, block = zlib.crc32(header), b"\0" * chunk
    for _ in range(count):
        crc = zlib.crc32(block, crc)
    body = head + zeros * count + deflate.flush(zlib.Z_FINISH)
    return b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff" + body + struct.pack("<II", crc, (len(header) + count * chunk) & 0xFFFFFFFF)


@functools.lru_cache(maxsize=1)
def bzip2_bomb() -> bytes:
    """A few hundred bytes of bzip2, one stream, expanding to 192 MiB (issue 24's 286 bytes
    expanded to ~800 MB; compressing that much here would cost seconds per run)."""
    return bz2.compress(bomb_header(3 * (64 << 20)) + b"\0" * (3 * (64 << 20)), 9)


# ----------------------------------------------------------------------------- bombs
@pytest.mark.parametrize("make, kind", [(gzip_bomb, "gzip"), (bzip2_bomb, "bzip2")], ids=["gzip-1MB", "bzip2-bytes"])
def test_a_decompression_bomb_layer_is_refused_at_its_cap_naming_layer_and_limit(tmp_path, make, kind):
    layer = make()
    assert len(layer) < ((1 << 20) + (64 << 10) if kind == "gzip" else 300)
    path = docker_save(tmp_path, [small_layer(), layer], diff_ids=["sha256:" + hashlib.sha256(small_layer()).hexdigest(), "sha256:" + "0" * 64])
    started = time.monotonic()
    result = run_cli("check", "--image-archive", str(path))
    assert time.monotonic() - started < GUARD_S
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1 and "Traceback" not in result.output
    assert f"--image-archive {path}: layer l1/layer.tar expands past " in result.output
    assert "the limit): a decompression bomb?" in result.output


def test_a_compressed_docker_save_tarball_still_reads_and_its_bomb_is_refused(tmp_path):
    plain = docker_save(tmp_path, [small_layer()])
    zipped = tmp_path / "img.tar.gz"
    zipped.write_bytes(gzip.compress(plain.read_bytes()))
    assert image_archive.load(str(zipped)).host().read_text("/etc/os-release").startswith("ID=debian")
    outer = tmp_path / "bomb.tar.gz"
    outer.write_bytes(gzip_bomb())
    started = time.monotonic()
    with pytest.raises(ImageError, match=r"expands past \d+ MiB .* the limit\): a decompression bomb\?"):
        image_archive.load(str(outer))
    assert time.monotonic() - started < GUARD_S


def test_gzip_and_bzip2_layers_with_several_streams_read_whole(tmp_path):
    layer = small_layer()
    half = len(layer) // 1024 * 512
    for packed in (gzip.compress(layer[:half]) + gzip.compress(layer[half:]), bz2.compress(layer[:half]) + bz2.compress(layer[half:])):
        path = docker_save(tmp_path, [packed], diff_ids=["sha256:" + hashlib.sha256(layer).hexdigest()])
        host = image_archive.load(str(path)).host()
        assert host.read_text("/etc/os-release").startswith("ID=debian") and host.is_symlink("/usr/bin/python3")


# ----------------------------------------------------------------------------- digests
def test_an_oci_layout_reads_and_a_tampered_layer_blob_is_refused_naming_it(tmp_path):
    layout = oci_layout(tmp_path / "oci", [small_layer()], {"Env": ["A=1"]})
    assert image_archive.load(str(layout)).env == {"A": "1"}
    manifest = json.loads((layout / "blobs" / "sha256" / json.loads((layout / "index.json").read_text())["manifests"][0]["digest"][7:]).read_bytes())
    blob = layout / "blobs" / "sha256" / manifest["layers"][0]["digest"][7:]
    blob.write_bytes(gzip.compress(small_layer().replace(b"ID=debian", b"ID=ubuntu"), mtime=0))
    result = run_cli("check", "--image-archive", str(layout))
    assert result.exit_code == 2, result.output
    assert f"--image-archive {layout}: layer blobs/sha256/{blob.name} does not match its digest" in result.output
    assert "a tampered or corrupt archive" in result.output and result.output.count("\n") == 1


def test_a_tampered_oci_config_or_manifest_is_refused(tmp_path):
    layout = oci_layout(tmp_path / "oci", [small_layer()], {"Env": ["A=1"]})
    index = json.loads((layout / "index.json").read_text())
    manifest_blob = layout / "blobs" / "sha256" / index["manifests"][0]["digest"][7:]
    manifest = json.loads(manifest_blob.read_bytes())
    config_blob = layout / "blobs" / "sha256" / manifest["config"]["digest"][7:]
    config_blob.write_text(config_blob.read_text().replace('"A=1"', '"A=2"'))
    with pytest.raises(ImageError, match=f"blobs/sha256/{config_blob.name} does not match its digest"):
        image_archive.load(str(layout))
    manifest_blob.write_text(manifest_blob.read_text() + " ")
    with pytest.raises(ImageError, match=f"blobs/sha256/{manifest_blob.name} does not match its digest"):
        image_archive.load(str(layout))


def test_a_docker_save_layer_that_is_not_its_diff_id_is_refused(tmp_path):
    good = docker_save(tmp_path, [small_layer()], name="good.tar")
    assert image_archive.load(str(good)).host().exists("/etc/os-release")
    bad = docker_save(tmp_path, [small_layer()], name="bad.tar", diff_ids=["sha256:" + "ab" * 32])
    with pytest.raises(ImageError, match=r"layer l0/layer.tar's uncompressed tar \(its diff_id\) does not match its digest"):
        image_archive.load(str(bad))
    short = docker_save(tmp_path, [small_layer()], name="short.tar", diff_ids=[])
    with pytest.raises(ImageError, match="cfg.json states 0 diff_ids for 1 layers"):
        image_archive.load(str(short))


# ----------------------------------------------------------------------------- counts, sizes, depths
def test_a_layer_listed_10000_times_is_refused_at_dockers_127(tmp_path):
    path = docker_save(tmp_path, [small_layer()], repeat=10_000)
    started = time.monotonic()
    result = run_cli("check", "--image-archive", str(path))
    assert time.monotonic() - started < GUARD_S
    assert result.exit_code == 2
    assert "manifest.json's image lists 10000 layers (the limit is 127, Docker's own)" in result.output


def test_a_huge_index_json_is_refused_unread(tmp_path):
    layout = oci_layout(tmp_path / "oci", [small_layer()])
    index = json.loads((layout / "index.json").read_text())
    index["annotations"] = {"pad": "x" * (64 << 20)}
    (layout / "index.json").write_text(json.dumps(index))
    result = run_cli("check", "--image-archive", str(layout))
    assert result.exit_code == 2
    assert f"--image-archive {layout}: index.json is larger than 8 MiB (the limit for an image's JSON)" in result.output


def test_deeply_nested_json_is_refused_not_an_internal_error(tmp_path):
    path = tmp_path / "deep.tar"
    path.write_bytes(tar_bytes([(member("cfg.json"), b"[" * 100_000 + b"]" * 100_000),
                                (member("manifest.json"), b'[{"Config": "cfg.json", "Layers": []}]')]))
    result = run_cli("check", "--image-archive", str(path))
    assert result.exit_code == 2 and "internal error" not in result.output
    assert "cfg.json nests deeper than 64 levels (the limit for an image's JSON)" in result.output


def test_a_3000_deep_path_is_one_skipped_member_not_an_internal_error(tmp_path):
    deep = "/".join(["d"] * 3000) + "/f"
    path = docker_save(tmp_path, [tar_bytes([(member(deep), b"x"), (member("etc/os-release"), b"ID=debian\n")])])
    inspected = image_archive.load(str(path))
    assert [s for s in inspected.skipped if "deeper than 256 folders (the limit)" in s] and len(inspected.skipped) == 1
    assert inspected.host().read_text("/etc/os-release") == "ID=debian\n"
    result = run_cli("check", "--image-archive", str(path))
    assert result.exit_code in (0, 1) and "internal error" not in result.output


def test_dangling_links_link_loops_and_deep_link_targets_are_judged_not_internal_errors(tmp_path):
    layer = tar_bytes([
        (member("usr/bin/python3", tarfile.SYMTYPE, linkname="python3"), None),
        (member("usr/lib", tarfile.SYMTYPE, linkname="lib"), None),
        (member("etc/os-release", tarfile.SYMTYPE, linkname="../etc/os-release"), None),
        (member("usr/local/cuda", tarfile.SYMTYPE, linkname="/nonexistent/cuda"), None),
        (member("opt/deep", tarfile.SYMTYPE, linkname="/".join([".."] * 3000) + "/x"), None),
    ] + [(member(f"chain/{i}", tarfile.SYMTYPE, linkname=f"{i + 1}"), None) for i in range(200)])
    result = run_cli("check", "--image-archive", str(docker_save(tmp_path, [layer])))
    assert result.exit_code in (0, 1), result.output
    assert "internal error" not in result.output and "Traceback" not in result.output


# ----------------------------------------------------------------------------- lstrip("./")
def test_top_level_dot_names_keep_their_dots(tmp_path):
    lower = tar_bytes([
        (member("./opt/tool/bin", tarfile.DIRTYPE, 0o755), None),
        (member("./.venv/bin/python", mode=0o755), b"\x7fELF"),
        (member("./venv/marker"), b"m"),
    ])
    upper = tar_bytes([(member("./.wh.opt"), b"")])
    inspected = image_archive.load(str(docker_save(tmp_path, [lower, upper])))
    assert inspected.tree.names("/") == [".venv", "venv"]  # /opt whited out
    assert inspected.tree.names("/.venv/bin") == ["python"] and inspected.tree.names("/venv") == ["marker"]


# ----------------------------------------------------------------------------- fuzz (item 6)
def _mutations(data: bytes, rng: random.Random, count: int):
    for _ in range(count):
        mutated = bytearray(data)
        how = rng.randrange(4)
        if how == 0:  # flip bytes
            for _ in range(rng.randint(1, 8)):
                mutated[rng.randrange(len(mutated))] ^= 1 << rng.randrange(8)
        elif how == 1:  # truncate
            del mutated[rng.randrange(len(mutated)):]
        elif how == 2:  # overwrite a run with one byte value
            start = rng.randrange(len(mutated))
            mutated[start:start + rng.randint(1, 64)] = bytes([rng.choice((0, 0x30, 0xff, ord("/"), ord(".")))]) * rng.randint(1, 64)
        else:  # splice a slice elsewhere
            a, b = sorted(rng.randrange(len(mutated)) for _ in range(2))
            at = rng.randrange(len(mutated))
            mutated[at:at] = mutated[a:b]
        yield bytes(mutated)


def _load_or_refuse(path: Path) -> None:
    """Loaded, or refused in one line; within the hang guard and 64 MiB of Python memory."""
    started = time.monotonic()
    tracemalloc.start()
    try:
        image_archive.load(str(path))
    except ImageError as exc:
        assert "\n" not in str(exc)
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert time.monotonic() - started < GUARD_S
    assert peak < 64 << 20, peak


def test_the_deadline_for_one_image_is_a_refusal_naming_it(tmp_path):
    path = docker_save(tmp_path, [small_layer()])
    with pytest.raises(ImageError, match=r"layer l0/layer.tar: not read within 0 s \(the limit for one image\)"):
        image_archive.load(str(path), limits=image_archive.Limits(deadline_s=0))


def test_random_mutations_of_a_docker_save_tarball_load_or_are_refused(tmp_path):
    rng = random.Random(24)
    base = docker_save(tmp_path, [small_layer(), gzip.compress(small_layer(), mtime=0)], {"Env": ["A=1"]}).read_bytes()
    for i, data in enumerate(_mutations(base, rng, 150)):
        path = tmp_path / f"m{i}.tar"
        path.write_bytes(data)
        _load_or_refuse(path)


def test_random_mutations_of_oci_blobs_and_json_load_or_are_refused(tmp_path):
    rng = random.Random(2424)
    for i in range(60):
        layout = oci_layout(tmp_path / f"oci{i}", [small_layer()], {"Env": ["A=1"]})
        files = sorted(p for p in layout.rglob("*") if p.is_file())
        target = rng.choice(files)
        target.write_bytes(next(_mutations(target.read_bytes(), rng, 1)))
        _load_or_refuse(layout)


def test_a_mutated_archive_on_the_cli_is_exit_2_naming_it(tmp_path):
    rng = random.Random(7)
    base = docker_save(tmp_path, [gzip.compress(small_layer(), mtime=0)]).read_bytes()
    refused = 0
    for i, data in enumerate(_mutations(base, rng, 30)):
        path = tmp_path / f"c{i}.tar"
        path.write_bytes(data)
        result = run_cli("check", "--image-archive", str(path))
        assert result.exit_code in (0, 1, 2) and "internal error" not in result.output and "Traceback" not in result.output
        if result.exit_code == 2:
            refused += 1
            assert result.output.startswith(f"fwdoctor: error: --image-archive {path}: ") and result.output.count("\n") == 1
    assert refused > 0


def test_zstd_layers_in_several_frames_read_whole_and_a_zstd_bomb_is_refused(tmp_path):
    import zstandard  # a dev extra (pyproject.toml)
    layer = small_layer()
    half = len(layer) // 1024 * 512
    packed = zstandard.ZstdCompressor().compress(layer[:half]) + zstandard.ZstdCompressor().compress(layer[half:])
    path = docker_save(tmp_path, [packed], diff_ids=["sha256:" + hashlib.sha256(layer).hexdigest()], name="z.tar")
    assert image_archive.load(str(path)).host().read_text("/etc/os-release").startswith("ID=debian")
    zeros = zstandard.ZstdCompressor(level=19).compress(b"\0" * (64 << 20))
    bomb = zstandard.ZstdCompressor().compress(bomb_header(16 * (64 << 20))) + zeros * 16
    path = docker_save(tmp_path, [bomb], diff_ids=["sha256:" + "0" * 64], name="zb.tar")
    started = time.monotonic()
    with pytest.raises(ImageError, match=r"layer l0/layer.tar expands past \d+ MiB"):
        image_archive.load(str(path))
    assert time.monotonic() - started < GUARD_S


@pytest.mark.parametrize("members, message", [
    ([(member("manifest.json", tarfile.SYMTYPE, linkname="manifest.json"), None)], "manifest.json is a link to nothing in the archive (or a loop of links)"),
    ([(member("a", tarfile.SYMTYPE, linkname="b"), None), (member("b", tarfile.SYMTYPE, linkname="a"), None),
      (member("manifest.json", tarfile.SYMTYPE, linkname="a"), None)], "manifest.json is a link to nothing in the archive (or a loop of links)"),
    ([(member("manifest.json", tarfile.SYMTYPE, linkname="nothing"), None)], "manifest.json is a link to nothing in the archive"),
    ([(member("cfg.json"), b'{"config": {}}'), (member("l/layer.tar", tarfile.SYMTYPE, linkname="l/layer.tar"), None),
      (member("manifest.json"), b'[{"Config": "cfg.json", "Layers": ["l/layer.tar"]}]')], "l/layer.tar is a link to nothing in the archive"),
    ([(member("cfg.json"), b'{"rootfs": {"diff_ids": "x"}}'), (member("manifest.json"), b'[{"Config": "cfg.json", "Layers": []}]')],
     "cfg.json states no list of diff_ids for 0 layers"),
], ids=["self-loop", "two-loop", "dangling", "layer-loop", "diff-ids-not-a-list"])
def test_links_and_odd_fields_in_the_archive_itself_are_one_line_refusals(tmp_path, members, message):
    path = tmp_path / "odd.tar"
    path.write_bytes(tar_bytes(members))
    result = run_cli("check", "--image-archive", str(path))
    assert result.exit_code == 2 and "internal error" not in result.output
    assert result.output == f"fwdoctor: error: --image-archive {path}: {message}" + result.output.split(message, 1)[1]
    assert result.output.count("\n") == 1
