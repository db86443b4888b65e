"""container-image-ships-driver-libs (FWD147) and container-toolkit-known-bug (FWD148), issue 26:
an image that carries the NVIDIA driver's own libraries is judged from the image itself
(`check --image-archive`) and from nvidia-container-cli's "file exists" in a report; the
toolkit's device-cgroup refusal from its text, with the KB's release rows. The errors.yaml
rows' own examples run in tests/test_triage_corpus.py.
"""

from __future__ import annotations

import tarfile

import pytest

from fwdoctor.engine import collect, judge
from fwdoctor.host import Host
from fwdoctor.image import archive as image_archive
from fwdoctor.model import Fact, Facts
from fwdoctor.probes import driver as driver_probes
from fwdoctor.rules import driver as driver_rules
from fwdoctor.triage.judge import run
from tests.image_helpers import member, tar_bytes
from tests.test_image_archive import docker_save_tar

LIB = "usr/lib/x86_64-linux-gnu"


def image_facts(tmp_path, members) -> Facts:
    inspected = image_archive.load(str(docker_save_tar(tmp_path, [tar_bytes(members)], {})))
    return collect(inspected.host(), driver_probes.PROBES)


def ids(text: str, kb) -> set[str]:
    return {f.id for f in run(text, kb).report.findings}


def test_an_image_with_libcuda_and_libnvidia_ml_copied_in_lists_them(tmp_path):
    facts = image_facts(tmp_path, [
        (member(f"{LIB}/libcuda.so.1"), b"\x7fELF"),
        (member(f"{LIB}/libnvidia-ml.so.1"), b"\x7fELF"),
        (member(f"{LIB}/libnvidia-ml.so.535.104.05"), b""),  # a committed container's empty mount point
        (member(f"{LIB}/libcudart.so.12"), b"\x7fELF"),  # the CUDA runtime belongs in an image
    ])
    assert facts["image.driver_libs"] == [f"/{LIB}/libcuda.so.1", f"/{LIB}/libnvidia-ml.so.1", f"/{LIB}/libnvidia-ml.so.535.104.05"]


def test_the_forward_compat_libcuda_of_a_cuda_image_is_not_a_driver_library_it_ships(tmp_path):
    facts = image_facts(tmp_path, [
        (member("usr/local/cuda-12.4/compat/libcuda.so.1", tarfile.SYMTYPE, linkname="libcuda.so.550.54.15"), None),
        (member("usr/local/cuda-12.4/compat/libcuda.so.550.54.15"), b"\x7fELF"),
        (member(f"{LIB}/libcudart.so.12"), b"\x7fELF"),
    ])
    assert facts["image.driver_libs"] == []


def test_a_running_system_or_a_root_folder_is_not_judged_as_an_image(tmp_path):
    (tmp_path / LIB).mkdir(parents=True)
    (tmp_path / LIB / "libcuda.so.1").write_bytes(b"")
    facts = collect(Host.at_root(tmp_path), driver_probes.PROBES)
    assert facts.known("image.driver_libs") and facts["image.driver_libs"] is None


@pytest.mark.parametrize("libs, fires", [([f"/{LIB}/libcuda.so.1"], True), ([], False), (None, False)])
def test_the_rule_fires_only_on_driver_libraries_an_image_ships(test_kb, libs, fires):
    report = judge(Facts([Fact("image.driver_libs", libs, source="test")]), test_kb, [driver_rules.container_image_ships_driver_libs])
    assert [f.id for f in report.findings] == (["container-image-ships-driver-libs"] if fires else [])
    if fires:
        assert "libcuda.so.1" in report.findings[0].message and "rm -f" in report.findings[0].fix.commands[0]


def test_nvidia_container_clis_file_exists_names_the_library_the_image_ships(test_kb):
    text = ("nvidia-container-cli: mount error: file creation failed: /var/lib/docker/overlay2/4f79/merged/"
            "usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1: file exists: unknown.\n")
    findings = run(text, test_kb).report.findings
    assert [f.id for f in findings] == ["container-image-ships-driver-libs"]
    assert "libnvidia-ml.so.1" in findings[0].message


def test_a_persistenced_socket_that_cannot_be_created_is_not_a_driver_library_in_the_image(test_kb):
    text = "nvidia-container-cli: mount error: file creation failed: /var/lib/docker/overlay2/x/merged/run/nvidia-persistenced/socket: no such device or address: unknown.\n"
    assert "container-image-ships-driver-libs" not in ids(text, test_kb)


def test_the_device_cgroup_refusal_names_the_release_with_the_known_regression(test_kb):
    kb = test_kb  # tests/kb/docker.yaml's toolkit_regressions row
    text = ("nvidia-container-cli: mount error: failed to add device rules: unable to find any existing device filters "
            "attached to the cgroup: bpf_prog_query(BPF_CGROUP_DEVICE) failed: operation not permitted\n")
    findings = run(text, kb).report.findings
    assert [f.id for f in findings] == ["container-toolkit-known-bug"]
    assert "1.18.0" in findings[0].message and "no-cgroups" in findings[0].message
    assert "1.17.9" in findings[0].fix.note


def test_runcs_own_bpf_refusal_without_the_toolkit_is_not_a_toolkit_bug(test_kb):
    text = "setting cgroup config for procHooks process caused: bpf_prog_query(BPF_CGROUP_DEVICE) failed: operation not permitted: unknown.\n"
    assert "container-toolkit-known-bug" not in ids(text, test_kb)
