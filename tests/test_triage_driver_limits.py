"""Who a "CUDA driver version is insufficient" belongs to (a framework the report alone names;
not a CPU-only host's), the Windows numbering of the R340 legacy branch, a GPU whose newest
driver cannot reach torch's floor, and nvcc's dropped arch asked for by a project's flags."""

from __future__ import annotations

from fwdoctor.kb import KB
from fwdoctor.triage import cpu_host
from fwdoctor.triage.judge import run
from fwdoctor.triage.text import Lines


def _findings(text: str) -> dict[str, str]:
    report = run(text, KB.load()).report
    return {f.id: f.message for f in report.findings}


# recorded text: rsanchezgarc/deepEMhancer#4 (a Keras program on the TensorFlow backend)
DEEPEMHANCER = ("# Problem: CUDA driver version is insufficient for CUDA runtime version.\n\n"
                "(deepEMhancer) [loveland]$ deepemhancer -i run_half1_class001_unfil.mrc -o firstry.mrc\n"
                "updating environment to select gpu: [0]\n"
                "Using TensorFlow backend.\n")
# recorded text: PaddlePaddle/Paddle#14625 (a CUDA build of Paddle on a paddlecloud CPU cluster)
PADDLECLOUD = ("CPU\npaddlecloud将trainer_count改成10出错\n"
               "Tue Nov 27 13:49:06 2018[1,10]<stdout>:F1127 13:49:06.743296 17418 hl_cuda_device.cc:565] Check failed: "
               "cudaSuccess == cudaStat (0 vs. 35) Cuda Error: CUDA driver version is insufficient for CUDA runtime version\n\n"
               "jacquesqiao · comment · 2018-11-27\n目前初步结论是当用户选择cpu集群的时候，不应该安装带cuda支持的paddle版本。\n")


def test_driver_insufficient_in_a_report_that_names_only_tensorflow_is_tensorflows() -> None:
    assert "driver-too-old-for-framework" in _findings(DEEPEMHANCER)


def test_driver_insufficient_beside_two_frameworks_is_not_given_to_either() -> None:
    text = DEEPEMHANCER + "pip install pytorch\n"
    assert "driver-too-old-for-framework" not in _findings(text)


def test_a_cpu_cluster_report_is_read_as_a_host_without_a_gpu() -> None:
    facts = [f for frag in cpu_host.find(Lines.of(PADDLECLOUD)) for f in frag.facts]
    assert facts and "cpu集群" in str(facts)
    assert cpu_host.find(Lines.of("CPU-only nodes in our Slurm cluster\n"))
    # a wish is not a host: said on GPU hosts too
    assert not cpu_host.find(Lines.of("How can I run it on the CPU instead?\nCPU usage is 100%\n"))


def test_driver_insufficient_on_a_cpu_cluster_is_not_called_a_driver_too_old() -> None:
    assert "driver-too-old-for-framework" not in _findings(PADDLECLOUD)
    # the same error without the CPU cluster is still Paddle's driver-too-old
    assert "driver-too-old-for-framework" in _findings(PADDLECLOUD.split("\n\njacquesqiao")[0])


def test_windows_r340_legacy_numbers_342_still_drive_a_tesla_generation_gpu() -> None:
    gpus = KB.load().gpus
    assert gpus.driver_problem("1.2", "GeForce 210", "342.01") is None
    assert gpus.driver_problem("1.2", "GeForce 210", "340.108") is None
    problem = gpus.driver_problem("1.2", "GeForce 210", "343.22")
    assert problem is not None and problem.kind == "too-new"


# recorded text: pytorch/pytorch#31876 (collect_env, Windows 7, a GeForce 210)
GEFORCE_210 = ("PyTorch version: 1.2.0\nIs debug build: No\nCUDA used to build PyTorch: 10.0\n\n"
               "OS: Microsoft Windows 7 Professional\nGCC version: Could not collect\nCMake version: Could not collect\n\n"
               "Python version: 3.7\n\nIs CUDA available: No\nCUDA runtime version: 10.0.130\n"
               "GPU models and configuration: GPU 0: GeForce 210\nNvidia driver version: 342.01\n"
               "cuDNN version: C:\\Program Files\\NVIDIA GPU Computing Toolkit\\CUDA\\v10.0\\bin\\cudnn64_7.dll\n")


def test_a_gpu_whose_newest_driver_is_below_torchs_floor_is_the_gpus_finding_not_the_drivers() -> None:
    found = _findings(GEFORCE_210)
    assert "gpu-arch-unsupported-by-torch" in found
    assert "driver-too-old-for-torch" not in found
    assert "driver-gpu-unsupported" not in found


def test_a_driver_below_torchs_floor_on_a_gpu_that_newer_drivers_run_is_still_the_drivers() -> None:
    text = GEFORCE_210.replace("GeForce 210", "GeForce GTX 1080").replace("342.01", "398.36")
    assert "driver-too-old-for-torch" in _findings(text)


def test_a_dropped_arch_from_a_projects_gencode_flags_names_the_flags_in_the_fix() -> None:
    # recorded text: lisa-analysis-tools/GBGPU#7
    text = ("/usr/local/cuda/bin/nvcc -c src/gbgpu_utils.cu -arch=sm_70 -gencode=arch=compute_35,code=sm_35 "
            "-gencode=arch=compute_50,code=sm_50\nnvcc fatal   : Unsupported gpu architecture 'compute_35'\n")
    report = run(text, KB.load()).report
    hit = next(f for f in report.findings if f.id == "gpu-arch-unsupported-by-toolkit")
    assert "-gencode" in (hit.fix.note or "")
