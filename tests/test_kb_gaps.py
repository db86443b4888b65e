"""Pins the KB rows added to close known gaps: PCI device ids of common data-centre and
GeForce parts (doctor/kb/gpus.yaml), China-market parts and their compute capability, and the
newest gcc of CUDA 13.1-13.4's nvcc (doctor/kb/cuda.yaml). Each value names its source key;
the citation of every key is in the `sources:` map at the top of that YAML file."""

from __future__ import annotations


import pytest
import yaml

from fwdoctor.kb import KB, KB_DIR


@pytest.fixture(scope="module")
def gpus():
    return KB().gpus


@pytest.fixture(scope="module")
def cuda():
    return KB().cuda


# ----------------------------------------------------------------------------- PCI ids
# All from S-PCIIDS (pciutils/pciids pci.ids @006181e2, vendor 10de): the line
# "\t<id>  <chip> [<product>]" names the product; the CC is that product's row.
@pytest.mark.parametrize(
    "device_id, product, cc",
    [
        ("0x1eb8", "Tesla T4", "7.5"),  # TU104GL [Tesla T4]
        ("0x1db1", "Tesla V100", "7.0"),  # GV100GL [Tesla V100 SXM2 16GB]
        ("0x1db4", "Tesla V100", "7.0"),  # GV100GL [Tesla V100 PCIe 16GB]
        ("0x1db5", "Tesla V100", "7.0"),  # GV100GL [Tesla V100 SXM2 32GB]
        ("0x1db6", "Tesla V100", "7.0"),  # GV100GL [Tesla V100 PCIe 32GB]
        ("0x1df5", "Tesla V100", "7.0"),  # GV100GL [Tesla V100 SXM2 16GB] (second id)
        ("0x1df6", "Tesla V100S", "7.0"),  # GV100GL [Tesla V100S PCIe 32GB]
        ("0x1d81", "TITAN V", "7.0"),  # GV100 [TITAN V]
        ("0x15f7", "Tesla P100", "6.0"),  # GP100GL [Tesla P100 PCIe 12GB]
        ("0x15f8", "Tesla P100", "6.0"),  # GP100GL [Tesla P100 PCIe 16GB]
        ("0x15f9", "Tesla P100", "6.0"),  # GP100GL [Tesla P100 SXM2 16GB]
        ("0x1b06", "GeForce GTX 1080 Ti", "6.1"),  # GP102 [GeForce GTX 1080 Ti]
        ("0x1b38", "Tesla P40", "6.1"),  # GP102GL [Tesla P40]
        ("0x1bb3", "Tesla P4", "6.1"),  # GP104GL [Tesla P4]
        ("0x2901", "B200", "10.0"),  # GB100 [B200]
        ("0x2941", "GB200", "10.0"),  # GB100 [HGX GB200]
        ("0x3182", "B300", "10.3"),  # GB110 [B300 SXM6 AC]; nvidia-smi name in S-FX-B300
        ("0x2e12", "GB10", "12.1"),  # GB20B [GB10]
        ("0x2b85", "GeForce RTX 5090", "12.0"),  # GB202 [GeForce RTX 5090]
        ("0x2c02", "GeForce RTX 5080", "12.0"),  # GB203 [GeForce RTX 5080]
        ("0x2c05", "GeForce RTX 5070 Ti", "12.0"),  # GB203 [GeForce RTX 5070 Ti]
        ("0x2f04", "GeForce RTX 5070", "12.0"),  # GB205 [GeForce RTX 5070]
        ("0x2d04", "GeForce RTX 5060 Ti", "12.0"),  # GB206 [GeForce RTX 5060 Ti]
        ("0x2bb5", "RTX PRO 6000 Blackwell Server Edition", "12.0"),  # GB202GL [... Server Edition]; CC in S-FX-MODAL
    ],
)
def test_a_pci_device_id_read_in_pci_ids_maps_to_its_product_and_cc(gpus, device_id, product, cc):
    assert gpus.by_pci[device_id].name == product
    assert gpus.cc_for_pci_id(device_id) == cc


def test_a_t4_known_only_by_its_pci_slot_gets_cc_7_5(gpus):
    # How the fallback is used: NVML gave no name, sysfs gave the device id.
    gpu = {"name": None, "cc": None, "bus_id": "00000000:3B:00.0"}
    pci = [{"slot": "0000:3b:00.0", "device_id": "0x1eb8", "class": "0x030200"}]
    assert gpus.cc_for_gpu(gpu, pci) == "7.5"


