"""The toolkit probes against the live machine: its real nvcc, crt/host_config.h and gcc
(on the build host: CUDA 13.0 at /usr/local/cuda, gcc 12), and the knowledge base checked
against what the real nvcc says it can compile for. Skipped where there is no toolkit."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from fwdoctor.engine import collect
from fwdoctor.host import Host
from fwdoctor.kb import KB
from fwdoctor.probes import compilers, cuda
from fwdoctor.probes.cuda import parse_host_config, parse_nvcc_version

LIVE_NVCC = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if os.access("/usr/local/cuda/bin/nvcc", os.X_OK) else None)
needs_nvcc = pytest.mark.skipif(LIVE_NVCC is None, reason="no nvcc on this machine")


def nvcc_output(*args: str) -> str:
    return subprocess.run([LIVE_NVCC, *args], capture_output=True, text=True, timeout=60, check=True).stdout


@pytest.fixture(scope="module")
def live_facts():
    host = Host.live_host()
    return collect(host, (*cuda.PROBES, *compilers.PROBES))


@needs_nvcc
def test_the_live_nvcc_is_found_with_the_release_it_reports(live_facts):
    release, full = parse_nvcc_version(nvcc_output("--version"))
    assert not live_facts.failures, live_facts.failures
    entries = [t for t in live_facts["cuda.toolkits"] if t["nvcc_release"] == release]
    assert entries, live_facts["cuda.toolkits"]
    assert entries[0]["version"].startswith(release)


@needs_nvcc
def test_the_live_gcc_limit_is_the_real_headers_and_the_kb_agrees(live_facts):
    release, _ = parse_nvcc_version(nvcc_output("--version"))
    entry = next(t for t in live_facts["cuda.toolkits"] if t["nvcc_release"] == release)
    header = f"{entry['root']}/targets/x86_64-linux/include/crt/host_config.h"
    with open(header, encoding="utf-8") as handle:
        assert entry["host_gcc_max"] == parse_host_config(handle.read())
    assert KB().cuda.host_gcc_max(release) == entry["host_gcc_max"]


@needs_nvcc
def test_the_kb_architecture_table_matches_what_the_real_nvcc_compiles_for(live_facts):
    release, _ = parse_nvcc_version(nvcc_output("--version"))
    listed = set(re.findall(r"compute_(\d+)", nvcc_output("--list-gpu-arch")))
    kb = KB().cuda
    disagree = []
    for arch in kb.architectures:
        want = kb.nvcc_supports(release, arch.cc)
        have = arch.cc.replace(".", "") in listed
        if want is not None and want != have:
            disagree.append((arch.cc, want, have))
    assert disagree == []


@needs_nvcc
def test_the_active_toolkit_is_the_one_path_or_the_link_leads_to(live_facts):
    active = live_facts["cuda.active"]
    assert active is not None and active["root"] in [t["root"] for t in live_facts["cuda.toolkits"]]


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc on PATH")
def test_the_live_default_gcc_reports_its_full_version(live_facts):
    real = subprocess.run(["gcc", "-dumpfullversion"], capture_output=True, text=True, timeout=30).stdout.strip()
    assert live_facts["compilers.gcc_default"]["version"] == real


@needs_nvcc
def test_a_live_check_evaluates_every_toolkit_rule_that_has_its_facts(check_json):
    code, report = check_json()
    assert not [f for f in report["findings"] if f["id"] == "probe-failed" and f["evidence"]["probe"] in ("cuda-toolkits", "compilers")]
    skipped = {n["rule"]: n["reason"] for n in report["not_checked"]}
    for rule_id in ("multiple-toolkits", "cuda-path-inconsistent", "host-compiler-unsupported"):
        assert rule_id not in skipped, skipped.get(rule_id)


@pytest.mark.requires_gpu
def test_on_a_gpu_host_the_driver_and_arch_rules_run(check_json):
    if shutil.which("nvidia-smi") is None or subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=60).returncode != 0:
        pytest.skip("no working NVIDIA GPU and driver on this machine")
    if LIVE_NVCC is None:
        pytest.skip("no nvcc on this machine")
    _, report = check_json()
    skipped = {n["rule"]: n["reason"] for n in report["not_checked"]}
    assert "driver-too-old-for-toolkit" not in skipped, skipped.get("driver-too-old-for-toolkit")
    assert "gpu-arch-unsupported-by-toolkit" not in skipped, skipped.get("gpu-arch-unsupported-by-toolkit")
