"""The driver probe: parsers on recorded outputs (tests/data/driver/README.md says where
each came from), fuzzing, fixture roots, and nvidia-smi / NVML misbehaving."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fwdoctor.engine import collect
from fwdoctor.host import Host
from fwdoctor.probes import driver
from fwdoctor.probes.driver import (
    NvmlSnapshot,
    lib_version,
    nvml_snapshot,
    parse_modules,
    parse_proc_version,
    parse_smi_csv,
    parse_smi_header,
    parse_sys_version,
    smi_error,
    smi_query,
    userspace_libs,
)

TESTS = Path(__file__).resolve().parent
DATA = TESTS / "data" / "driver"
ROOTS = TESTS / "roots"
FAKEBIN = TESTS / "fakebin"
H100_CSV_FIELDS = (
    "index,uuid,pci.bus_id,driver_version,memory.total,power.limit,power.max_limit,clocks.max.sm,"
    "clocks.max.memory,clocks.applications.graphics,compute_mode,ecc.mode.current"
).split(",")


def data(name: str) -> str:
    return (DATA / name).read_text()


def fake_smi_host(kind: str, timeout: float = 1.0) -> Host:
    """A live host whose PATH finds tests/fakebin/KIND/nvidia-smi first."""
    env = {"PATH": f"{FAKEBIN / kind}:/usr/bin:/bin"}
    return Host.live_host(env, command_timeout=timeout)


def nvml_works() -> bool:
    snap = nvml_snapshot(Host.live_host())
    return snap is not None and snap.source == "nvml"


# ----------------------------------------------------------------------------- /proc, /sys
@pytest.mark.parametrize(
    "name, version, flavor",
    [
        ("proc-version-515.76-proprietary.txt", "515.76", "proprietary"),
        ("proc-version-580.95.05-open.txt", "580.95.05", "open"),
        ("proc-version-580.65.06-open-aarch64.txt", "580.65.06", "open"),
    ],
)
def test_proc_version_gives_the_module_version_and_flavor(name, version, flavor):
    parsed = parse_proc_version(data(name))
    assert parsed is not None
    assert (parsed.version, parsed.flavor) == (version, flavor)


def test_proc_version_does_not_take_the_gcc_version_for_the_driver():
    only_gcc = data("proc-version-580.95.05-open.txt").splitlines()[1]
    assert parse_proc_version(only_gcc) is None


def test_sys_module_version_accepts_three_and_two_part_versions_only():
    assert parse_sys_version("580.95.05\n") == "580.95.05"
    assert parse_sys_version("515.76\n") == "515.76"
    assert parse_sys_version("580.95.05 junk") is None
    assert parse_sys_version("") is None


def test_proc_modules_names_nvidia_and_nouveau():
    assert {"nvidia", "nvidia_uvm", "nvidia_drm"} <= parse_modules(data("proc-modules-nvidia.txt"))
    assert "nouveau" in parse_modules(data("proc-modules-nouveau.txt"))
    assert "nvidia" not in parse_modules(data("proc-modules-nouveau.txt"))


@pytest.mark.parametrize(
    "filename, expected",
    [
        ("libcuda.so.580.95.05", ("libcuda", "580.95.05")),
        ("libnvidia-ml.so.515.76", ("libnvidia-ml", "515.76")),
        ("libcuda.so.1", None),
        ("libcuda.so", None),
        ("libcudart.so.13.0.96", None),
    ],
)
def test_library_file_names_give_a_version_only_for_driver_libraries(filename, expected):
    assert lib_version(filename) == expected


# ----------------------------------------------------------------------------- nvidia-smi
@pytest.mark.parametrize(
    "name, driver_version, cuda",
    [
        ("smi-header-580.95.05.txt", "580.95.05", "13.0"),
        ("smi-header-535.104.05.txt", "535.104.05", "12.2"),
        ("smi-header-470.57.02.txt", "470.57.02", "11.4"),
        ("smi-header-470.82.01-cuda-na.txt", "470.82.01", None),
    ],
)
def test_nvidia_smi_header_gives_driver_and_cuda_version(name, driver_version, cuda):
    assert parse_smi_header(data(name)) == (driver_version, cuda)


def test_query_csv_of_eight_h100s_gives_eight_gpus_with_bus_ids_and_memory():
    gpus = parse_smi_csv(data("smi-csv-8xh100.txt"), H100_CSV_FIELDS)
    assert gpus is not None and [g["index"] for g in gpus] == list(range(8))
    assert gpus[1]["bus_id"] == "00000000:18:00.0"
    assert gpus[1]["uuid"] == "GPU-8a39f0ec-5884-45d9-f056-53ace5e57df8"
    assert {g["memory_mib"] for g in gpus} == {81559}
    assert {g["driver_version"] for g in gpus} == {"580.126.20"}


@pytest.mark.parametrize(
    "name, fields, gpu_name, cc",
    [
        ("smi-csv-rtx4090.txt", ["name", "driver_version", "compute_cap"], "NVIDIA GeForce RTX 4090", "8.9"),
        ("smi-csv-b300.txt", ["driver_version", "name", "compute_cap"], "NVIDIA B300 SXM6 AC", "10.3"),
        ("smi-csv-h100-clocks.txt", ["index", "name", "memory.total", "clocks.sm", "driver_version"], "NVIDIA H100 80GB HBM3", None),
    ],
)
def test_query_csv_reads_fields_in_the_order_asked(name, fields, gpu_name, cc):
    gpus = parse_smi_csv(data(name), fields)
    assert gpus is not None and len(gpus) == 1
    assert (gpus[0]["name"], gpus[0]["cc"]) == (gpu_name, cc)


def test_query_csv_reads_not_available_fields_as_none():
    gpus = parse_smi_csv("0, NVIDIA H100 80GB HBM3, [N/A], [Not Supported]\n", ["index", "name", "uuid", "memory.total"])
    assert gpus is not None and gpus[0]["uuid"] is None and gpus[0]["memory_mib"] is None


def test_query_csv_with_a_short_row_is_unparseable():
    assert parse_smi_csv("0, NVIDIA H100 80GB HBM3\n", ["index", "name", "uuid"]) is None


def test_the_mismatch_line_is_found_in_nvidia_smi_output():
    assert smi_error(data("smi-mismatch.txt")) == "Failed to initialize NVML: Driver/library version mismatch"
    assert smi_error(data("smi-header-580.95.05.txt")) is None


# ----------------------------------------------------------------------------- fuzzing
@settings(max_examples=300, deadline=None)
@given(st.text())
def test_text_parsers_never_raise_on_arbitrary_text(text):
    # Each answers None (or nothing) or a value taken from the text itself.
    proc = parse_proc_version(text)
    assert proc is None or (proc.version in text and proc.flavor in ("open", "proprietary"))
    assert parse_sys_version(text) in (None, text.strip())
    assert parse_modules(text) <= {line.split()[0] for line in text.splitlines() if line.split()}
    header = parse_smi_header(text)
    assert header is None or all(v is None or v in text for v in header)
    error = smi_error(text)
    assert error is None or (error in text and error.startswith(("Failed to initialize NVML", "NVIDIA-SMI has failed")))
    lib = lib_version(text)
    assert lib is None or text == f"{lib[0]}.so.{lib[1]}"
    for fields in (list(driver.SMI_FIELDS), ["name"]):
        rows = parse_smi_csv(text, fields)
        assert rows is None or all(isinstance(row, dict) for row in rows)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.text(alphabet=st.characters(blacklist_characters="\r\n\x00"), max_size=12), min_size=8, max_size=8), max_size=4))
def test_query_csv_parser_never_raises_on_rows_of_arbitrary_cells(rows):
    text = "\n".join(", ".join(cells) for cells in rows)
    result = parse_smi_csv(text, list(driver.SMI_FIELDS))
    assert result is None or all(isinstance(g["index"], int) for g in result)


# ----------------------------------------------------------------------------- roots
def facts_of(root: Path):
    return collect(Host.at_root(root), driver.PROBES)


def test_a_loaded_open_module_with_matching_libraries_is_read_from_the_root():
    facts = facts_of(ROOTS / "driver-ok")
    assert facts["driver.loaded"] is True
    assert facts["driver.version"] == "580.95.05"
    assert facts["driver.module_flavor"] == "open"
    assert facts["driver.nouveau_loaded"] is False
    assert {(lib["name"], lib["version"]) for lib in facts["driver.userspace_libs"]} == {
        ("libcuda", "580.95.05"),
        ("libnvidia-ml", "580.95.05"),
    }


def test_nvml_facts_are_unknown_inside_a_root_because_nothing_runs_there():
    facts = facts_of(ROOTS / "driver-ok")
    assert not facts.known("driver.cuda_version")
    assert "--root" in facts.why("driver.nvml_error")
    assert facts.failures == []


def test_no_module_means_no_version_rather_than_unknown():
    facts = facts_of(ROOTS / "driver-missing")
    assert facts["driver.loaded"] is False
    assert facts["driver.version"] is None
    assert facts["driver.module_flavor"] is None


def test_a_root_without_proc_or_sys_leaves_the_driver_unknown():
    facts = facts_of(ROOTS / "driver-shm-container")
    assert not facts.known("driver.loaded")
    assert not facts.known("driver.version")
    assert facts["driver.userspace_libs"] == []


def test_a_garbage_proc_version_is_a_probe_failure_saying_unparseable(tmp_path):
    (tmp_path / "proc/driver/nvidia").mkdir(parents=True)
    (tmp_path / "proc/driver/nvidia/version").write_text("\x00\x01 not a driver\n")
    facts = facts_of(tmp_path)
    assert facts["driver.loaded"] is True
    assert not facts.known("driver.version")
    assert any("unparseable output" in f.reason and f.probe == "driver" for f in facts.failures)


def test_leftover_library_versions_beside_the_soname_link_are_ignored(tmp_path):
    lib = tmp_path / "usr/lib/x86_64-linux-gnu"
    lib.mkdir(parents=True)
    for name in ("libcuda.so.580.95.05", "libcuda.so.575.57.08"):
        (lib / name).write_text("")
    (lib / "libcuda.so.1").symlink_to("libcuda.so.580.95.05")
    found = userspace_libs(Host.at_root(tmp_path))
    assert found == [{"path": "/usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05", "name": "libcuda", "version": "580.95.05"}]


def test_versioned_libraries_count_when_no_soname_link_exists(tmp_path):
    lib = tmp_path / "usr/local/nvidia/lib64"
    lib.mkdir(parents=True)
    (lib / "libnvidia-ml.so.515.76").write_text("")
    found = userspace_libs(Host.at_root(tmp_path))
    assert found == [{"path": "/usr/local/nvidia/lib64/libnvidia-ml.so.515.76", "name": "libnvidia-ml", "version": "515.76"}]


# ----------------------------------------------------------------------------- live: NVML child, nvidia-smi
def test_a_hung_nvml_child_is_killed_and_reported(tmp_path):
    sleeper = tmp_path / "nvml-child"
    sleeper.write_text("#!/bin/sh\nexec sleep 600\n")
    sleeper.chmod(0o755)
    snap = nvml_snapshot(Host.live_host({"PATH": "/usr/bin:/bin"}, command_timeout=0.5), child_argv=[str(sleeper)])
    assert snap is not None and snap.source is None
    assert [f.probe for f in snap.failures] == ["nvml"]
    assert "no answer within the timeout" in snap.failures[0].reason


def test_an_nvml_child_printing_garbage_is_unparseable_output_not_a_crash(tmp_path):
    child = tmp_path / "nvml-child"
    child.write_text("#!/bin/sh\necho 'Segmentation fault'\nexit 139\n")
    child.chmod(0o755)
    snap = nvml_snapshot(Host.live_host({"PATH": "/usr/bin:/bin"}, command_timeout=2), child_argv=[str(child)])
    assert snap is not None
    assert any("unparseable output" in f.reason for f in snap.failures)


def test_the_real_nvml_child_prints_json_with_a_clear_answer():
    result = Host.live_host().run([sys.executable, str(driver.CHILD)])
    assert result is not None and result.ok
    parsed = driver._child_json(result.stdout)
    assert parsed is not None
    if not parsed["ok"]:  # no GPU stack here: a named reason, never a traceback
        assert parsed["kind"] in {"no-pynvml", "no-library", "init-failed"} and parsed["error"]


def test_a_hung_nvidia_smi_is_killed_and_reported_as_a_probe_failure():
    snap = NvmlSnapshot()
    smi_query(fake_smi_host("hang", timeout=0.5), snap)
    assert snap.gpus is None
    assert [f.probe for f in snap.failures] == ["nvidia-smi"]
    assert "no answer within the timeout (killed)" in snap.failures[0].reason


def test_nvidia_smi_garbage_is_unparseable_output():
    snap = NvmlSnapshot()
    smi_query(fake_smi_host("garbage"), snap)
    assert snap.gpus is None
    assert "unparseable output" in snap.failures[0].reason


def test_nvidia_smi_version_mismatch_becomes_the_nvml_error():
    snap = NvmlSnapshot()
    smi_query(fake_smi_host("mismatch"), snap)
    assert snap.error == "Failed to initialize NVML: Driver/library version mismatch"
    assert snap.failures == []


def test_nvidia_smi_with_no_devices_is_an_empty_gpu_list_not_a_failure():
    snap = NvmlSnapshot()
    smi_query(fake_smi_host("nodevices"), snap)
    assert (snap.source, snap.gpus, snap.failures) == ("nvidia-smi", [], [])


def test_a_healthy_nvidia_smi_gives_gpus_driver_and_cuda_version():
    snap = NvmlSnapshot()
    smi_query(fake_smi_host("h100"), snap)
    assert snap.source == "nvidia-smi" and snap.failures == []
    assert snap.cuda_version == "13.0" and snap.driver_version == "580.126.20"
    assert [(g["index"], g["cc"], g["persistence"], g["source"]) for g in snap.gpus] == [
        (0, "9.0", True, "nvidia-smi"),
        (1, "9.0", True, "nvidia-smi"),
    ]


@pytest.mark.requires_no_gpu  # a no-GPU path: skipped where a GPU answers
@pytest.mark.skipif(nvml_works(), reason="NVML answers on this host, so nvidia-smi is never consulted")
def test_without_nvml_the_probes_fall_back_to_a_hung_nvidia_smi_and_still_finish():
    facts = collect(fake_smi_host("hang", timeout=0.5), driver.PROBES)
    assert any(f.probe == "nvidia-smi" and "timeout" in f.reason for f in facts.failures)
    assert facts.known("driver.loaded")  # the file-based facts still came out


@pytest.mark.requires_gpu
def test_on_a_gpu_host_nvml_reports_the_driver_and_each_gpu():
    snap = nvml_snapshot(Host.live_host())
    if snap is None or snap.source != "nvml":
        pytest.skip("no NVML on this host")
    assert snap.driver_version and snap.cuda_version
    assert snap.gpus and all(g["name"] and g["cc"] for g in snap.gpus)
    facts = collect(Host.live_host(), driver.PROBES)
    assert facts["driver.version"] == snap.driver_version
    assert facts["driver.nvml_error"] is None


def test_the_snapshot_is_computed_once_per_host():
    host = fake_smi_host("h100")
    assert nvml_snapshot(host) is nvml_snapshot(host)
    assert nvml_snapshot(host) is not nvml_snapshot(fake_smi_host("h100"))
