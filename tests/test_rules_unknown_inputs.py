"""An unknown never looks healthy (issue 26, r10): regular rules whose decisive input is
unknown say "not checked" with the reason, where they used to pass silently; triage then lets
the report's own error text speak (fwdoctor.triage.judge). Each rule: valid, invalid, unknown."""

from __future__ import annotations

import pytest

from fwdoctor.model import Fact, Facts
from fwdoctor.rules import driver, frameworks, libs, runtime, toolkit, torch, visibility

V100 = {"index": 0, "name": "Tesla V100-SXM2-16GB", "cc": "7.0"}
H100 = {"index": 0, "name": "NVIDIA H100 80GB HBM3", "cc": "9.0"}
MYSTERY = {"index": 1, "name": "NVIDIA Mystery Board"}  # no cc, a name no KB knows
MiB = 1024 * 1024


@pytest.fixture(scope="module")
def kb(test_kb):
    return test_kb


def facts(**values) -> Facts:
    return Facts(Fact(k.replace("__", "."), v, source="test") for k, v in values.items())


def verdict(rule, kb, f):
    found, skipped = rule.evaluate(f, kb)
    return [x.id for x in found], (skipped.reason if skipped else None)


# ----------------------------------------------------------------- gpu-arch-unsupported-by-torch
def test_torch_arch_a_gpu_of_unknown_capability_beside_a_covered_one_is_not_checked(kb):
    base = dict(torch__version="2.14.1+cu130", torch__cuda="13.0", torch__arch_list=["sm_75", "sm_80", "sm_90"])
    assert verdict(torch.gpu_arch_unsupported_by_torch, kb, facts(gpus__list=[H100], **base)) == ([], None)
    assert verdict(torch.gpu_arch_unsupported_by_torch, kb, facts(gpus__list=[V100], **base))[0] == ["gpu-arch-unsupported-by-torch"]
    found, why = verdict(torch.gpu_arch_unsupported_by_torch, kb, facts(gpus__list=[H100, MYSTERY], **base))
    assert found == [] and "NVIDIA Mystery Board" in why
    # a failing GPU settles it, whatever the unknown one is
    assert verdict(torch.gpu_arch_unsupported_by_torch, kb, facts(gpus__list=[V100, MYSTERY], **base))[0] == ["gpu-arch-unsupported-by-torch"]


# ------------------------------------------------------------- gpu-arch-unsupported-by-framework
def _tf(gpu_build=True, arch_list=("sm_60", "sm_70", "sm_80", "sm_89", "compute_90")):
    return {"framework": "tensorflow", "version": "2.21.0", "packages": {"tensorflow": "2.21.0"}, "gpu_build": gpu_build,
            "cuda": "12.5.1" if gpu_build else None, "arch_list": list(arch_list), "requires": {}}


def test_framework_arch_a_gpu_of_unknown_capability_beside_a_covered_one_is_not_checked(kb):
    rule = frameworks.gpu_arch_unsupported_by_framework
    assert verdict(rule, kb, facts(frameworks__installed=[_tf()], gpus__list=[H100])) == ([], None)
    assert verdict(rule, kb, facts(frameworks__installed=[_tf(arch_list=["sm_80"])], gpus__list=[V100]))[0] == ["gpu-arch-unsupported-by-framework"]
    found, why = verdict(rule, kb, facts(frameworks__installed=[_tf()], gpus__list=[H100, MYSTERY]))
    assert found == [] and "NVIDIA Mystery Board" in why


def test_framework_arch_a_build_not_known_to_be_gpu_is_judged_without_an_error(kb):
    rule = frameworks.gpu_arch_unsupported_by_framework
    unsure = _tf(gpu_build=None, arch_list=["sm_80", "compute_80"])  # runs on 8.x and (PTX) 9.0, not on 7.0
    assert verdict(rule, kb, facts(frameworks__installed=[unsure], gpus__list=[H100])) == ([], None)  # covered either way
    found, why = verdict(rule, kb, facts(frameworks__installed=[unsure], gpus__list=[V100]))
    assert found == [] and "whether it is a GPU build is not shown" in why  # not an error: it may be the CPU build
    assert verdict(rule, kb, facts(frameworks__installed=[_tf(gpu_build=False)], gpus__list=[V100])) == ([], None)


