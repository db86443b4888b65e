"""cuDNN/NCCL probes: parsers on real files (tests/data/libs/README.md says where each came
from), fuzzing of every parser, and the install scan on small root trees."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fwdoctor import libraries, versions
from fwdoctor.engine import collect
from fwdoctor.host import Host
from fwdoctor.libraries import CUDNN, NCCL
from fwdoctor.model import Fact, Facts
from fwdoctor.probes import cudnn, ldpath, libscan, nccl
from fwdoctor.probes.base import Probe

DATA = Path(__file__).resolve().parent / "data" / "libs"
SITE = "/opt/venv/lib/python3.11/site-packages"
NCCL_STRING = b"\x00NCCL version %s+cuda%s\x00"


# ----------------------------------------------------------------------------- parsers
def test_the_cudnn_9_24_wheel_header_reads_as_9_24_0():
    assert CUDNN.parse_header((DATA / "cudnn_version-9.24.0.h").read_text()) == "9.24.0"


def test_a_cudnn_8_header_reads_its_three_macros():
    assert CUDNN.parse_header((DATA / "cudnn_version-8.9.3-excerpt.h").read_text()) == "8.9.3"


def test_the_nccl_2_30_7_wheel_header_reads_as_2_30_7():
    assert NCCL.parse_header((DATA / "nccl-2.30.7.h").read_text()) == "2.30.7"


def test_a_header_without_the_macros_gives_none():
    assert CUDNN.parse_header("#define CUDNN_VERSION 90240\n") is None
    assert NCCL.parse_header((DATA / "cudnn_version-9.24.0.h").read_text()) is None


def test_the_real_libnccl_bytes_give_version_and_cuda():
    assert libscan.parse_nccl_embedded((DATA / "libnccl-2.30.7-rodata.bin").read_bytes()) == ("2.30.7", "13.3")


def test_the_later_compiled_with_line_is_not_mistaken_for_the_version_string():
    # libnccl also holds "NCCL version 2.30.7 compiled with CUDA 13.3" (offset 3076456).
    assert libscan.parse_nccl_embedded(b"NCCL version 2.30.7 compiled with CUDA 13.3\x00") is None


@pytest.mark.parametrize(
    "name, version",
    [
        ("libcudnn.so.9.1.0", "9.1.0"),
        ("libcudnn.so.9", "9"),
        ("libcudnn.so", None),
        ("libcudnn_ops.so.9", None),
        ("libcudnn.so.9.1.0.bak", None),
        ("libnccl.so.2.21.5", None),
    ],
)
def test_cudnn_library_file_names_give_their_version(name, version):
    assert libraries.library_file_version(name, "libcudnn.so") == version


def test_real_dpkg_stanzas_parse_to_name_and_version():
    packages = libscan.parse_dpkg_status((DATA / "dpkg-status-debian12-excerpt").read_text())
    assert packages == [{"name": "libgomp1", "version": "12.2.0-14+deb12u1"}, {"name": "gcc-12", "version": "12.2.0-14+deb12u1"}]


def test_a_removed_package_with_config_files_left_is_not_installed():
    names = [p["name"] for p in libscan.parse_dpkg_status((DATA / "dpkg-status-cudnn-nccl-constructed").read_text())]
    assert names == ["libcudnn8", "libcudnn8-dev", "libnccl2", "libnccl-dev"]


@pytest.mark.parametrize(
    "name, version, major",
    [
        ("libcudnn8", "8.9.7.29-1+cuda12.2", 12),
        ("libcudnn8", "8.9.6.50-1+cuda11.8", 11),
        ("libcudnn9-cuda-12", "9.1.0.70-1", 12),
        ("libnccl2", "2.21.5-1+cuda12.4", 12),
        ("libnccl2", "2.21.5-1", None),
    ],
)
def test_debian_packages_name_their_cuda_major(name, version, major):
    assert libraries.deb_cuda_major(name, version) == major


def test_archive_folder_names_and_wheel_names_give_the_cuda_major():
    assert libscan.tarball_cuda_major("cudnn-linux-x86_64-9.1.0.70_cuda12-archive") == 12
    assert libscan.tarball_cuda_major("nccl_2.18.1-1+cuda12.1_x86_64") == 12
    assert libscan.tarball_cuda_major("cudnn") is None
    assert libraries.pip_cuda_major("nvidia-cudnn-cu13") == 13
    assert libraries.pip_cuda_major("nvidia-cudnn") is None


def test_conda_records_give_the_cuda_major_from_depends_or_build():
    assert libscan.conda_cuda_major({"depends": ["cuda-version >=12.0,<13"], "build": "h1"}) == 12
    assert libscan.conda_cuda_major({"depends": ["cudatoolkit 11.8.*"]}) == 11
    assert libscan.conda_cuda_major({"depends": [], "build": "cuda12_0"}) == 12
    assert libscan.conda_cuda_major({"depends": None}) is None


def test_ld_preload_splits_on_colons_and_spaces():
    assert libscan.preload_entries(" /a/libnccl.so.2:/b/x.so  /c/y.so ") == ["/a/libnccl.so.2", "/b/x.so", "/c/y.so"]


# ----------------------------------------------------------------------------- fuzzing
@settings(max_examples=150, deadline=None)
@given(st.text())
def test_the_header_parsers_never_raise_on_any_text(text):
    for parse in (CUDNN.parse_header, NCCL.parse_header):
        result = parse(text)
        assert result is None or all(p.isdigit() for p in result.split("."))


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 99), st.integers(0, 99), st.integers(0, 99), st.text(alphabet="abc 19.", max_size=12))
def test_generated_cudnn_macros_round_trip_with_trailing_comments(major, minor, patch, comment):
    text = f"#define CUDNN_MAJOR {major}\n#define CUDNN_MINOR  {minor} /* {comment} */\n#  define CUDNN_PATCHLEVEL {patch} // {comment}\n"
    assert CUDNN.parse_header(text) == f"{major}.{minor}.{patch}"


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=300), st.binary(max_size=300))
def test_the_embedded_string_is_found_inside_any_bytes(before, after):
    data = before + NCCL_STRING % (b"2.26.5", b"12.9") + after
    assert libscan.parse_nccl_embedded(data) == ("2.26.5", "12.9")


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=500))
def test_the_embedded_parser_never_raises_on_any_bytes(data):
    result = libscan.parse_nccl_embedded(data)
    assert result is None or isinstance(result[0], str)


@settings(max_examples=150, deadline=None)
@given(st.text())
def test_the_dpkg_parser_never_raises_and_keeps_only_named_versioned_packages(text):
    for package in libscan.parse_dpkg_status(text):
        assert package["name"] and package["version"]


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=40))
def test_file_name_and_package_parsers_never_raise(text):
    assert libraries.library_file_version(text, "libnccl.so") in (None, text[len("libnccl.so."):])
    libraries.deb_cuda_major(text, text)
    versions.deb_upstream_version(text)
    libscan.tarball_cuda_major(text)
    libraries.pip_cuda_major(text)


# ----------------------------------------------------------------------------- the scan
def put(root: Path, rel: str, content: str | bytes = b"stand-in\n") -> Path:
    path = root / rel.lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


def link(root: Path, rel: str, target: str) -> None:
    path = root / rel.lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, path)


def run_probes(root: Path, env: dict[str, str], facts: list[Fact] = ()) -> Facts:
    host = Host.at_root(root, env)
    seed = Probe("seed", tuple(f.key for f in facts), lambda h, f: list(facts))
    return collect(host, (seed, *ldpath.PROBES, *cudnn.PROBES, *nccl.PROBES))


def wheel_site(root: Path, cudnn_cuda: int = 13, nccl_cuda: int = 13) -> None:
    put(root, f"{SITE}/nvidia_cudnn_cu{cudnn_cuda}-9.24.0.43.dist-info/METADATA", "Name: nvidia-cudnn\n")
    put(root, f"{SITE}/nvidia/cudnn/include/cudnn_version.h", (DATA / "cudnn_version-9.24.0.h").read_text())
    put(root, f"{SITE}/nvidia/cudnn/lib/libcudnn.so.9")
    put(root, f"{SITE}/nvidia_nccl_cu{nccl_cuda}-2.30.7.dist-info/METADATA", "Name: nvidia-nccl\n")
    put(root, f"{SITE}/nvidia/nccl/include/nccl.h", (DATA / "nccl-2.30.7.h").read_text())
    put(root, f"{SITE}/nvidia/nccl/lib/libnccl.so.2", (DATA / "libnccl-2.30.7-rodata.bin").read_bytes())


def test_pip_wheels_are_found_through_virtual_env(tmp_path):
    wheel_site(tmp_path)
    facts = run_probes(tmp_path, {"VIRTUAL_ENV": "/opt/venv"})
    assert facts["cudnn.installs"] == [{
        "kind": "pip", "prefix": f"{SITE}/nvidia/cudnn", "header_version": "9.24.0", "library_version": "9",
        "library": f"{SITE}/nvidia/cudnn/lib/libcudnn.so.9", "header": f"{SITE}/nvidia/cudnn/include/cudnn_version.h",
        "cuda_major": 13, "package": "nvidia-cudnn-cu13 9.24.0.43",
    }]
    (install,) = facts["nccl.installs"]
    assert (install["library_version"], install["header_version"], install["cuda_major"]) == ("2.30.7", "2.30.7", 13)
    assert facts["cudnn.ld_first"] is None and facts["nccl.ld_first"] is None


def test_the_python_probes_site_packages_are_used_when_known(tmp_path):
    wheel_site(tmp_path)
    facts = run_probes(tmp_path, {}, [Fact("python.site_packages", [SITE])])
    assert [i["package"] for i in facts["cudnn.installs"]] == ["nvidia-cudnn-cu13 9.24.0.43"]


def test_a_cu12_and_a_cu13_dist_info_sharing_one_folder_are_two_installs(tmp_path):
    wheel_site(tmp_path)
    put(tmp_path, f"{SITE}/nvidia_cudnn_cu12-9.10.2.21.dist-info/METADATA", "Name: nvidia-cudnn-cu12\n")
    facts = run_probes(tmp_path, {"VIRTUAL_ENV": "/opt/venv"})
    assert [(i["package"], i["cuda_major"]) for i in facts["cudnn.installs"]] == [
        ("nvidia-cudnn-cu12 9.10.2.21", 12), ("nvidia-cudnn-cu13 9.24.0.43", 13)]


def test_debian_packages_claim_the_system_files_of_their_major(tmp_path):
    put(tmp_path, "/var/lib/dpkg/status", (DATA / "dpkg-status-cudnn-nccl-constructed").read_text())
    put(tmp_path, "/usr/lib/x86_64-linux-gnu/libcudnn.so.8.9.7")
    link(tmp_path, "/usr/lib/x86_64-linux-gnu/libcudnn.so.8", "libcudnn.so.8.9.7")
    put(tmp_path, "/usr/lib/x86_64-linux-gnu/libcudnn.so.9.1.0")  # unpackaged: a "system" install
    put(tmp_path, "/usr/include/x86_64-linux-gnu/cudnn_version_v9.h", (DATA / "cudnn_version-9.24.0.h").read_text())
    put(tmp_path, "/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5", NCCL_STRING % (b"2.21.5", b"12.4"))
    facts = run_probes(tmp_path, {})
    kinds = [(i["kind"], i["library_version"], i["header_version"], i["cuda_major"], i["package"]) for i in facts["cudnn.installs"]]
    assert kinds == [
        ("dpkg", "8.9.7", None, 12, "libcudnn8 8.9.7.29-1+cuda12.2"),
        ("system", "9.1.0", "9.24.0", None, None),
    ]
    (nccl_install,) = facts["nccl.installs"]
    assert (nccl_install["kind"], nccl_install["library_version"], nccl_install["cuda_major"]) == ("dpkg", "2.21.5", 12)


def test_a_cudnn_copied_into_a_toolkit_is_found_once_through_the_cuda_link(tmp_path):
    put(tmp_path, "/usr/local/cuda-12.4/include/cudnn_version.h", (DATA / "cudnn_version-8.9.3-excerpt.h").read_text())
    put(tmp_path, "/usr/local/cuda-12.4/lib64/libcudnn.so.8.9.3")
    link(tmp_path, "/usr/local/cuda", "cuda-12.4")
    facts = run_probes(tmp_path, {"CUDA_HOME": "/usr/local/cuda"})
    assert [(i["kind"], i["prefix"], i["header_version"], i["library_version"]) for i in facts["cudnn.installs"]] == [
        ("toolkit", "/usr/local/cuda-12.4", "8.9.3", "8.9.3")]


def test_archives_and_conda_prefixes_are_installs_with_their_cuda_major(tmp_path):
    pre = "/usr/local/cudnn-linux-x86_64-9.1.0.70_cuda12-archive"
    put(tmp_path, f"{pre}/lib/libcudnn.so.9.1.0")
    put(tmp_path, "/opt/conda/envs/x/conda-meta/nccl-2.21.5.1-h1.json", json.dumps({"name": "nccl", "version": "2.21.5.1", "build": "h1", "depends": ["cuda-version >=12,<13"]}))
    put(tmp_path, "/opt/conda/envs/x/lib/libnccl.so.2.21.5", NCCL_STRING % (b"2.21.5", b"12.4"))
    facts = run_probes(tmp_path, {"CONDA_PREFIX": "/opt/conda/envs/x"})
    assert [(i["kind"], i["cuda_major"], i["library_version"]) for i in facts["cudnn.installs"]] == [("tarball", 12, "9.1.0")]
    assert [(i["kind"], i["cuda_major"], i["package"]) for i in facts["nccl.installs"]] == [("conda", 12, "nccl 2.21.5.1")]


def test_ld_preload_comes_before_ld_library_path(tmp_path):
    wheel_site(tmp_path)
    put(tmp_path, "/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5", NCCL_STRING % (b"2.21.5", b"12.4"))
    put(tmp_path, "/usr/local/nccl/lib/libnccl.so.2", NCCL_STRING % (b"2.18.1", b"12.1"))
    env = {"VIRTUAL_ENV": "/opt/venv", "LD_PRELOAD": "/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5", "LD_LIBRARY_PATH": "/usr/local/nccl/lib"}
    facts = run_probes(tmp_path, env)
    assert facts["ld.preload"] == ["/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5"]
    assert facts["ld.library_path"] == ["/usr/local/nccl/lib"]
    assert facts["nccl.ld_first"] == {"path": "/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5", "version": "2.21.5", "via": "LD_PRELOAD"}


def test_ld_library_path_is_searched_for_the_soname_torch_asks_for(tmp_path):
    wheel_site(tmp_path)
    put(tmp_path, "/old/lib/libcudnn.so.8")  # libcudnn.so.8 cannot satisfy torch's libcudnn.so.9
    put(tmp_path, "/new/lib/libcudnn.so.9.1.0")
    link(tmp_path, "/new/lib/libcudnn.so.9", "libcudnn.so.9.1.0")
    facts = run_probes(tmp_path, {"VIRTUAL_ENV": "/opt/venv", "LD_LIBRARY_PATH": "/old/lib::/new/lib"})
    assert facts["cudnn.ld_first"] == {"path": "/new/lib/libcudnn.so.9", "version": "9.1.0", "via": "LD_LIBRARY_PATH"}


def test_a_missing_preload_file_is_not_a_loaded_library(tmp_path):
    wheel_site(tmp_path)
    facts = run_probes(tmp_path, {"VIRTUAL_ENV": "/opt/venv", "LD_PRELOAD": "/nowhere/libnccl.so.2"})
    assert facts["nccl.ld_first"] is None


def test_garbage_headers_and_dangling_links_give_nones_not_failures(tmp_path):
    put(tmp_path, "/usr/include/nccl.h", b"\xff\xfe garbage \x00\x01")
    link(tmp_path, "/usr/lib/x86_64-linux-gnu/libnccl.so.2", "libnccl.so.2.99.0")  # dangling
    put(tmp_path, "/usr/include/cudnn_version.h", "#define CUDNN_MAJOR nine\n")
    facts = run_probes(tmp_path, {})
    assert facts.failures == []
    assert facts["cudnn.installs"] == [] and facts["nccl.installs"] == []


def test_a_header_folder_that_is_a_directory_does_not_break_the_scan(tmp_path):
    (tmp_path / "usr/include/nccl.h").mkdir(parents=True)
    put(tmp_path, "/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5", NCCL_STRING % (b"2.21.5", b"12.4"))
    facts = run_probes(tmp_path, {})
    assert facts.failures == []
    assert [(i["header"], i["library_version"]) for i in facts["nccl.installs"]] == [(None, "2.21.5")]


def test_the_embedded_scan_finds_a_string_split_across_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr(libscan, "EMBEDDED_SCAN_CHUNK", 64)
    put(tmp_path, "/lib/libnccl.so.2", b"x" * 50 + NCCL_STRING % (b"2.26.5", b"12.9"))
    assert libscan.scan_embedded(Host.at_root(tmp_path), "/lib/libnccl.so.2") == ("2.26.5", "12.9")


def test_the_embedded_scan_stops_at_its_limit(tmp_path):
    put(tmp_path, "/lib/libnccl.so.2", b"x" * 4096 + NCCL_STRING % (b"2.26.5", b"12.9"))
    assert libscan.scan_embedded(Host.at_root(tmp_path), "/lib/libnccl.so.2", limit=4096) is None


def test_a_file_seen_as_system_and_as_toolkit_is_one_install(tmp_path):
    # A toolkit rooted at /usr/local (nvcc in /usr/local/bin) shares /usr/local/lib with the system scan.
    put(tmp_path, "/usr/local/lib/libnccl.so.2.21.5", NCCL_STRING % (b"2.21.5", b"12.4"))
    put(tmp_path, "/usr/local/include/nccl.h", (DATA / "nccl-2.30.7.h").read_text())
    facts = run_probes(tmp_path, {}, [Fact("cuda.toolkits", [{"root": "/usr/local", "version": "12.4.131"}])])
    assert [(i["kind"], i["library"]) for i in facts["nccl.installs"]] == [("system", "/usr/local/lib/libnccl.so.2.21.5")]
