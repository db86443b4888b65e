"""Audit of the shipped GPU rows (doctor/kb/gpus.yaml): names exactly as nvidia-smi, NVML
or torch print them resolve to the right compute capability, PCI ids agree with the chip
pci.ids names, and every architecture family has its driver-branch row.

Reads doctor/kb (the shipped KB), not the frozen tests/kb: the question is whether the rows
we ship know these GPUs.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from fwdoctor.kb import KB, KB_DIR, KBError
from fwdoctor.kb.gpus import driver_branch

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def gpus():
    return KB.load(KB_DIR, areas=("gpus",)).gpus


# Names as the tool printed them, each with where it was printed, and the CC NVIDIA lists
# for the product (https://developer.nvidia.com/cuda-gpus and cuda-legacy-gpus).
PRINTED = [
    # open-gpu-kernel-modules README "Compatible GPUs" (595.45.04) prints NVML's product names.
    ("NVIDIA GeForce RTX 4060 Laptop GPU", "8.9"),
    ("NVIDIA GeForce RTX 4060", "8.9"),
    ("NVIDIA GeForce RTX 4050 Laptop GPU", "8.9"),
    ("NVIDIA GeForce RTX 3050 OEM", "8.6"),
    ("NVIDIA GeForce RTX 3050 Ti Laptop GPU", "8.6"),
    ("NVIDIA GeForce RTX 3050Ti Laptop GPU", "8.6"),
    # pci.ids: 2822/28a3/28e3 "AD106M/AD107M [GeForce RTX 3050 A Laptop GPU]": an Ada chip
    ("NVIDIA GeForce RTX 3050 A Laptop GPU", "8.9"),
    ("NVIDIA GeForce RTX 2050", "8.6"),  # GA107M in pci.ids: Ampere despite the name
    ("NVIDIA GeForce RTX 5050", "12.0"),
    ("NVIDIA GeForce RTX 5070 Ti Laptop GPU", "12.0"),
    ("NVIDIA GeForce GTX 1660 SUPER", "7.5"),
    ("NVIDIA GeForce GTX 1650 Ti with Max-Q Design", "7.5"),
    ("NVIDIA GeForce GTX 1630", "7.5"),
    ("NVIDIA RTX 2000 Ada Generation", "8.9"),
    ("NVIDIA RTX 2000E Ada Generation", "8.9"),
    ("NVIDIA RTX 4500 Ada Generation", "8.9"),
    ("NVIDIA RTX 4000 SFF Ada Generation", "8.9"),
    ("NVIDIA RTX 5880 Ada Generation", "8.9"),
    ("NVIDIA RTX A2000 12GB", "8.6"),
    ("NVIDIA RTX A3000 Laptop GPU", "8.6"),
    ("NVIDIA RTX A4500", "8.6"),
    ("NVIDIA RTX A5500", "8.6"),
    ("NVIDIA RTX PRO 2000 Blackwell", "12.0"),
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "12.0"),
    ("NVIDIA RTX PRO 4000 Blackwell SFF Edition", "12.0"),
    ("Quadro RTX 3000 with Max-Q Design", "7.5"),
    ("Quadro T2000", "7.5"),
    ("NVIDIA T1200 Laptop GPU", "7.5"),
    ("NVIDIA H200 NVL", "9.0"),
    ("NVIDIA GH200 480GB", "9.0"),
    ("NVIDIA L4", "8.9"),
    ("NVIDIA A2", "8.6"),
    ("NVIDIA A16", "8.6"),
    ("Tesla T4", "7.5"),
    # Pascal / Maxwell workstation and GeForce parts (cuda-legacy-gpus)
    ("Quadro P4000", "6.1"),
    ("Quadro GP100", "6.0"),
    ("Quadro M6000 24GB", "5.2"),
    ("NVIDIA GeForce GTX 1050 Ti", "6.1"),
    ("GeForce GTX 970", "5.2"),
    # Pre-Maxwell parts field reports show (issue 26; cuda-legacy-gpus)
    ("GeForce 210", "1.2"),
    ("Quadro FX 2800M", "1.1"),
    ("NVIDIA GeForce GT 740M", "3.0"),
    ("GeForce GTX 560 Ti", "2.1"),
    ("GeForce GTX 780 Ti", "3.5"),
    ("Quadro 600", "2.1"),
    # Jetson: `nvidia-smi -L` on JetPack 6 prints "Orin (nvgpu)" (anduril/jetpack-nixos#371);
    # torch prints "Orin" (sgl-project/sglang#3331) and "NVIDIA Thor" (vllm-project/vllm#34470).
    ("Orin (nvgpu)", "8.7"),
    ("Orin", "8.7"),
    ("Xavier", "7.2"),
    ("NVIDIA Thor", "11.0"),
]


@pytest.mark.parametrize(("name", "cc"), PRINTED)
def test_printed_names_resolve_to_their_compute_capability(gpus, name, cc):
    assert gpus.cc_for_name(name) == cc


def test_a_gpu_name_shipped_on_chips_of_different_compute_capability_has_no_row(gpus):
    # GT 730: GF108 (2.1) and GK208 (3.5) under one name; Quadro 600 is not a Quadro 6000.
    assert gpus.cc_for_name("NVIDIA GeForce GT 730") is None
    assert gpus.cc_for_name("Quadro 6000") is None


def test_similar_names_stay_apart(gpus):
    # The longest listed prefix wins: the Ada and Turing workstation 6000s differ, and a
    # 3050 A laptop part is not an Ampere 3050.
    assert gpus.cc_for_name("Quadro RTX 6000") == "7.5"
    assert gpus.cc_for_name("NVIDIA RTX 6000 Ada Generation") == "8.9"
    assert gpus.cc_for_name("NVIDIA GeForce RTX 3050 Laptop GPU") == "8.6"
    assert gpus.cc_for_name("NVIDIA GeForce RTX 3050 A Laptop GPU") == "8.9"
    assert gpus.cc_for_name("NVIDIA GeForce RTX 4090 D") == "8.9"


@pytest.mark.parametrize(("device_id", "cc"), [
    ("0x2808", "8.9"),  # GeForce RTX 4060 (S-OGKM595)
    ("0x28b0", "8.9"),  # RTX 2000 / 2000E Ada Generation
    ("0x2d83", "12.0"),  # GeForce RTX 5050
    ("0x25a7", "8.6"),  # GeForce RTX 2050 (GA107M)
    ("0x2822", "8.9"),  # GeForce RTX 3050 A Laptop GPU (AD106M)
    ("0x1bb1", "6.1"),  # Quadro P4000 (pci.ids GP104GL)
    ("0x102d", "3.7"),  # Tesla K80
])
def test_pci_ids_resolve(gpus, device_id, cc):
    assert gpus.cc_for_pci_id(device_id) == cc


# The chip prefix pci.ids gives each device (the architecture) and the CC NVIDIA lists for
# that architecture: every listed id must agree with its row's CC.
CHIP_CC = [(r"^TU1", "7.5"), (r"^GA100", "8.0"), (r"^GA10[2-7]", "8.6"), (r"^AD10", "8.9"), (r"^GH100", "9.0"),
           (r"^GB10[02]", "10.0"), (r"^GB110", "10.3"), (r"^GB20[2-7]", "12.0"), (r"^GP100", "6.0"),
           (r"^GP10[2-8]", "6.1"), (r"^GM20", "5.2"), (r"^GM10", "5.0"), (r"^GV100", "7.0"), (r"^GK210", "3.7")]
# The chip of each id the new rows list, copied from pciutils/pciids@c1c12547:pci.ids.
PCI_CHIPS = {
    "0x2808": "AD106 [GeForce RTX 4060]", "0x28a1": "AD107M [GeForce RTX 4050 Max-Q / Mobile]",
    "0x28b0": "AD107GL [RTX 2000 / 2000E Ada Generation]", "0x25a7": "GA107M [GeForce RTX 2050]",
    "0x2822": "AD106M [GeForce RTX 3050 A Laptop GPU]", "0x2d83": "GB207 [GeForce RTX 5050]",
    "0x1bb1": "GP104GL [Quadro P4000]", "0x17f0": "GM200GL [Quadro M6000]", "0x1f83": "TU117 [GeForce GTX 1630]",
    # issue 25: Hopper ids pci.ids names H100 / H200 NVL / GH200 144G HBM3e
    "0x2336": "GH100 [H100]", "0x2337": "GH100 [H100 SXM5 64GB]", "0x2338": "GH100 [H100 SXM5 96GB]",
    "0x233d": "GH100 [H100 96GB]", "0x233b": "GH100 [H200 NVL]", "0x2348": "GH100 [GH200 144G HBM3e]",
}


@pytest.mark.parametrize(("device_id", "model"), [
    ("0x2336", "H100"), ("0x2337", "H100"), ("0x2338", "H100"), ("0x233d", "H100"),
    ("0x233b", "H200"), ("0x2348", "GH200"),
])
def test_hopper_ids_pci_ids_names_resolve_to_their_product(gpus, device_id, model):
    found = gpus.model_for_pci_id(device_id)
    assert found is not None and found.name == model


@pytest.mark.parametrize("device_id", sorted(PCI_CHIPS))
def test_listed_ids_agree_with_their_chip(gpus, device_id):
    chip = PCI_CHIPS[device_id]
    expected = next(cc for rx, cc in CHIP_CC if re.match(rx, chip))
    assert gpus.cc_for_pci_id(device_id) == expected, chip


# ----------------------------------------------------------------------------- driver branches
# (family of a CC, first branch, last branch, open modules), as NVIDIA states them: Kepler up
# to the R470 legacy branch (forum "Current graphics driver releases"); Maxwell, Pascal and
# Volta up to R580 ("Unix Graphics Feature Deprecation Schedule"); open modules from Turing,
# required from Blackwell (driver README "Open Linux Kernel Modules").
FAMILIES = [
    ("1.2", None, 340, "unsupported"),
    ("2.1", None, 390, "unsupported"),
    ("3.7", None, 470, "unsupported"),
    ("5.2", None, 580, "unsupported"),
    ("6.1", None, 580, "unsupported"),
    ("7.0", None, 580, "unsupported"),
    ("7.5", None, None, "supported"),
    ("8.9", 520, None, "supported"),
    ("9.0", 520, None, "supported"),
    ("10.0", 570, None, "required"),
    ("12.0", 570, None, "required"),
]


@pytest.mark.parametrize(("cc", "first", "last", "open_modules"), FAMILIES)
def test_each_family_has_its_driver_branches(gpus, cc, first, last, open_modules):
    support = gpus.support_for(cc)
    assert support is not None
    assert (support.family.first_branch, support.family.last_branch, support.open_modules) == (first, last, open_modules)


def test_every_listed_gpu_has_a_family(gpus):
    missing = sorted({m.cc for m in gpus.models if gpus.family_for_cc(m.cc) is None})
    assert missing == []


def test_grace_hopper_needs_the_open_modules_unlike_h100(gpus):
    assert gpus.support_for("9.0", "NVIDIA GH200 480GB").open_modules == "required"
    assert gpus.support_for("9.0", "NVIDIA H100 80GB HBM3").open_modules == "supported"


def test_jetson_is_outside_the_desktop_branches(gpus):
    assert gpus.support_for("8.7", "Orin (nvgpu)").family.integrated
    assert gpus.driver_problem("8.7", "Orin (nvgpu)", "540.4.0", "proprietary") is None


def test_each_release_belongs_to_its_branch(gpus):
    for fam in gpus.families:
        for branch, release in ((fam.first_branch, fam.first_release), (fam.last_branch, fam.last_release)):
            if release is not None:
                assert driver_branch(release) == branch, fam.family


# ----------------------------------------------------------------------------- loader checks
def _kb_with_families(tmp_path, families_yaml: str) -> KB:
    for f in (REPO / "tests" / "kb").glob("*.yaml"):
        (tmp_path / f.name).write_text(f.read_text())
    gpus = tmp_path / "gpus.yaml"
    gpus.write_text(gpus.read_text() + "\nfamilies:\n" + families_yaml)
    return KB(tmp_path)


@pytest.mark.parametrize(("rows", "message"), [
    ('  - {family: A, cc: ["3.7"], open_modules: maybe, source: S-CUDAGPUS}\n', "open_modules"),
    ('  - {family: A, cc: ["3.7"], last_branch: 470, last_release: "535.1", open_modules: unsupported, source: S-CUDAGPUS}\n', "not a release of branch 470"),
    ('  - {family: A, cc: ["3.7"], first_branch: 580, last_branch: 470, open_modules: unsupported, source: S-CUDAGPUS}\n', "after last_branch"),
    ('  - {family: A, cc: ["3.7"], open_modules: unsupported, source: S-CUDAGPUS}\n  - {family: B, cc: ["3.7"], open_modules: unsupported, source: S-CUDAGPUS}\n', "already in family"),
    ('  - {family: A, cc: ["3.7"], open_modules: unsupported}\n', "source"),
])
def test_malformed_family_rows_are_refused_with_their_row(tmp_path, rows, message):
    kb = _kb_with_families(tmp_path, rows)
    with pytest.raises(KBError, match=message):
        kb.gpus


def test_the_shipped_family_rows_cite_sources_that_exist():
    data = yaml.safe_load((KB_DIR / "gpus.yaml").read_text())
    keys = set(data["sources"]) | set(yaml.safe_load((KB_DIR / "sources.yaml").read_text())["sources"])
    for row in data["families"]:
        cited = [row["source"]] if isinstance(row["source"], str) else row["source"]
        assert set(cited) <= keys, row["family"]
