"""The JAX/TensorFlow/Paddle probe, rules and `select`, on fixture roots built from the real
wheel files (tests/data/frameworks/make_roots.py) and on facts holding real requirements."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import ROOTS, finding_ids
from fwdoctor.engine import judge
from fwdoctor.model import Fact, Facts
from fwdoctor.probes.frameworks import parse_build_info, parse_metadata
from fwdoctor.recipes.select_frameworks import select_framework
from fwdoctor.render.textfit import unwrap
from fwdoctor.rules.frameworks import RULES, common_version
from fwdoctor.selection import Gpu, Target

pytestmark = pytest.mark.usefixtures("use_test_kb")
DATA = Path(__file__).resolve().parent / "data" / "frameworks"
FW_IDS = {r.id for r in RULES}


def check(cli, root: str):
    result = cli("check", "--root", str(ROOTS / root), "--env-file", str(ROOTS / root / "fixture.env"), "--json")
    return result.exit_code, json.loads(result.output)


CASES = [
    ("frameworks-jax", set(), FW_IDS | {"probe-failed"}),
    ("frameworks-jax-driver-old", {"driver-too-old-for-framework"}, FW_IDS - {"driver-too-old-for-framework"}),
    ("frameworks-tf", {"framework-nvidia-wheel-mismatch"}, FW_IDS - {"framework-nvidia-wheel-mismatch"}),
    ("frameworks-torch-jax", {"frameworks-nvidia-conflict"}, FW_IDS - {"frameworks-nvidia-conflict"}),
]


@pytest.mark.parametrize("root, fires, quiet", CASES, ids=[c[0] for c in CASES])
def test_each_framework_root_fires_its_finding_and_no_other_framework_finding(cli, root, fires, quiet):
    code, report = check(cli, root)
    ids = finding_ids(report)
    assert fires <= ids and not (quiet & ids), ids
    assert code == (1 if any(f["severity"] == "error" for f in report["findings"]) else 0)


def test_the_mixed_env_names_the_installed_wheel_the_broken_framework_and_a_version_both_accept(cli):
    _, report = check(cli, "frameworks-torch-jax")
    messages = sorted(f["message"] for f in report["findings"] if f["id"] == "frameworks-nvidia-conflict")
    assert messages == [
        "nvidia-cudnn-cu13 9.28.1.4 (installed) satisfies JAX 0.10.2 (jax-cuda13-plugin 0.10.2) (<10.0,>=9.12.0.46) but breaks torch 2.14.1+cu130 (==9.24.0.43); nvidia-cudnn-cu13==9.24.0.43 satisfies both",
        "nvidia-nccl-cu13 2.32.3 (installed) satisfies JAX 0.10.2 (jax-cuda13-plugin 0.10.2) (>=2.27.7) but breaks torch 2.14.1+cu130 (==2.30.7); nvidia-nccl-cu13==2.30.7 satisfies both",
    ]
    cudnn = next(f for f in report["findings"] if "cudnn" in f["message"])
    assert cudnn["fix"]["commands"] == ["/opt/venv/bin/python -m pip install nvidia-cudnn-cu13==9.24.0.43"]


def test_the_summary_has_a_line_per_framework_with_what_it_runs_on(cli):
    result = cli("check", "--root", str(ROOTS / "frameworks-torch-jax"), "--env-file", str(ROOTS / "frameworks-torch-jax" / "fixture.env"))
    assert "  JAX      0.10.2 (CUDA 13 plugin; jax 0.10.2, jaxlib 0.10.2, jax-cuda13-plugin 0.10.2, jax-cuda13-pjrt 0.10.2)" in unwrap(result.output)
    result = cli("check", "--root", str(ROOTS / "frameworks-tf"), "--env-file", str(ROOTS / "frameworks-tf" / "fixture.env"))
    assert "  TF       2.19.1 (CUDA 12.5.1, cuDNN 9; tensorflow 2.19.1)" in result.output


def test_the_driver_finding_on_515_says_no_build_runs_and_names_the_floor(cli):
    _, report = check(cli, "frameworks-jax-driver-old")
    (finding,) = [f for f in report["findings"] if f["id"] == "driver-too-old-for-framework"]
    assert finding["message"] == "JAX 0.10.2 (jax-cuda13-plugin 0.10.2) needs CUDA 13.0, which needs NVIDIA driver >= 580.65.06; this host has 515.76: it will run on the CPU only"


# ----------------------------------------------------------------------------- parsers
def test_metadata_keeps_the_requirements_of_each_extra():
    meta = parse_metadata(next(DATA.glob("jax_cuda13_plugin-0.10.2-*.METADATA")).read_text())
    assert ("nvidia-cudnn-cu13", "<10.0,>=9.12.0.46", "with-cuda") in meta["requires"]
    assert ("jax-cuda13-pjrt", "==0.10.2", None) in meta["requires"]
    tf = parse_metadata(next(DATA.glob("tensorflow-2.19.1-*.METADATA")).read_text())
    assert ("nvidia-cudnn-cu12", "==9.3.0.75", "and-cuda") in tf["requires"]


def test_build_info_of_the_gpu_and_cpu_wheels():
    gpu = parse_build_info(next(DATA.glob("tensorflow-2.21.0-*build_info.py")).read_text())
    assert gpu["is_cuda_build"] is True and gpu["cuda_version"] == "12.5.1" and gpu["cuda_compute_capabilities"][-1] == "compute_90"
    cpu = parse_build_info(next(DATA.glob("tensorflow_cpu-2.21.0-*build_info.py")).read_text())
    assert cpu == {"is_cuda_build": False, "is_rocm_build": False, "is_tensorrt_build": False}


# ----------------------------------------------------------------------------- rules on facts
def _facts(installed: list[dict], nvidia: dict[str, str], **extra) -> Facts:
    base = {
        "frameworks.installed": installed, "frameworks.nvidia_wheels": nvidia, "driver.version": "580.95.05", "driver.loaded": True,
        "gpus.list": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "cc": "9.0"}], "pci.nvidia_gpus": [], "python.version": "3.11.7",
        "python.executable": "/venv/bin/python", "torch.installed": False, "cuda.active": None, "cudnn.installs": [],
        "cudnn.ld_first": None, "nccl.ld_first": None,
    }
    base.update(extra)
    return Facts([Fact(k, v, source="test") for k, v in base.items()])


def _item(framework, version, packages, gpu_build, cuda=None, requires=None, **more):
    return {"framework": framework, "version": version, "packages": packages, "gpu_build": gpu_build, "cuda": cuda, "cudnn": more.get("cudnn"),
            "arch_list": more.get("arch_list"), "requires": requires or {}, "requires_from": "test", "pairing": more.get("pairing", {}), "location": "/venv"}


def _real(prefix: str, extra: str) -> dict[str, str]:
    meta = parse_metadata(next(DATA.glob(f"{prefix}-*.METADATA")).read_text())
    return {n: s for n, s, e in meta["requires"] if e == extra and n.startswith("nvidia-")}


def test_tensorflow_and_jax_requiring_disjoint_cudnn_say_no_version_satisfies_both(test_kb):
    tf = _item("tensorflow", "2.19.1", {"tensorflow": "2.19.1"}, True, "12.5.1", _real("tensorflow-2.19.1", "and-cuda"), cudnn="9")
    jax = _item("jax", "0.9.2", {"jax": "0.9.2", "jax-cuda12-plugin": "0.9.2"}, True, "12", _real("jax_cuda12_plugin-0.9.2", "with-cuda"))
    report = judge(_facts([tf, jax], {"nvidia-cudnn-cu12": "9.3.0.75", "nvidia-nccl-cu12": "2.23.4"}), test_kb, RULES, only={"frameworks-nvidia-conflict"})
    nvcc, cudnn = sorted(report.findings, key=lambda f: "cudnn" in f.message)
    assert nvcc.message == (
        "nvidia-cuda-nvcc-cu12 (not installed): TensorFlow 2.19.1 requires ==12.5.82, JAX 0.9.2 (jax-cuda12-plugin 0.9.2) requires >=12.6.85; "
        "no version satisfies both: use separate virtual environments"
    )
    assert cudnn.message == (
        "nvidia-cudnn-cu12 9.3.0.75 (installed) satisfies TensorFlow 2.19.1 (==9.3.0.75) but breaks JAX 0.9.2 (jax-cuda12-plugin 0.9.2) (<10.0,>=9.8); "
        "no version satisfies both: use separate virtual environments"
    )
    assert common_version("==9.3.0.75", "<10.0,>=9.8") is None and common_version("==9.24.0.43", "<10.0,>=9.12.0.46") == "9.24.0.43"


def test_cpu_builds_on_a_gpu_host_get_the_cuda_install_this_driver_runs(test_kb):
    jax = _item("jax", "0.10.2", {"jax": "0.10.2", "jaxlib": "0.10.2"}, False)
    tf = _item("tensorflow", "2.21.0", {"tensorflow-cpu": "2.21.0"}, False)
    report = judge(_facts([jax, tf], {}, **{"driver.version": "550.127.05"}), test_kb, RULES, only={"framework-cpu-build-on-gpu-host"})
    commands = [f.fix.commands for f in report.findings]
    assert commands == [("/venv/bin/python -m pip install -U 'jax[cuda12]==0.10.2'",), ("/venv/bin/python -m pip uninstall -y tensorflow-cpu", "/venv/bin/python -m pip install 'tensorflow[and-cuda]==2.21.0'")]
    quiet = judge(_facts([jax, tf], {}, **{"gpus.list": []}), test_kb, RULES, only={"framework-cpu-build-on-gpu-host"})
    assert quiet.findings == []


def test_a_local_cuda_jax_with_an_old_toolkit_ptxas_is_reported_and_the_nvcc_wheel_clears_it(test_kb):
    jax = _item("jax", "0.10.2", {"jax": "0.10.2", "jax-cuda12-plugin": "0.10.2"}, True, "12")
    old = {"root": "/usr/local/cuda-12.2", "version": "12.2.140", "why": "nvcc on PATH"}
    report = judge(_facts([jax], {}, **{"cuda.active": old}), test_kb, RULES, only={"ptxas-too-old-for-xla"})
    (finding,) = report.findings
    assert "needs ptxas >= 12.6; XLA would use ptxas 12.2.140 (CUDA toolkit 12.2.140 at /usr/local/cuda-12.2 (nvcc on PATH))" in finding.message
    fixed = judge(_facts([jax], {"nvidia-cuda-nvcc-cu12": "12.8.93"}, **{"cuda.active": old}), test_kb, RULES, only={"ptxas-too-old-for-xla"})
    assert fixed.findings == []


def test_a_jaxlib_outside_jaxs_range_is_reported(test_kb):
    jax = _item("jax", "0.10.2", {"jax": "0.10.2", "jaxlib": "0.9.2"}, False, pairing={"jaxlib": "<=0.10.2,>=0.10.1"})
    (finding,) = judge(_facts([jax], {}), test_kb, RULES, only={"framework-packages-mismatched"}).findings
    assert finding.message == "JAX 0.10.2: jaxlib 0.9.2 is outside the <=0.10.2,>=0.10.1 that jax 0.10.2 declares"


def test_tensorflow_on_a_k80_has_no_kernel_and_on_an_h100_runs_its_ptx(test_kb):
    tf = _item("tensorflow", "2.21.0", {"tensorflow": "2.21.0"}, True, "12.5.1", arch_list=["sm_60", "sm_70", "sm_80", "sm_89", "compute_90"])
    k80 = judge(_facts([tf], {}, **{"gpus.list": [{"index": 0, "name": "Tesla K80", "cc": "3.7"}]}), test_kb, RULES, only={"gpu-arch-unsupported-by-framework"})
    assert [f.id for f in k80.findings] == ["gpu-arch-unsupported-by-framework"]
    assert judge(_facts([tf], {}), test_kb, RULES, only={"gpu-arch-unsupported-by-framework"}).findings == []


def test_deep_no_gpu_quotes_the_frameworks_own_error(test_kb):
    jax = _item("jax", "0.10.2", {"jax": "0.10.2", "jax-cuda13-plugin": "0.10.2"}, True, "13")
    error = "RuntimeError: Unable to initialize backend 'cuda': FAILED_PRECONDITION: No visible GPU devices."
    deep = {"jax": {"imported": True, "gpu_count": 0, "gpu_error": error, "devices": [{"platform": "cpu"}]}}
    (finding,) = judge(_facts([jax], {}, **{"frameworks.deep": deep}), test_kb, RULES, only={"framework-gpu-unused"}).findings
    assert finding.message.endswith(f': "{error}"')


# ----------------------------------------------------------------------------- select
def test_select_jax_picks_the_newest_release_with_a_wheel_for_the_python_and_a_cuda_the_driver_runs(test_kb):
    choice = select_framework(test_kb, "jax", Target(python="3.11", driver="550.127.05", gpus=(Gpu("H100", "9.0"),)))
    assert choice.pip_requirement() == "jax[cuda12]==0.10.2"
    assert [r.candidate for r in choice.rejected] == ["0.12.0.1", "0.11.2"]
    assert "CUDA 13.0 needs driver >= 580.65.06 (this host: 550.127.05)" in choice.rejected[0].reasons[0]
    assert select_framework(test_kb, "jax", Target(python="3.12", driver="580.95.05")).pip_requirement() == "jax[cuda13]==0.12.0.1"


def test_select_tensorflow_skips_a_release_without_a_kernel_for_the_gpu(test_kb):
    choice = select_framework(test_kb, "tensorflow", Target(python="3.11", driver="580.95.05", gpus=(Gpu("Tesla K80", "3.7"),)))
    assert choice.rejected[0].candidate == "2.21.0" and "no kernel for Tesla K80 (cc 3.7)" in choice.rejected[0].reasons[0]


def test_install_jax_plans_the_pinned_extra_and_a_verification(cli):
    import sys

    result = cli("install", "jax", "--driver", "580.95.05", "--gpu", "9.0", "--python", sys.executable, "--json")
    plan = json.loads(result.output[result.output.index("{"):])["plan"]  # after the stderr dry-run remark
    # The newest release for the interpreter's Python (frameworks.yaml `pythons`): jax 0.11 and
    # 0.12 need Python >= 3.12, so a 3.11 interpreter gets 0.10.2 (the suite runs on 3.11 and 3.13).
    want = "0.10.2" if sys.version_info[:2] == (3, 11) else "0.12.0.1"
    assert [step["argv"] for step in plan["steps"]] == [[sys.executable, "-m", "pip", "install", f"jax[cuda13]=={want}"]]
    assert plan["verify"][0]["argv"][1:] == ["-c", "import jax; print(jax.__version__, jax.devices())"]


def test_paddle_gpu_from_its_real_version_file_is_judged_against_the_driver(cli, tmp_path):
    import shutil

    root = tmp_path / "root"
    shutil.copytree(ROOTS / "frameworks-jax-driver-old", root, symlinks=True)
    site = root / "opt/venv/lib/python3.11/site-packages"
    for entry in site.iterdir():
        shutil.rmtree(entry)
    (site / "paddlepaddle_gpu-2.6.2.dist-info").mkdir()
    (site / "paddlepaddle_gpu-2.6.2.dist-info" / "METADATA").write_text(next(DATA.glob("paddlepaddle_gpu-2.6.2-*.METADATA")).read_text())
    (site / "paddle" / "version").mkdir(parents=True)
    shutil.copy2(next(DATA.glob("paddlepaddle_gpu-2.6.2-*version____init__.py")), site / "paddle" / "version" / "__init__.py")
    result = cli("check", "--root", str(root), "--env-file", str(root / "fixture.env"), "--json")
    report = json.loads(result.output)
    assert {"layer": "Paddle", "text": "2.6.2 (CUDA 11.8, cuDNN 8.6.0; paddlepaddle-gpu 2.6.2)"} in report["summary"]
    # CUDA 11.8 runs on 515.76 (11.x floor 450.80.02): no driver finding, unlike jax[cuda13] on this root.
    assert not {"driver-too-old-for-framework", "framework-cpu-build-on-gpu-host"} & finding_ids(report)


@pytest.mark.parametrize("driver, flagged", [("396.44", True), ("410.48", False), ("418.87.01", False)])
def test_tensorflow_built_for_cuda_10_0_needs_the_10_0_toolkits_driver(test_kb, driver, flagged):
    # Before CUDA 11 there is no minor-version compatibility (issue 26): a TensorFlow built
    # for CUDA 10.0 (1.13-2.0) needs Table 3's 10.0 driver, 410.48; it was "not checked".
    tf = _item("tensorflow", "1.14.0", {"tensorflow-gpu": "1.14.0"}, True, "10.0")
    report = judge(_facts([tf], {}, **{"driver.version": driver}), test_kb, RULES, only={"driver-too-old-for-framework"})
    assert not report.not_checked, report.not_checked
    if flagged:
        (finding,) = report.findings
        assert "TensorFlow 1.14.0 needs CUDA 10.0, which needs NVIDIA driver >= 410.48; this host has 396.44" in finding.message
    else:
        assert report.findings == []


def test_tensorflow_for_cuda_10_0_on_a_windows_driver_is_held_to_the_windows_column(test_kb):
    # 410.48 is Table 3's Linux 10.0 driver; a Windows host needs 411.31.
    tf = _item("tensorflow", "1.14.0", {"tensorflow-gpu": "1.14.0"}, True, "10.0")
    windows = {"platform.windows_build": {"version": "10.0.17763", "build": 17763}}
    (finding,) = judge(_facts([tf], {}, **{"driver.version": "411.00", **windows}), test_kb, RULES, only={"driver-too-old-for-framework"}).findings
    assert "needs NVIDIA driver >= 411.31; this host has 411.00" in finding.message
    assert judge(_facts([tf], {}, **{"driver.version": "411.31", **windows}), test_kb, RULES, only={"driver-too-old-for-framework"}).findings == []
    assert judge(_facts([tf], {}, **{"driver.version": "411.00"}), test_kb, RULES, only={"driver-too-old-for-framework"}).findings == []


# torch 2.14.1+cu130's nvidia-* wheels: its own pins and the versions of cuda-toolkit 13.0.3's
# extras it names (cublas, cudart, ...; tests/data/frameworks' real METADATA of both).
TORCH_CU130_WHEELS = {"nvidia-cublas": "13.1.1.3", "nvidia-cuda-runtime": "13.0.96", "nvidia-cuda-nvrtc": "13.0.88", "nvidia-cufft": "12.0.0.61",
                      "nvidia-cufile": "1.15.1.6", "nvidia-cuda-cupti": "13.0.85", "nvidia-curand": "10.4.0.35", "nvidia-cusolver": "12.0.4.66",
                      "nvidia-cusparse": "12.6.3.3", "nvidia-nvjitlink": "13.0.88", "nvidia-nvtx": "13.0.85", "nvidia-cudnn-cu13": "9.24.0.43",
                      "nvidia-cusparselt-cu13": "0.8.1", "nvidia-nccl-cu13": "2.30.7", "nvidia-nvshmem-cu13": "3.4.5"}


def _torch_and_jax_root(tmp_path: Path, extra_wheels: dict[str, str]) -> Path:
    """torch 2.14.1+cu130 with its CUDA wheels, and jax 0.11.2 with jax-cuda13-plugin: the layout
    of the H200 machine `make gpu-check` ran on (2026-12-04: torch 2.11.0+cu130, jax 0.11.2,
    the CUDA 13.0 toolkit in /usr/local/cuda). `extra_wheels` are what jax[cuda13] adds."""
    import shutil

    root = tmp_path / "root"
    shutil.copytree(ROOTS / "frameworks-torch-jax", root, symlinks=True)
    site = root / "opt/venv/lib/python3.11/site-packages"
    for entry in [*site.glob("nvidia*"), *site.glob("jax*")]:
        shutil.rmtree(entry)

    def dist(name: str, version: str, metadata: str | None = None) -> None:
        folder = site / f"{name.replace('-', '_')}-{version}.dist-info"
        folder.mkdir()
        text = (DATA / metadata).read_text() if metadata else f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        (folder / "METADATA").write_text(text)

    dist("jax", "0.11.2", "jax-0.11.2-py3-none-any.whl.METADATA")
    dist("jaxlib", "0.11.2", "jaxlib-0.11.2-cp312-cp312-manylinux_2_27_x86_64.whl.METADATA")
    dist("jax-cuda13-plugin", "0.11.2", "jax_cuda13_plugin-0.11.2-cp312-cp312-manylinux_2_27_x86_64.whl.METADATA")
    dist("jax-cuda13-pjrt", "0.11.2", "jax_cuda13_pjrt-0.11.2-py3-none-manylinux_2_27_x86_64.whl.METADATA")
    dist("cuda-toolkit", "13.0.3.0", "cuda_toolkit-13.0.3.0-py2.py3-none-any.whl.METADATA")
    for name, version in {**TORCH_CU130_WHEELS, **extra_wheels}.items():
        dist(name, version)
    libdevice = root / "usr/local/cuda-13.0/nvvm/libdevice"
    libdevice.mkdir(parents=True)
    (libdevice / "libdevice.10.bc").write_bytes(b"BC\xc0\xde")
    (root / "usr/local/cuda").symlink_to("cuda-13.0")
    return root


def test_torch_beside_a_local_cuda_jax_is_not_read_as_a_broken_jax_cuda13(cli, tmp_path):
    """Found by `make gpu-check` on an H200 (2026-12-04): torch's own CUDA 13 wheels have the
    names jax[cuda13]'s extra names, so torch + jax[cuda13-local] read as jax[cuda13] missing
    nvidia-cuda-nvcc and nvidia-nvvm: two false errors on a working machine."""
    root = _torch_and_jax_root(tmp_path, {})
    result = cli("check", "--root", str(root), "--env-file", str(root / "fixture.env"), "--json")
    ids = finding_ids(json.loads(result.output))
    assert not {"framework-nvidia-wheel-mismatch", "frameworks-nvidia-conflict", "xla-libdevice-missing"} & ids, ids


def test_a_jax_cuda13_extra_half_removed_beside_torch_is_still_reported(cli, tmp_path):
    # nvidia-cuda-nvcc is a wheel torch does not pull in: the extra was installed, and its
    # nvidia-nvvm is gone.
    root = _torch_and_jax_root(tmp_path, {"nvidia-cuda-nvcc": "13.0.88"})
    result = cli("check", "--root", str(root), "--env-file", str(root / "fixture.env"), "--json")
    report = json.loads(result.output)
    hits = [f for f in report["findings"] if f["id"] == "framework-nvidia-wheel-mismatch"]
    assert [h["evidence"]["package"] for h in hits] == ["nvidia-nvvm"], report["findings"]
    assert hits[0]["evidence"]["installed"] is None