def test_framework_arch_one_framework_without_a_target_list_is_not_checked_even_beside_a_judged_one(kb):
    jax = {"framework": "jax", "version": "0.10.2", "packages": {"jax": "0.10.2"}, "gpu_build": True, "cuda": "13", "requires": {}}
    found, why = verdict(frameworks.gpu_arch_unsupported_by_framework, kb, facts(frameworks__installed=[_tf(), jax], gpus__list=[H100]))
    assert found == [] and "publishes no GPU target list" in why


# ------------------------------------------------------------------ driver-too-old-for-framework
def test_driver_floor_a_release_not_known_to_be_a_gpu_build_is_not_checked_unless_its_cuda_runs(kb):
    rule = frameworks.driver_too_old_for_framework
    unsure = {"framework": "tensorflow", "version": "2.21.0", "packages": {"tensorflow": "2.21.0"}, "gpu_build": None, "cuda": None}
    found, why = verdict(rule, kb, facts(frameworks__installed=[unsure], driver__version="450.51.06"))
    assert found == [] and "whether it is a GPU build" in why
    assert verdict(rule, kb, facts(frameworks__installed=[{**unsure, "cuda": "12.5.1"}], driver__version="580.95.05")) == ([], None)
    cpu = {**unsure, "gpu_build": False}
    assert verdict(rule, kb, facts(frameworks__installed=[cpu], driver__version="450.51.06")) == ([], None)


# ------------------------------------------------------------- gpu-arch-unsupported-by-toolkit
def test_toolkit_arch_a_gpu_of_unknown_capability_beside_a_covered_one_is_not_checked(kb):
    rule = toolkit.gpu_arch_unsupported_by_toolkit
    active = {"root": "/usr/local/cuda-12.4", "version": "12.4.131", "why": "CUDA_HOME"}
    tks = [{"root": "/usr/local/cuda-12.4", "version": "12.4.131", "nvcc": "/usr/local/cuda-12.4/bin/nvcc"}]
    assert verdict(rule, kb, facts(gpus__list=[H100], cuda__active=active, cuda__toolkits=tks)) == ([], None)
    found, why = verdict(rule, kb, facts(gpus__list=[H100, MYSTERY], cuda__active=active, cuda__toolkits=tks))
    assert found == [] and "NVIDIA Mystery Board" in why


# ------------------------------------------------------------------------ driver-gpu-unsupported
def test_driver_support_a_gpu_of_unknown_capability_is_not_checked():
    # the frozen test KB has no driver-support families, so this one reads the shipped KB
    from fwdoctor.kb import KB

    kb = KB()
    rule = driver.driver_gpu_unsupported
    assert verdict(rule, kb, facts(driver__version="580.95.05", gpus__list=[H100])) == ([], None)
    found, why = verdict(rule, kb, facts(driver__version="580.95.05", gpus__list=[H100, MYSTERY]))
    assert found == [] and "NVIDIA Mystery Board" in why


# -------------------------------------------------------------------------- cuda-visible-devices
def test_visible_devices_naming_a_uuid_gpus_list_cannot_match_is_not_checked(kb):
    rule = visibility.cuda_visible_devices_hides_gpus
    gpus = [{"index": 0, "name": "NVIDIA H100 80GB HBM3"}]  # a report's GPU: no UUID shown
    assert verdict(rule, kb, facts(gpus__visible_devices="0", gpus__list=gpus)) == ([], None)
    assert verdict(rule, kb, facts(gpus__visible_devices="3", gpus__list=gpus))[0] == ["cuda-visible-devices-hides-gpus"]
    found, why = verdict(rule, kb, facts(gpus__visible_devices="GPU-8a3c1e2f", gpus__list=gpus))
    assert found == [] and "UUID" in why
    found, why = verdict(rule, kb, facts(gpus__visible_devices="MIG-4f2a", gpus__list=gpus))
    assert found == [] and "MIG" in why