# ----------------------------------------------------------------------------- China-market parts
@pytest.mark.parametrize(
    "reported_name, cc",
    [
        ("NVIDIA A800 80GB PCIe", "8.0"),  # S-FX-A800: nvidia-smi "535.104.12, NVIDIA A800 80GB PCIe, 8.0"
        ("NVIDIA A800-SXM4-80GB", "8.0"),  # same product row; name as nvidia-smi prints it (dexbotic#41)
        ("NVIDIA H800", "9.0"),  # S-FX-H800: "NVIDIA H800 with CUDA capability sm_90 ..."
        ("NVIDIA H20", "9.0"),  # S-FX-H20: _CudaDeviceProperties(name='NVIDIA H20', major=9, minor=0, ...)
        ("NVIDIA L20", "8.9"),  # S-FX-L20: "NVIDIA L20 with CUDA capability sm_89 ..."
        ("NVIDIA GeForce RTX 5090 D", "12.0"),  # S-FX-5090D: "GeForce RTX 5090 D with CUDA capability sm_120"
    ],
)
def test_a_china_market_part_gets_the_cc_its_own_output_reports(gpus, reported_name, cc):
    assert gpus.cc_for_name(reported_name) == cc


@pytest.mark.parametrize(
    "device_id, product, cc",
    [
        ("0x20f3", "A800", "8.0"),  # S-PCIIDS: GA100 [A800-SXM4-80GB]
        ("0x20f5", "A800", "8.0"),  # S-PCIIDS: GA100 [A800 80GB PCIe]
        ("0x2324", "H800", "9.0"),  # S-PCIIDS: GH100 [H800]
        ("0x2322", "H800", "9.0"),  # S-PCIIDS: GH100 [H800 PCIe]
        ("0x2329", "H20", "9.0"),  # S-PCIIDS: GH100 [H20]
        ("0x26ba", "L20", "8.9"),  # S-PCIIDS: AD102GL [L20]
        ("0x2b87", "GeForce RTX 5090", "12.0"),  # S-PCIIDS: GB202 [GeForce RTX 5090 D]
    ],
)
def test_a_china_market_pci_id_maps_to_its_product(gpus, device_id, product, cc):
    assert (gpus.by_pci[device_id].name, gpus.cc_for_pci_id(device_id)) == (product, cc)


@pytest.mark.parametrize(
    "name, expected_row",
    [("NVIDIA H20", "H20"), ("NVIDIA H200", "H200"), ("NVIDIA L20", "L20"), ("NVIDIA L40S", "L40S"), ("NVIDIA A800-SXM4-80GB", "A800")],
)
def test_new_short_names_do_not_capture_their_neighbours(gpus, name, expected_row):
    assert gpus.model_for_name(name).name == expected_row


def test_pci_ids_left_out_for_lack_of_a_matching_name_or_cc_stay_unknown(gpus):
    # 0x233a "H800L 94GB", 0x2328 "H20B", 0x2bb2 "RTX PRO 6000D": no source quotes their CC.
    assert [gpus.cc_for_pci_id(i) for i in ("0x233a", "0x2328", "0x2bb2")] == [None, None, None]


def test_every_china_market_row_cites_an_output_that_quotes_its_cc():
    raw = yaml.safe_load((KB_DIR / "gpus.yaml").read_text(encoding="utf-8"))
    rows = {row["name"]: row for row in raw["gpus"]}
    cites = {"A800": "S-FX-A800", "H800": "S-FX-H800", "H20": "S-FX-H20", "L20": "S-FX-L20"}
    for name, key in cites.items():
        assert key in rows[name]["source"], name
        assert key in raw["sources"], key


# ----------------------------------------------------------------------------- host gcc
@pytest.mark.parametrize("cuda_version", ["13.1", "13.2", "13.3"])
def test_nvcc_13_1_to_13_3_accept_gcc_15_per_their_own_headers(cuda, cuda_version):
    # S-HOSTCFG131/132/133: crt/host_config.h of nvidia-cuda-crt 13.1.80, 13.2.51, 13.3.33
    # ("#if __GNUC__ > 15"); these rows were inferred or secondary before.
    assert cuda.host_gcc_max(cuda_version) == "15"
    row = next(r for r in cuda.host_gcc if r.cuda == cuda_version)
    assert row.confidence == "C" and f"S-HOSTCFG{cuda_version.replace('.', '')}" in row.source


def test_cuda_13_4_accepts_gcc_16(cuda):
    # S-HOSTCFG134: host_config.h of nvidia-cuda-crt 13.4.59 (13.4 GA) and 13.4.92 (Update 1)
    # both say "#if __GNUC__ > 16".
    assert cuda.host_gcc_max("13.4.1") == "16"
    assert cuda.host_gcc_max("13.3") == "15" and cuda.host_gcc_max("13.5") == "16"


def test_cuda_13_4_and_13_5_still_have_no_toolkit_driver_row(cuda):
    # No NVIDIA Table 3 row was found; secondary sources disagree (R616 vs R615), so the
    # answer stays "no data" and 13.x programs fall back to the minor-compat floor.
    assert (cuda.toolkit_driver("13.4.1"), cuda.toolkit_driver("13.5")) == (None, None)
    assert cuda.driver_floor("13.4") == "580.65.06"
