"""Audits of the shipped KB that pin the classes of miss issue 25 found (item 5), and the
newest releases it added (item 2): a GPU row with a PCI id has a driver floor
(tests/test_kb_driver_floors.py), every CUDA minor has a Linux driver floor, every torch
CUDA variant says whether its arch list was read from a wheel or only from a build script,
and two sources that speak of the same thing agree.
"""

from __future__ import annotations

import json

import pytest
from packaging.version import Version

from fwdoctor.arch import parse_cc
from fwdoctor.kb import KB, KB_DIR
from fwdoctor.kb.cuda import cuda_parts
from fwdoctor.kb.gpus import driver_branch


@pytest.fixture(scope="module")
def kb():
    return KB.load(KB_DIR)


# ----------------------------------------------------------------------------- item 2
@pytest.mark.parametrize("cuda, accepted", [("13.3", False), ("13.4", True), ("13.5", True)])
def test_nvcc_accepts_compute_107_from_13_4_as_measured(kb, cuda, accepted):
    assert kb.cuda.nvcc_supports(cuda, "10.7") is accepted


def test_a_cuda_newer_than_the_horizon_is_no_data_for_10_7(kb):
    assert kb.cuda.nvcc_supports("13.6", "10.7") is None


@pytest.mark.parametrize("cuda", ["13.4", "13.5"])
def test_cuda_13_4_and_13_5_run_on_the_cuda_13_floor(kb, cuda):
    assert kb.cuda.driver_floor(cuda) == "580.65.06"


def test_select_knows_compute_capability_10_7(cli):
    result = cli("select", "torch", "--kb", str(KB_DIR), "--gpu", "10.7", "--driver", "610.43.02", "--python", "3.12", "--json")
    data = json.loads(result.output)
    assert result.exit_code == 0 and data["choice"] is not None, result.output[:1500]


def test_tensorflow_2_20_arch_list_is_its_build_info(kb):
    row = kb.frameworks.release("tensorflow", "2.20.0")
    assert row.build("12").arch_list == ("sm_60", "sm_70", "sm_80", "sm_89", "compute_90")


# ----------------------------------------------------------------------------- item 5
def test_every_cuda_minor_the_kb_names_has_a_linux_driver_floor(kb):
    minors = {f"{cuda_parts(r.cuda)[0]}.{cuda_parts(r.cuda)[1]}" for r in kb.cuda.toolkit_drivers}
    minors |= {r.cuda for r in kb.cuda.host_gcc}
    missing = sorted((m for m in minors if Version(m) >= Version("11.0") and kb.cuda.driver_floor(m) is None), key=Version)
    assert not missing, f"CUDA minors without a minor-version-compatibility floor: {missing}"
    assert Version(kb.cuda.horizon) <= max(Version(m) for m in minors)


def test_every_torch_cuda_variant_says_where_its_arch_list_was_read(kb):
    unsaid = sorted({f"{v.torch}+{v.variant}" for v in kb.torch.variants() if v.arch_list is not None and v.arch_from is None})
    assert not unsaid, f"arch lists with no arch_from (wheel or script): {unsaid}"


# +PTX claims no wheel confirmed. A new one must be added here on purpose (or measured):
# every CUDA 13 wheel measured so far carries no PTX (torch.yaml's S-PYPIWHEELS).
SCRIPT_ONLY_PTX = {"2.8.0+cu129", "2.9.0+cu130", "2.9.1+cu130", "2.10.0+cu130"}
# torch 1.0-1.5: pytorch/builder's script of that era said "5.0+PTX" (1.0-1.2) and "3.7+PTX" (1.4-1.5)
# and handed the list to torch's own CMake, which emitted the PTX; no wheel of that era was read
# (torch.yaml's note above 1.0). Added on purpose: dropping it would turn an unread PTX into a
# "no kernels" error for every GPU newer than the SASS list.
SCRIPT_ONLY_PTX |= {"1.0.0+cu90", "1.0.1+cu90", "1.1.0+cu90", "1.1.0+cu100", "1.2.0+cu92", "1.2.0+cu100",
                    "1.4.0+cu92", "1.4.0+cu101", *(f"1.5.{n}+{c}" for n in (0, 1) for c in ("cu92", "cu101", "cu102"))}


def test_ptx_claims_from_a_script_alone_are_the_known_ones(kb):
    script_ptx = {f"{v.torch}+{v.variant}" for v in kb.torch.variants()
                  if v.arch_list and any(a.endswith("+PTX") for a in v.arch_list) and v.arch_from == "script"}
    assert script_ptx == SCRIPT_ONLY_PTX


def test_a_wheel_read_arch_list_cites_the_wheel(kb):
    wheel_keys = {"S-PYPIWHEELS", "S-WHEEL2141", "S-CORRIDORKEY141"}
    bad = sorted({f"{v.torch}+{v.variant}" for v in kb.torch.variants() if v.arch_from == "wheel" and not wheel_keys & set(v.source)})
    assert not bad


def test_every_gpu_cc_is_in_the_architecture_table(kb):
    known = {parse_cc(a.cc) for a in kb.cuda.architectures}
    missing = sorted({m.cc for m in kb.gpus.models if parse_cc(m.cc) not in known})
    assert not missing, f"GPU rows whose CC cuda.yaml's architectures do not list: {missing}"


def test_product_floors_never_predate_their_family_floor(kb):
    """The per-product tables and the family rows are two sources for one question: a
    product first listed before its family's first branch would mean one of them is wrong."""
    clash = []
    for name, floor in kb.gpus.floors.items():
        model = next(m for m in kb.gpus.models if m.name == name)
        family = kb.gpus.family_for_cc(model.cc)
        if family is not None and family.first_branch is not None and driver_branch(floor.first[0]) < family.first_branch:
            clash.append(f"{name}: first listed {floor.first[0]}, family {family.family} from R{family.first_branch}")
    assert not clash, clash


def test_product_floors_are_within_the_family_s_last_branch(kb):
    clash = []
    for name, floor in kb.gpus.floors.items():
        model = next(m for m in kb.gpus.models if m.name == name)
        family = kb.gpus.family_for_cc(model.cc)
        if family is not None and family.last_branch is not None and driver_branch(floor.first[0]) > family.last_branch:
            clash.append(name)
    assert not clash, clash