# ------------------------------------------------------------------- container-started-without-gpus
def test_container_without_gpu_nodes_and_no_host_facts_is_not_checked(kb):
    rule = visibility.container_started_without_gpus
    nodes = ["nvidiactl"]
    found, why = verdict(rule, kb, facts(system__container=True, system__nvidia_device_nodes=nodes))
    assert found == [] and "pci.nvidia_gpus" in why
    # the host's bus and driver known: settled either way
    assert verdict(rule, kb, facts(system__container=True, system__nvidia_device_nodes=nodes, pci__nvidia_gpus=[], driver__version=None)) == ([], None)
    assert verdict(rule, kb, facts(system__container=True, system__nvidia_device_nodes=nodes, driver__version="580.95.05"))[0] == ["container-started-without-gpus"]
    # every node there: fine whatever the host shows
    full = ["nvidia0", "nvidiactl", "nvidia-uvm"]
    assert verdict(rule, kb, facts(system__container=True, system__nvidia_device_nodes=full)) == ([], None)


def test_container_with_gpus_on_the_bus_and_an_unknown_driver_is_not_checked(kb):
    rule = visibility.container_started_without_gpus
    pci = [{"slot": "0000:3b:00.0", "device_id": "0x2330"}]
    found, why = verdict(rule, kb, facts(system__container=True, system__nvidia_device_nodes=[], pci__nvidia_gpus=pci))
    assert found == [] and "driver.version" in why
    assert verdict(rule, kb, facts(system__container=True, system__nvidia_device_nodes=[], pci__nvidia_gpus=pci, driver__version=None)) == ([], None)


# -------------------------------------------------------------------------------- shm-too-small
def test_a_small_shm_with_unknown_gpu_count_or_container_is_not_checked(kb):
    rule = runtime.shm_too_small
    small = 64 * MiB
    assert verdict(rule, kb, facts(system__shm_bytes=small, system__container=False, gpus__list=[H100])) == ([], None)
    assert verdict(rule, kb, facts(system__shm_bytes=small, system__container=True))[0] == ["shm-too-small"]
    found, why = verdict(rule, kb, facts(system__shm_bytes=small, system__container=False))
    assert found == [] and "how many GPUs" in why
    found, why = verdict(rule, kb, facts(system__shm_bytes=small, gpus__list=[H100]))
    assert found == [] and "container" in why
    assert verdict(rule, kb, facts(system__shm_bytes=64 * 1024 * MiB)) == ([], None)  # big enough anywhere


# ------------------------------------------------------------------------- nccl-cuda-mismatch
def _nccl(cuda: int, prefix: str = "/usr") -> dict:
    return {"kind": "dpkg", "prefix": prefix, "header_version": "2.21.5", "library_version": "2.21.5",
            "library": f"{prefix}/lib/libnccl.so.2.21.5", "header": f"{prefix}/include/nccl.h",
            "cuda_major": cuda, "package": f"libnccl2 2.21.5-1+cuda{cuda}.4"}


def test_a_system_nccl_whose_toolkit_is_unknown_is_not_checked(kb):
    rule = libs.nccl_cuda_mismatch
    active = {"root": "/usr/local/cuda-12.4", "version": "12.4.131"}
    base = dict(nccl__ld_first=None, torch__location=None, torch__cuda=None)  # no torch: the build side only
    assert verdict(rule, kb, facts(nccl__installs=[_nccl(12)], cuda__active=active, **base)) == ([], None)
    assert verdict(rule, kb, facts(nccl__installs=[_nccl(11)], cuda__active=active, **base))[0] == ["nccl-cuda-mismatch"]
    found, why = verdict(rule, kb, facts(nccl__installs=[_nccl(12)], **base))
    assert found == [] and "cuda.active" in why
    # torch's own pip NCCL judged fine does not vouch for the system copy builds would use
    site = "/venv/lib/python3.12/site-packages"
    wheel = {**_nccl(12, f"{site}/nvidia/nccl"), "kind": "pip", "package": "nvidia-nccl-cu12 2.21.5"}
    with_torch = dict(nccl__ld_first=None, torch__location=f"{site}/torch", torch__cuda="12.4")
    assert verdict(rule, kb, facts(nccl__installs=[wheel, _nccl(12)], cuda__active=active, **with_torch)) == ([], None)
    found, why = verdict(rule, kb, facts(nccl__installs=[wheel, _nccl(12)], **with_torch))
    assert found == [] and "libnccl2" in why and "cuda.active" in why
