"""GPUs: the driver's /proc files, the PCI bus, the source order of gpus.list, and the
GPU knowledge base (gpus.yaml) with its name matching."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import TEST_KB_DIR
from fwdoctor.engine import collect
from fwdoctor.host import Host
from fwdoctor.kb import KB, KB_DIR, Ctx, KBError
from fwdoctor.kb.gpus import from_yaml, name_key, normalize_pci_id, normalize_slot
from fwdoctor.probes import driver, gpus
from fwdoctor.probes.gpus import parse_proc_information

TESTS = Path(__file__).resolve().parent
DATA = TESTS / "data" / "driver"
ROOTS = TESTS / "roots"
PROBES = (*driver.PROBES, *gpus.PROBES)


@functools.lru_cache(maxsize=1)
def frozen_gpu_kb():
    """gpus.yaml of the frozen test KB: name matching is logic, and a GPU added to the
    shipped KB must not change these answers. (Hypothesis tests cannot take fixtures.)"""
    return KB.load(TEST_KB_DIR, validate_all=False).gpus


@pytest.fixture
def gpu_kb():
    return frozen_gpu_kb()


def facts_of(root: Path):
    return collect(Host.at_root(root), PROBES)


# ----------------------------------------------------------------------------- /proc/driver/nvidia/gpus
def test_proc_information_gives_model_uuid_and_bus_location():
    info = parse_proc_information((DATA / "proc-gpu-information-h100.txt").read_text())
    assert info == {
        "name": "NVIDIA H100 80GB HBM3",
        "uuid": "GPU-9221d5d1-b60b-a624-bf14-0a1819cfda3b",
        "bus_id": "0000:62:00.0",
    }


def test_proc_information_of_an_older_driver_has_no_nvidia_prefix():
    info = parse_proc_information((DATA / "proc-gpu-information-1080ti.txt").read_text())
    assert info is not None and info["name"] == "GeForce GTX 1080 Ti" and info["bus_id"] == "0000:17:00.0"


def test_text_without_a_model_line_is_not_gpu_information():
    assert parse_proc_information((DATA / "proc-modules-nvidia.txt").read_text()) is None


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_proc_information_parser_never_raises(text):
    result = parse_proc_information(text)
    assert result is None or result["name"]


def test_nvml_and_sysfs_bus_ids_normalise_to_the_same_slot():
    assert normalize_slot("00000000:62:00.0") == normalize_slot("0000:62:00.0") == "0000:62:00.0"


# ----------------------------------------------------------------------------- probes on roots
def test_gpus_come_from_the_driver_proc_files_in_a_root():
    facts = facts_of(ROOTS / "driver-ok")
    assert facts["pci.nvidia_gpus"] == [{"slot": "0000:62:00.0", "device_id": "0x2330", "class": "0x030200"}]
    [gpu] = facts["gpus.list"]
    assert (gpu["name"], gpu["bus_id"], gpu["source"], gpu["cc"]) == ("NVIDIA H100 80GB HBM3", "0000:62:00.0", "proc", None)


def test_without_a_driver_gpus_come_from_the_pci_bus():
    facts = facts_of(ROOTS / "driver-missing")
    [gpu] = facts["gpus.list"]
    assert (gpu["bus_id"], gpu["source"]) == ("0000:62:00.0", "pci")


def test_a_bus_without_nvidia_devices_gives_empty_lists():
    facts = facts_of(ROOTS / "driver-no-gpu")
    assert facts["pci.nvidia_gpus"] == [] and facts["gpus.list"] == []


def test_two_gpus_in_proc_keep_pci_order():
    facts = facts_of(ROOTS / "driver-shm-multigpu")
    assert [(g["index"], g["name"]) for g in facts["gpus.list"]] == [(0, "GeForce GTX 1080 Ti"), (1, "GeForce GTX TITAN X")]


def test_a_root_with_no_proc_and_no_sysfs_leaves_gpus_unknown():
    facts = facts_of(ROOTS / "driver-shm-container")
    assert not facts.known("gpus.list") and not facts.known("pci.nvidia_gpus")


def test_nvidia_audio_functions_are_not_gpus(tmp_path):
    dev = tmp_path / "sys/bus/pci/devices/0000:62:00.1"
    dev.mkdir(parents=True)
    for name, value in (("vendor", "0x10de"), ("device", "0x22ba"), ("class", "0x040300")):
        (dev / name).write_text(value + "\n")
    assert facts_of(tmp_path)["pci.nvidia_gpus"] == []


def test_unparseable_sysfs_ids_are_a_probe_failure(tmp_path):
    dev = tmp_path / "sys/bus/pci/devices/0000:62:00.0"
    dev.mkdir(parents=True)
    for name, value in (("vendor", "0x10de"), ("device", "garbage"), ("class", "0x030200")):
        (dev / name).write_text(value + "\n")
    facts = facts_of(tmp_path)
    assert any(f.probe == "pci" and "unparseable output" in f.reason for f in facts.failures)


@pytest.mark.requires_no_gpu  # a no-GPU path: skipped where a GPU answers
def test_a_live_host_answered_by_nvidia_smi_lists_its_gpus():
    from fwdoctor.probes.driver import nvml_snapshot

    host = Host.live_host({"PATH": f"{TESTS / 'fakebin' / 'h100'}:/usr/bin:/bin"}, command_timeout=5)
    snap = nvml_snapshot(host)
    if snap is not None and snap.source == "nvml":
        pytest.skip("NVML answers on this host; the fake nvidia-smi is not consulted")
    facts = collect(host, PROBES)
    assert [(g["name"], g["cc"], g["source"]) for g in facts["gpus.list"]] == [("NVIDIA H100 80GB HBM3", "9.0", "nvidia-smi")] * 2
    assert facts["driver.cuda_version"] == "13.0"


# ----------------------------------------------------------------------------- the KB
@pytest.mark.parametrize(
    "name, cc",
    [
        ("NVIDIA H100 80GB HBM3", "9.0"),
        ("NVIDIA H100 PCIe", "9.0"),
        ("NVIDIA H200", "9.0"),
        ("Tesla V100-SXM2-32GB", "7.0"),
        ("Tesla V100S-PCIE-32GB", "7.0"),
        ("NVIDIA GeForce RTX 4090", "8.9"),
        ("NVIDIA GeForce RTX 4090 D", "8.9"),
        ("NVIDIA GeForce GTX 1080 Ti", "6.1"),
        ("GeForce GTX 1080 Ti", "6.1"),
        ("Tesla K80", "3.7"),
        ("NVIDIA A100-SXM4-80GB", "8.0"),
        ("NVIDIA A100 80GB PCIe", "8.0"),
        ("NVIDIA A10G", "8.6"),
        ("NVIDIA GeForce RTX 5090", "12.0"),
        ("NVIDIA B200", "10.0"),
        ("NVIDIA B300 SXM6 AC", "10.3"),
        ("NVIDIA L4", "8.9"),
        ("NVIDIA L40S", "8.9"),
        ("Tesla T4", "7.5"),
        ("NVIDIA Tesla T4", "7.5"),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "12.0"),
        ("NVIDIA RTX 6000 Ada Generation", "8.9"),
        ("Quadro RTX 6000", "7.5"),
        ("GeForce GTX TITAN X", "5.2"),
    ],
)
def test_real_product_names_map_to_their_compute_capability(gpu_kb, name, cc):
    assert gpu_kb.cc_for_name(name) == cc


@pytest.mark.parametrize("name", ["", "NVIDIA", "NVIDIA Graphics Device", "Radeon RX 7900 XTX", "L", "NVIDIA RTX PRO"])
def test_unknown_or_partial_names_give_none(gpu_kb, name):
    assert gpu_kb.cc_for_name(name) is None


def test_l40s_is_not_mistaken_for_l4_nor_a100_for_a10(gpu_kb):
    assert gpu_kb.model_for_name("NVIDIA L40S").name == "L40S"
    assert gpu_kb.model_for_name("NVIDIA A100-PCIE-40GB").name == "A100"


@pytest.mark.parametrize("device_id, cc", [("0x2330", "9.0"), ("2330", "9.0"), ("0X2684", "8.9"), ("0x102d", "3.7"), ("0x20b2", "8.0"), ("0xffff", None), ("bogus", None)])
def test_pci_device_ids_map_to_compute_capability(gpu_kb, device_id, cc):
    assert gpu_kb.cc_for_pci_id(device_id) == cc


def test_a_gpu_without_a_known_name_finds_its_cc_through_its_pci_slot(gpu_kb):
    gpu = {"name": "NVIDIA device 0x2330", "cc": None, "bus_id": "00000000:62:00.0"}
    pci = [{"slot": "0000:62:00.0", "device_id": "0x2330", "class": "0x030200"}]
    assert gpu_kb.cc_for_gpu(gpu, pci) == "9.0"
    assert gpu_kb.cc_for_gpu(gpu, []) is None
    assert gpu_kb.cc_for_gpu({"name": "whatever", "cc": "8.6"}) == "8.6"


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_name_matching_never_raises_and_is_case_insensitive(text):
    kb = frozen_gpu_kb()
    assert kb.cc_for_name(text) == kb.cc_for_name(text.lower())
    assert kb.cc_for_pci_id(text) is None or normalize_pci_id(text) is not None


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["NVIDIA ", "nvidia ", "", "NVIDIA Tesla "]), st.sampled_from(["", " 80GB", "-SXM4-80GB", " PCIe", " Laptop GPU"]))
def test_prefixes_and_suffixes_do_not_change_the_answer(prefix, suffix):
    kb = frozen_gpu_kb()
    for model in kb.models:
        assert kb.cc_for_name(f"{prefix}{model.name}{suffix}") == model.cc


def test_name_keys_drop_brand_words_and_memory_sizes():
    assert name_key("NVIDIA Tesla V100-SXM2-32GB") == ("v100", "sxm2")
    assert name_key("NVIDIA GeForce RTX 4090") == ("rtx", "4090")


def test_names_typed_without_geforce_find_the_same_gpu(gpu_kb):
    # NVML reports "NVIDIA GeForce RTX 4090"; people type "RTX 4090".
    assert gpu_kb.cc_for_name("RTX 4090") == gpu_kb.cc_for_name("NVIDIA GeForce RTX 4090") == "8.9"
    assert gpu_kb.cc_for_name("GTX 1080 Ti") == "6.1"


def test_every_shipped_kb_row_has_a_parseable_cc_and_a_known_source():
    kb = KB.load(KB_DIR, validate_all=False)  # an audit of the shipped gpus.yaml
    for model in kb.gpus.models:
        assert model.source and model.cc.count(".") == 1


def gpus_yaml(**override):
    data = yaml.safe_load((TEST_KB_DIR / "gpus.yaml").read_text())
    data.update(override)
    return data


def load(data):
    base = KB.load(TEST_KB_DIR, validate_all=False)
    return from_yaml(data, Ctx("gpus.yaml", "", {**base.sources, **data.get("sources", {})}))


@pytest.mark.parametrize(
    "rows, message",
    [
        ([{"name": "H100", "cc": "9.0", "source": "S-CUDAGPUS"}, {"name": "NVIDIA H100", "cc": "9.0", "source": "S-CUDAGPUS"}], "same key"),
        ([{"name": "H100", "cc": "nine", "source": "S-CUDAGPUS"}], "not a compute capability"),
        ([{"name": "H100", "cc": "9.0", "pci_ids": ["2330"], "source": "S-CUDAGPUS"}], "PCI device id"),
        ([{"name": "H100", "cc": "9.0", "pci_ids": ["0x2330"], "source": "S-CUDAGPUS"}, {"name": "H200", "cc": "9.0", "pci_ids": ["0x2330"], "source": "S-CUDAGPUS"}], "already listed"),
        ([{"name": "H100", "cc": "9.0", "source": "S-NOWHERE"}], "unknown source key"),
        ([{"name": "H100", "cc": "9.0"}], "source"),
    ],
)
def test_a_malformed_gpu_table_is_rejected_naming_the_row(rows, message):
    with pytest.raises(KBError) as err:
        load(gpus_yaml(gpus=rows))
    assert message in str(err.value) and "gpus.yaml: gpus[" in str(err.value)


def test_the_shm_floor_is_read_from_the_kb():
    assert load(gpus_yaml()).shm_min_bytes == 512 * 1024 * 1024
    with pytest.raises(KBError, match="runtime"):
        load(gpus_yaml(runtime={"shm_min_mib": 0, "source": "S-FWD-SHM"}))


@pytest.mark.requires_gpu
def test_on_a_gpu_host_the_kb_agrees_with_nvml_about_every_known_gpu():
    from fwdoctor.probes.driver import nvml_snapshot

    host = Host.live_host()
    snap = nvml_snapshot(host)
    if snap is None or snap.source != "nvml" or not snap.gpus:
        pytest.skip("no GPU answering through NVML on this host")
    facts = collect(host, PROBES)
    kb = KB.load(KB_DIR, validate_all=False).gpus  # audits the shipped gpus.yaml against real hardware
    pci = facts.get("pci.nvidia_gpus") or []
    for gpu in facts["gpus.list"]:
        assert gpu["source"] == "nvml" and gpu["cc"]
        by_name = kb.cc_for_name(gpu["name"])
        by_pci = kb.cc_for_gpu({**gpu, "cc": None, "name": ""}, pci)
        assert by_name in (None, gpu["cc"]), f"gpus.yaml says {by_name} for {gpu['name']!r}, NVML says {gpu['cc']}"
        assert by_pci in (None, gpu["cc"]), f"gpus.yaml's PCI id row says {by_pci} for {gpu['bus_id']}, NVML says {gpu['cc']}"
