"""Per-product driver floors (issue 25): a host whose driver predates its GPU is flagged by
`check --facts` (driver-gpu-unsupported) and refused by `select torch`, each naming the first
driver release whose NVIDIA "Compatible GPUs" table lists the product.

These read the shipped KB (doctor/kb/gpus.yaml `driver_floors`, written by
tools/ogkm_floors.py from NVIDIA/open-gpu-kernel-modules' README at every tag): the rows are
the facts under test. The four hosts are the issue's "done when" cases; the facts documents
are built here, shaped as `fwdoctor facts` writes them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fwdoctor import selection as sel
from fwdoctor.kb import KB, KB_DIR
from fwdoctor.kb.gpus import DriverFloor, driver_branch

# (GPU name as nvidia-smi prints it, its PCI device id, CC, host driver, the first release
# that lists the product). Sources: the README's table at each tag, cited by the rows.
DONE_WHEN = [
    ("NVIDIA B300 SXM6 AC", "0x3182", "10.3", "575.64.05", "580.82.07"),
    ("NVIDIA H200", "0x2335", "9.0", "535.230.02", "550.40.65"),
    ("NVIDIA GeForce RTX 5050", "0x2d83", "12.0", "570.195.03", "575.64.03"),
    ("NVIDIA GB10", "0x2e12", "12.1", "575.64.05", "580.94.13"),
]


@pytest.fixture(scope="module")
def gpus():
    return KB.load(KB_DIR).gpus


def facts_document(name: str, device_id: str, cc: str, driver: str) -> dict:
    """A facts document of one GPU host: what `fwdoctor facts` writes (only the keys the
    driver rules read, plus the Python the selection needs)."""
    values = {
        "driver.version": driver,
        "driver.module_flavor": "open",
        "gpus.list": [{"index": 0, "name": name, "cc": cc, "bus_id": "00000000:01:00.0", "source": "nvml"}],
        "pci.nvidia_gpus": [{"slot": "0000:01:00.0", "device_id": device_id, "class": "0x030200"}],
        "python.version": "3.12.3",
    }
    return {"facts": {key: {"value": value, "source": "test"} for key, value in values.items()}, "probe_failures": []}


@pytest.mark.parametrize("name, device_id, cc, driver, first", DONE_WHEN)
def test_check_facts_flags_a_driver_older_than_the_gpus_first_listing(cli, tmp_path, name, device_id, cc, driver, first):
    path = tmp_path / "host.json"
    path.write_text(json.dumps(facts_document(name, device_id, cc, driver)))
    result = cli("check", "--json", "--facts", str(path), "--kb", str(KB_DIR), "--only", "driver-gpu-unsupported")
    report = json.loads(result.output)
    hits = [f for f in report["findings"] if f["id"] == "driver-gpu-unsupported"]
    assert result.exit_code == 1 and len(hits) == 1, result.output[:2000]
    assert f"is first listed by driver {first} (R{first.split('.')[0]})" in hits[0]["message"] and f"driver {driver}" in hits[0]["message"]
    print(hits[0]["message"])


@pytest.mark.parametrize("name, device_id, cc, driver, first", DONE_WHEN)
def test_select_refuses_a_driver_older_than_the_gpus_first_listing(cli, name, device_id, cc, driver, first):
    result = cli("select", "torch", "--kb", str(KB_DIR), "--driver", driver, "--gpu", name.removeprefix("NVIDIA "), "--python", "3.12", "--json")
    data = json.loads(result.output)
    assert result.exit_code == 1 and data["choice"] is None, result.output[:2000]
    assert f"is first listed by driver {first}" in data["driver_problems"][0]
    print(data["driver_problems"][0])


@pytest.mark.parametrize("name, device_id, cc, driver, first", DONE_WHEN)
def test_the_first_listing_itself_is_accepted(gpus, name, device_id, cc, driver, first):
    assert gpus.driver_problem(cc, name, first, "open") is None
    model = gpus.model_for_pci_id(device_id)
    assert model is not None and gpus.driver_problem(cc, model.name, driver) is not None


def test_a_gpu_known_only_by_its_pci_id_is_judged_by_its_product_floor(cli, tmp_path):
    doc = facts_document("NVIDIA device 0x3182", "0x3182", "10.3", "575.64.05")
    doc["facts"]["gpus.list"]["value"][0].pop("cc")
    path = tmp_path / "host.json"
    path.write_text(json.dumps(doc))
    report = json.loads(cli("check", "--json", "--facts", str(path), "--kb", str(KB_DIR), "--only", "driver-gpu-unsupported").output)
    assert any("B300" in f["message"] and "580.82.07" in f["message"] for f in report["findings"])


@pytest.mark.parametrize("gpu, first", [
    ("B300", "580.82.07"), ("GB300", "580.82.07"), ("H200", "550.40.65"), ("GH200", "535.43.19"),
    ("GB10", "580.94.13"), ("GeForce RTX 5050", "575.64.03"), ("RTX PRO 6000 Blackwell Server Edition", "575.57.08"),
    ("GeForce RTX 5050 Laptop GPU", "570.172.08"), ("RTX PRO 6000 Blackwell", "570.123.07"),
])
def test_the_issue_s_products_have_their_first_listing(gpus, gpu, first):
    assert gpus.floors[gpu].first[0] == first


def test_a_later_release_of_the_same_branch_may_be_the_first_to_list_it(gpus):
    gb10 = gpus.floors["GB10"]
    assert gb10.upgrade_for("580.65.06") == "580.94.13" and gb10.upgrade_for("580.95.05") is None
    assert gb10.upgrade_for("590.44.01") == "590.48.01"  # the R590 table lists it from 590.48.01


def test_a_branch_between_listed_ones_that_never_listed_it_is_refused(gpus):
    assert gpus.floors["H200"].upgrade_for("545.29.06") == "550.40.65"


def test_a_branch_newer_than_every_table_read_is_not_judged():
    floor = DriverFloor("X", ("580.82.07", "595.44.02"), "X | 0000", False, ("S",))
    assert floor.upgrade_for("610.43.02") is None


def test_open_only_floors_bind_the_open_modules_alone(gpus):
    # Tesla T4 is in the open tables only from 575.51.02; the proprietary modules ran it long before.
    assert gpus.driver_problem("7.5", "Tesla T4", "570.124.06", "proprietary") is None
    assert gpus.driver_problem("7.5", "Tesla T4", "570.124.06", None) is None
    assert "575.51.02" in gpus.driver_problem("7.5", "Tesla T4", "570.124.06", "open").message


def test_every_floor_row_rises_one_release_per_branch_and_cites_its_first_tag(gpus):
    for name, floor in gpus.floors.items():
        branches = [driver_branch(r) for r in floor.first]
        assert branches == sorted(set(branches)), name
        assert floor.source[0] == "S-OGKM-" + floor.first[0].replace(".", "-"), name


def test_every_turing_or_later_gpu_row_with_a_pci_id_has_a_floor_or_predates_the_tables(gpus):
    """Audit (issue 25, item 5): a GPU row with a PCI id has a driver floor: its own
    (driver_floors), or its family's, or it predates the open tables (listed in the first
    one, 515.48.07: `driver_floors_predate`), or the open modules never drive it (pre-Turing:
    the family's last branch bounds it; the proprietary appendix is not read yet)."""
    missing = []
    for model in gpus.models:
        if not model.pci_ids or model.name in gpus.floors:
            continue
        family = gpus.family_for_cc(model.cc)
        if family is None:
            missing.append(model.name)
        elif family.open_modules == "unsupported" or family.first_branch is not None or family.integrated:
            continue
        elif model.name not in gpus.predate_floors:
            missing.append(model.name)
    assert not missing, f"GPU rows with PCI ids but no driver floor: {missing}"



NVIDIA_SMI_GB10_575 = """\
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 575.64.05              Driver Version: 575.64.05      CUDA Version: 12.9     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|
|   0  NVIDIA GB10                    On  |   0000000F:01:00.0 Off |                  N/A |
| N/A   40C    P0             10W /  N/A  |      Not Supported     |      0%      Default |
+-----------------------------------------+------------------------+----------------------+
"""


def test_triage_of_a_pasted_nvidia_smi_names_the_first_listing_and_every_branch(cli, tmp_path):
    path = tmp_path / "issue.txt"
    path.write_text(NVIDIA_SMI_GB10_575)
    report = json.loads(cli("triage", "--json", "--kb", str(KB_DIR), str(path)).output)
    report = report.get("check", report)
    [hit] = [f for f in report["findings"] if f["id"] == "driver-gpu-unsupported"]
    assert "first listed by driver 580.94.13 (R580)" in hit["message"]
    assert "R580 from 580.94.13, R590 from 590.48.01" in hit["fix"]["note"]


@pytest.mark.parametrize("name, desktop_first, laptop_first", [
    ("GeForce RTX 5070", "570.123.07", "570.153.02"), ("GeForce RTX 5060", "570.158.01", "570.158.01"),
])
def test_rtx_50_laptop_parts_have_their_own_first_listing(gpus, name, desktop_first, laptop_first):
    assert gpus.floors[name].first[0] == desktop_first
    assert gpus.floors[f"{name} Laptop GPU"].first[0] == laptop_first
    assert gpus.model_for_name(f"NVIDIA {name} Laptop GPU").name == f"{name} Laptop GPU"


def test_an_hgx_b200_known_by_its_pci_id_needs_r570(gpus):
    model = gpus.model_for_pci_id("0x2909")  # pci.ids "GB100 [HGX B200 168GB]"
    assert model.name == "B200"
    assert "570.86.15" in gpus.driver_problem(model.cc, model.name, "565.77").message
    assert gpus.driver_problem(model.cc, model.name, "570.86.15", "open") is None


def _unsupported(cli, tmp_path, document: dict) -> dict:
    path = tmp_path / "host.json"
    path.write_text(json.dumps(document))
    result = cli("check", "--json", "--facts", str(path), "--kb", str(KB_DIR), "--only", "driver-gpu-unsupported")
    (hit,) = [f for f in json.loads(result.output)["findings"] if f["id"] == "driver-gpu-unsupported"]
    return hit


def test_a_gpu_nvml_lists_and_the_bus_shows_is_judged_once(cli, tmp_path):
    # NVML writes the slot with an 8-digit domain (00000000:01:00.0), sysfs with 4
    # (0000:01:00.0): the same GPU, one entry (a mutation that forgot the listed slot
    # judged it twice, once per spelling; found by `make mutants`).
    hit = _unsupported(cli, tmp_path, facts_document("NVIDIA H200", "0x2335", "9.0", "535.230.02"))
    assert [g["where"] for g in hit["evidence"]["gpus"]] == ["00000000:01:00.0"]


def test_a_gpu_the_driver_names_only_by_its_device_id_is_named_from_its_pci_id(cli, tmp_path):
    # An old driver prints "NVIDIA device 2335" for a GPU it predates: the KB's product
    # name from the PCI id is what the message names.
    hit = _unsupported(cli, tmp_path, facts_document("NVIDIA device 2335", "0x2335", "9.0", "535.230.02"))
    assert ": H200 (Hopper, sm_90)" in hit["message"] and "NVIDIA device 2335" not in hit["message"]
