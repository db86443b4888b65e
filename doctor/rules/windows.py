"""WSL and native Windows: wsl-gpu-unsupported, wsl-linux-driver-installed, and the
report-side twin of torch-cpu-build-on-gpu-host for a CPU torch where the report means a GPU.

RULES judge a live host or a --root from driver.wsl (probes/driver.py: the WSL version its
kernel release says, the Windows driver's folder /usr/lib/wsl/lib, a Linux driver's nvidia-smi)
and driver.userspace_libs (a Linux driver's libcuda.so.5xx.yy / libnvidia-ml beside it).
REPORT_RULES are their report-side twins, which `fwdoctor triage` runs where those could not
(driver.wsl is a probe's fact, never a report's): they read fwdoctor.triage.windows' facts.
Inside WSL 2 the Windows build is not visible (WSL 1's kernel release names it), so on a live
WSL 2 host wsl-gpu-unsupported is "not checked" unless the GPU answers.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from fwdoctor.model import Facts, FixRef
from fwdoctor.rules.base import Hit, NotCheckable, Rule, rule

if TYPE_CHECKING:
    from fwdoctor.kb import KB

# The Windows build GPU compute in WSL 2 needs (Windows 10 21H2, 19044): doctor/kb/cuda.yaml's `wsl`
# row, with its sources, read through kb.cuda.wsl.
_WSL_GUIDE = "https://docs.nvidia.com/cuda/wsl-user-guide/"


def _build_floor(kb: KB) -> int:
    row = kb.cuda.wsl
    if row is None:
        raise NotCheckable("no data: the KB's cuda.yaml has no `wsl` row (the Windows build GPU compute in WSL needs)")
    return row.windows_build_min


def _wsl(facts: Facts) -> dict[str, Any] | None:
    value = facts.get("platform.wsl")
    return value if isinstance(value, dict) else None


@rule("wsl-gpu-unsupported", optional=("platform.wsl", "platform.windows_build", "report.wsl_named", "driver.windows"))
def wsl_gpu_unsupported(facts: Facts, kb: KB) -> Hit | None:
    """In a report: WSL 1 (`uname -r` "4.4.0-17763-Microsoft", `wsl -l -v` VERSION 1), a
    Windows build (`ver`, systeminfo) older than the KB's floor, or, in a report from WSL, a
    Windows nvidia-smi whose every GPU runs in a driver model WSL 2 does not reach (TCC: the
    KB's wsl driver_models) (see wsl-gpu-unsupported)."""
    wsl = _wsl(facts)
    build = facts.get("platform.windows_build")
    fix = FixRef(commands=("wsl -l -v   # in PowerShell: VERSION must be 2", "wsl --set-version <distribution> 2", "winver   # Windows 11, or Windows 10 21H2 (build 19044) or later"),
                 note=f"GPU compute in WSL needs WSL 2 on Windows 11 or Windows 10 21H2+, and the Windows NVIDIA driver only ({_WSL_GUIDE})")
    if wsl and wsl.get("version") == 1:
        return Hit(f"this distribution runs on WSL 1 ({wsl.get('text')}, {facts.source('platform.wsl')}), which has no GPU access: CUDA in WSL needs WSL 2",
                   evidence={"platform.wsl": wsl}, fix=fix)
    named = wsl or facts.get("report.wsl_named")
    if named and (hit := _tcc_only(facts, kb, named)):
        return hit
    if not named or not isinstance(build, dict) or not isinstance(build.get("build"), int):
        return None
    floor = _build_floor(kb)
    if build["build"] >= floor:
        return None
    return Hit(
        f"Windows {build.get('version')} ({facts.source('platform.windows_build')}) is older than Windows 10 21H2 (build {floor}): "
        f"WSL on it has no GPU access",
        evidence={"platform.windows_build": build, "wsl": named},
        fix=fix,
    )


def _tcc_only(facts: Facts, kb: KB, named: Any) -> Hit | None:
    """Every GPU the Windows host's nvidia-smi lists runs in a driver model WSL 2 does not reach
    (TCC), by the KB's wsl driver_models; None when a GPU is in one it reaches, or no data."""
    windows = facts.get("driver.windows")
    models = windows.get("models") if isinstance(windows, dict) else None
    row = kb.cuda.wsl
    if not isinstance(models, dict) or not models or row is None or not row.driver_models:
        return None
    if any(model in row.driver_models for model in models.values()):
        return None  # a GPU WSL 2 can reach (a mixed TCC/WDDM host is not judged here)
    gpus = ", ".join(f"GPU {gpu} ({model})" for gpu, model in models.items())
    return Hit(
        f"the Windows host's nvidia-smi ({facts.source('driver.windows')}) runs {gpus} in a driver model WSL 2 does not reach: "
        f"WSL 2 shares only GPUs in {'/'.join(row.driver_models)} mode, so WSL has no GPU",
        evidence={"driver.windows": windows, "wsl": named},
        fix=FixRef(commands=("nvidia-smi -g 0 -dm 0   # in an administrator's PowerShell on Windows: WDDM for GPU 0, then reboot",
                             "nvidia-smi --query-gpu=index,name,driver_model.current --format=csv"),
                   note="switch the GPU to WDDM mode where its driver allows it (GeForce, most RTX/Quadro; data-center cards such as "
                        "H100 PCIe offer TCC only), or use the GPU from native Windows or a Linux host (microsoft/WSL#9952)"),
    )


@rule("wsl-linux-driver-installed", needs=("wsl.linux_driver",), optional=("platform.wsl", "report.wsl_named"))
def wsl_linux_driver_installed(facts: Facts, kb: KB) -> Hit | None:
    """In a report from WSL 2: a Linux NVIDIA driver's packages (`apt install nvidia-driver-535`,
    dpkg's "ii libnvidia-compute-535"), its .run installer, a libcuda.so.535.104.05, or the
    report saying so (see wsl-linux-driver-installed)."""
    said = facts["wsl.linux_driver"]
    if not isinstance(said, dict):
        return None
    in_sentence = str(said.get("what", "")).startswith("the report says so")
    if not in_sentence and not (_wsl(facts) or facts.get("report.wsl_named")):
        return None  # a Linux host's driver packages: nothing wrong
    wsl = _wsl(facts)
    if wsl and wsl.get("version") == 1:
        return None  # WSL 1 has no GPU at all: wsl-gpu-unsupported says so
    return Hit(
        f"a Linux NVIDIA driver is installed inside WSL ({said.get('what')}, report line {said.get('line')}): "
        "in WSL 2 the Windows driver provides libcuda and nvidia-smi (/usr/lib/wsl/lib), and a Linux driver's copies break them",
        evidence={"wsl.linux_driver": said},
        fix=FixRef(commands=("sudo apt-get remove --purge '^nvidia-.*' '^libnvidia-.*' cuda-drivers   # inside WSL; keep the toolkit",
                             "wsl --shutdown   # in PowerShell, then start the distribution again",
                             "ls -l /usr/lib/wsl/lib/libcuda.so*   # the Windows driver's libcuda, the one to load"),
                   note=f"keep only the Windows NVIDIA driver; inside WSL install the toolkit without a driver (cuda-toolkit-12-x from the WSL-Ubuntu repository) ({_WSL_GUIDE})"),
    )


@rule("torch-cpu-build-on-gpu-host", needs=("torch.installed", "torch.cuda", "report.gpu_expected"), optional=("torch.version", "torch.wheel"))
def torch_cpu_build_gpu_expected(facts: Facts, kb: KB) -> Hit | None:
    """A CPU-only torch the report shows (pip fetched the PyPI wheel for Windows, which is the
    CPU build; a "+cpu" tag) where the report also says a GPU is meant (it asks torch whether
    CUDA is available) (see torch-cpu-build-on-gpu-host; that rule needs the driver's state,
    which a report seldom shows)."""
    if not facts["torch.installed"] or facts["torch.cuda"] is not None:
        return None
    version = facts.get("torch.version") or "?"
    wheel = facts.get("torch.wheel")
    expected = f"{facts['report.gpu_expected']} ({facts.source('report.gpu_expected')})"
    if isinstance(wheel, dict) and wheel.get("platform") == "win_amd64":
        base = version.split("+", 1)[0]
        why = f"pip installed {wheel.get('file')} (report line {wheel.get('line')}), PyPI's Windows wheel, which is the CPU build"
        fix = _windows_cuda_wheel(kb, base)
    else:
        why = f"torch {version} has no CUDA ({facts.source('torch.cuda')})"
        fix = FixRef(recipe="torch-wheel", note="install a CUDA build of torch (download.pytorch.org/whl/cuXY)")
    return Hit(f"torch {version} is a CPU-only build: {why}; but the report expects a GPU: {expected}",
               evidence={"torch.version": version, "torch.cuda": None, "torch.wheel": wheel, "expected": facts["report.gpu_expected"]}, fix=fix)


def _windows_cuda_wheel(kb: KB, release: str) -> FixRef:
    """The command that installs a CUDA build of torch `release` on Windows: from
    download.pytorch.org's cuXY index (the newest CUDA the KB knows for that release), since
    PyPI's Windows wheel is the CPU one."""
    note = "on Windows the CUDA builds of torch come from download.pytorch.org's cuXY indexes, not PyPI (pytorch.org/get-started: Windows, Pip, CUDA)"
    cuda = [v for v in kb.torch.variants_of(release) if v.is_cuda]
    if not cuda:
        return FixRef(commands=(f"python -m pip install --force-reinstall torch=={release} --index-url https://download.pytorch.org/whl/cuXY   # XY: a CUDA that release was built for",),
                      note=note)
    best = max(cuda, key=lambda v: tuple(int(p) for p in str(v.cuda).split(".")))
    return FixRef(commands=(f"python -m pip install --force-reinstall {' '.join(best.pip_args())}",), note=note)


# A CUDA library's DLL (cudnn64_8.dll, cublas64_11.dll, caffe2_nvrtc.dll, torch_cuda.dll) may
# instead lack the driver's nvcuda.dll or another CUDA DLL: not judged as the C++ runtime.
_CUDA_DLL = re.compile(r"cud|nvrtc|cublas|cufft|curand|cusparse|cusolver|nccl|nvjitlink|cupti|nvtoolsext|zlibwapi", re.IGNORECASE)
_VC_REDIST = "https://aka.ms/vs/17/release/vc_redist.x64.exe"
# The Windows error code before torch's "Error loading ..." (None: not shown): 126 (a DLL not
# found) and 1114 (its initialisation failed) are what a missing runtime gives; 1455 (the paging
# file is too small) and 127 (a procedure not found: two builds' DLLs mixed) are not
# (doctor/kb/errors.yaml's windows-paging-file-too-small and windows-dll-procedure-not-found).
_RUNTIME_WINERRORS = (None, "126", "1114")


def _report_errors(facts: Facts, *kinds: str) -> list[dict[str, Any]]:
    return [e for e in facts.get("report.errors") or [] if e.get("kind") in kinds]


@rule("windows-msvc-runtime-missing", needs=("report.errors",))
def windows_msvc_runtime_missing(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Reads, in a report from native Windows, torch's "[WinError 126] ... Error loading
        "...\\torch\\lib\\c10.dll" or one of its dependencies" (WinError 1114 too), Python's
        "Could not find module '...\\c10.dll' (or one of its dependencies)", torch's own warning
        "Microsoft Visual C++ Redistributable is not installed", and TensorFlow's "Could not find
        the DLL(s) 'msvcp140_1.dll'" or its self-check's failing frame
        "ctypes.WinDLL(build_info.msvcp_dll_name)" (rows of doctor/kb/errors.yaml). A CUDA library's DLL
        (cudnn64_8.dll, caffe2_nvrtc.dll) that fails to load is left to the CUDA checks: what it
        lacks may be the driver's nvcuda.dll. Neither is WinError 1455 (the paging file is too
        small) nor 127 (a procedure not found: two builds' DLLs mixed) beside the same "Error
        loading" line. Judged from a report's text only: no probe of
        this Linux doctor reads a Windows host.

    Why is this bad?
        torch's and TensorFlow's Windows DLLs are built with Microsoft's compiler and need its
        C++ runtime (msvcp140.dll, vcruntime140.dll, vcruntime140_1.dll), which a fresh Windows,
        or python.org's and the Microsoft Store's Python, does not bring: `import torch` fails
        before anything runs (pytorch/pytorch#39734: c10.dll needs msvcp140.dll;
        Acly/krita-ai-diffusion#1017). torch 2.4.0's fbgemm.dll also needs the LLVM OpenMP
        runtime libomp140.x86_64.dll, which comes with Visual Studio's C++ build tools, not the
        redistributable (pytorch/pytorch#131662, fixed in torch 2.4.1).

    Example
            OSError: [WinError 126] The specified module could not be found. Error loading "C:\\...\\site-packages\\torch\\lib\\c10.dll" or one of its dependencies.

        on a Windows without the Visual C++ runtime: invalid. The same import after installing
        vc_redist.x64.exe: valid.

    Fix
        Install the latest Microsoft Visual C++ Redistributable for x64 (vc_redist.x64.exe, or
        `winget install Microsoft.VCRedist.2015+.x64`) and open a new shell. For torch 2.4.0's
        fbgemm.dll, upgrade torch to 2.4.1 or later, or add Visual Studio's "MSVC v143 C++
        x64/x86 build tools", which bring libomp140.x86_64.dll.
    """
    said = _report_errors(facts, "torch-vc-redist-not-installed", "tf-msvc-dlls-not-found", "tf-preload-check-msvcp-failed")
    loads = [e for e in _report_errors(facts, "windows-dll-dependency-missing", "windows-dll-module-not-found")
             if not _CUDA_DLL.search(re.split(r"[\\/]", str(e.get("path") or ""))[-1]) and e.get("winerror") in _RUNTIME_WINERRORS]
    if not said and not loads:
        return None
    first = (said or loads)[0]
    dll = re.split(r"[\\/]", str(first.get("path") or ""))[-1]
    what = f"Windows could not load {dll} or a DLL it needs" if dll else "a Microsoft Visual C++ runtime DLL is missing"
    commands = ["where msvcp140.dll vcruntime140_1.dll   # in cmd: is the Visual C++ runtime on the DLL search path?",
                "winget install Microsoft.VCRedist.2015+.x64   # or run " + _VC_REDIST + ", then open a new shell"]
    if dll.lower() == "fbgemm.dll":
        commands.append("python -m pip install --upgrade \"torch>=2.4.1\"   # torch 2.4.0's fbgemm.dll also needs libomp140.x86_64.dll")
    return Hit(
        f"{what} (report line {first['line']}: \"{first['text']}\"): torch's and TensorFlow's Windows DLLs need the Microsoft Visual C++ runtime "
        "(msvcp140.dll, vcruntime140_1.dll), which is not installed or not found",
        evidence={"report.errors": said + loads},
        fix=FixRef(commands=tuple(commands),
                   note=f"install the latest Microsoft Visual C++ Redistributable (x64): {_VC_REDIST}"),
    )


# Windows error 1455 (ERROR_COMMITMENT_LIMIT) in its three wordings: doctor/kb/errors.yaml's rows.
PAGEFILE_KINDS = ("windows-paging-file-too-small", "windows-dll-load-paging-file", "windows-os-error-1455")


@rule("windows-pagefile-too-small", needs=("report.errors",))
def windows_pagefile_too_small(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Reads, in a report from native Windows, error 1455 (ERROR_COMMITMENT_LIMIT) in the
        wordings a deep-learning program shows it: torch's "OSError: [WinError 1455] The paging
        file is too small for this operation to complete. Error loading
        "...\\torch\\lib\\cudnn_cnn_infer64_8.dll" or one of its dependencies", Python's older
        "ImportError: DLL load failed: The paging file is too small" (TensorFlow's
        _pywrap_tensorflow_internal) and Rust's "(os error 1455)" from safetensors mapping a
        model (rows of doctor/kb/errors.yaml). The code, not the words, is read: Windows prints
        the message in its own language. Judged from a report's text only.

    Why is this bad?
        Windows does not overcommit: every page a process reserves must be backed by RAM plus
        the paging file (the commit limit). torch's and CUDA's DLLs (cuDNN, cuBLAS,
        caffe2_detectron_ops_gpu.dll) reserve hundreds of MB to GBs each time a process loads
        them, and on Windows every DataLoader worker is a new process that imports torch again,
        so num_workers=8 commits that eight times over (ultralytics/yolov3#1643). When the limit
        is reached the next DLL fails to load, although nothing is missing: reinstalling CUDA,
        cuDNN or the Visual C++ runtime does not help. A larger paging file fixed it
        (oatsu-gh/enunu_training_kit#8, bmaltais/kohya_ss#48; PyTorch's answer on
        pytorch/pytorch#31465), as did fewer workers (JingyunLiang/SwinIR#78).

    Example
            OSError: [WinError 1455] The paging file is too small for this operation to complete. Error loading "C:\\...\\torch\\lib\\cudnn_adv_infer64_8.dll" or one of its dependencies.

        on a 16 GB Windows with a small fixed paging file: invalid. The same run with a
        system-managed paging file on a drive with free space: valid.

    Fix
        Let Windows manage the paging file size, or set a larger one (1.5-2x the RAM) on a drive
        with free space: SystemPropertiesPerformance.exe > Advanced > Virtual memory > Change,
        then restart. Lower DataLoader's num_workers (0 loads torch once), and close other
        programs that hold memory.
    """
    said = _report_errors(facts, *PAGEFILE_KINDS)
    if not said:
        return None
    first = said[0]
    return Hit(
        f"Windows ran out of commit memory (error 1455, the paging file is too small; report line {first['line']}: \"{first['text']}\"): "
        "RAM plus the paging file cannot back another process mapping torch's or CUDA's DLLs (each DataLoader worker on Windows is one); "
        "nothing is missing, so reinstalling CUDA, cuDNN or the Visual C++ runtime does not help",
        evidence={"report.errors": said},
        fix=FixRef(commands=("Get-CimInstance Win32_PageFileUsage | Select-Object Name, AllocatedBaseSize, PeakUsage   # in PowerShell: the paging file's size and peak use (MB)",
                             "SystemPropertiesPerformance.exe   # Advanced > Virtual memory > Change: 'System managed size' (or 1.5-2x the RAM) on a drive with free space; restart Windows"),
                   note="enlarge the Windows paging file (or let Windows manage it) and restart; meanwhile lower DataLoader num_workers (0 loads torch's DLLs once)"),
    )


# ----------------------------------------------------------------------------- live host / --root
_LINUX_DRIVER_FIX = FixRef(commands=("sudo apt-get remove --purge '^nvidia-.*' '^libnvidia-.*' cuda-drivers   # inside WSL; keep the toolkit",
                                     "wsl --shutdown   # in PowerShell, then start the distribution again",
                                     "ls -l /usr/lib/wsl/lib/libcuda.so*   # the Windows driver's libcuda, the one to load"),
                           note=f"keep only the Windows NVIDIA driver; inside WSL install the toolkit without a driver (cuda-toolkit-12-x from the WSL-Ubuntu repository) ({_WSL_GUIDE})")


@rule("wsl-gpu-unsupported", needs=("driver.wsl",), optional=("gpus.list",))
def wsl_gpu_unsupported_here(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Tells whether this WSL can reach a GPU at all: WSL 1 (its kernel release,
        /proc/sys/kernel/osrelease or `uname -r`, "4.4.0-17763-Microsoft"; in a report also
        VERSION 1 in `wsl -l -v`), or a Windows build older than the KB's floor, Windows 10
        21H2 (WSL 1's release names the build; in a report `ver`: "Microsoft Windows [Version
        10.0.17763.292]", systeminfo's "OS Version"). In a report from WSL also the Windows
        host's nvidia-smi when every GPU it lists runs in TCC mode. Inside WSL 2 the Windows
        build is not visible: on a live WSL 2 host where no GPU answers it is "not checked".

    Why is this bad?
        GPU compute in WSL exists only in WSL 2, on Windows 11 or Windows 10 21H2 (build 19044)
        and later, through the Windows NVIDIA driver. Elsewhere WSL has no GPU: nvidia-smi says
        "couldn't communicate with the NVIDIA driver" and no Linux driver installed inside can
        change that (Microsoft on microsoft/WSL#3847: "WSL isn't able to access the GPU").
        WSL 2 reaches only a GPU the Windows driver runs in WDDM mode: one in TCC mode, the
        default of data-center cards (Tesla, L40S; H100 PCIe has no WDDM mode), is not shared
        into WSL (microsoft/WSL#9952, #5546).

    Example
        Windows 10.0.17763 (1809) running Ubuntu in WSL: invalid. Windows 10.0.19045 with the
        distribution on WSL 2: valid.

    Fix
        Update Windows to Windows 11 or Windows 10 21H2+, convert the distribution to WSL 2,
        and keep only the Windows NVIDIA driver:

            winver
            wsl --set-version Ubuntu 2
    """
    wsl = facts["driver.wsl"]
    if not isinstance(wsl, dict):
        return None  # not WSL
    fix = FixRef(commands=("wsl -l -v   # in PowerShell: VERSION must be 2", "wsl --set-version <distribution> 2", "winver   # Windows 11, or Windows 10 21H2 (build 19044) or later"),
                 note=f"GPU compute in WSL needs WSL 2 on Windows 11 or Windows 10 21H2+, and the Windows NVIDIA driver only ({_WSL_GUIDE})")
    if wsl.get("version") == 1:
        build = wsl.get("windows_build")
        on = f" on Windows build {build}" if build else ""
        return Hit(f"this distribution runs on WSL 1{on} (kernel {wsl.get('kernel')}, {facts.source('driver.wsl')}), which has no GPU access: CUDA in WSL needs WSL 2",
                   evidence={"driver.wsl": wsl}, fix=fix)
    gpus = facts.get("gpus.list")
    if isinstance(gpus, list) and gpus:
        return None  # the GPU answers inside WSL: the build has GPU compute
    if wsl.get("version") is None:
        raise NotCheckable(f"the kernel release ({wsl.get('kernel') or 'not readable'}) does not say WSL 1 or WSL 2 (`uname -r`; `wsl -l -v` in PowerShell)")
    floor = _build_floor(kb)
    raise NotCheckable(f"the Windows build is not visible from inside WSL 2 and no GPU answered: `cmd.exe /c ver` must show build {floor} or later")


@rule("wsl-linux-driver-installed", needs=("driver.wsl", "driver.userspace_libs"))
def wsl_linux_driver_installed_here(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Finds a Linux NVIDIA driver installed inside a WSL 2 distribution, beside the Windows
        driver's /usr/lib/wsl/lib: its libcuda.so.535.104.05 / libnvidia-ml on the loader's
        paths or its nvidia-smi (/usr/bin/nvidia-smi); in a report also its packages (`apt
        install nvidia-driver-535`, dpkg's "ii libnvidia-compute-535"), NVIDIA's Linux .run
        installer, or the report saying so.

    Why is this bad?
        In WSL 2 the Windows driver is the driver: it maps its libcuda.so.1 and nvidia-smi into
        the distribution at /usr/lib/wsl/lib. NVIDIA: "Once a Windows NVIDIA GPU driver is
        installed on the system, CUDA becomes available within WSL 2 ... users must not install
        any NVIDIA GPU Linux driver within WSL 2" (CUDA on WSL User Guide). A Linux driver's
        libraries shadow those, and its nvidia-smi looks for a kernel module WSL does not have:
        the GPU stops working inside WSL.

    Example
        `sudo apt install nvidia-driver-535` inside WSL 2 Ubuntu: invalid. Only the Windows
        driver, and the WSL-Ubuntu toolkit package (cuda-toolkit-12-x, no driver): valid.

    Fix
        Remove the Linux driver inside WSL (the toolkit stays), then restart WSL:

            sudo apt-get remove --purge '^nvidia-.*' '^libnvidia-.*' cuda-drivers
            wsl --shutdown
    """
    wsl = facts["driver.wsl"]
    if not isinstance(wsl, dict) or wsl.get("version") == 1:
        return None  # not WSL, or WSL 1, which has no GPU at all: wsl-gpu-unsupported says so
    libs = [lib for lib in facts["driver.userspace_libs"] or []
            if isinstance(lib, dict) and not str(lib.get("path", "")).startswith(f"{wsl.get('lib_dir') or '/usr/lib/wsl/lib'}/")]
    smi = wsl.get("linux_nvidia_smi")
    if not libs and not smi:
        return None
    what = [f"{lib['path']} ({lib.get('version')})" for lib in libs] + ([f"{smi}"] if smi else [])
    return Hit(
        f"a Linux NVIDIA driver is installed inside WSL 2 ({', '.join(what)}) beside the Windows driver's {wsl.get('lib_dir')}: "
        "its libcuda and nvidia-smi shadow the Windows driver's and cannot reach the GPU",
        evidence={"driver.wsl": wsl, "driver.userspace_libs": libs},
        fix=_LINUX_DRIVER_FIX,
    )


RULES: tuple[Rule, ...] = (wsl_gpu_unsupported_here, wsl_linux_driver_installed_here)
REPORT_RULES: tuple[Rule, ...] = (wsl_gpu_unsupported, wsl_linux_driver_installed, torch_cpu_build_gpu_expected, windows_msvc_runtime_missing,
                                  windows_pagefile_too_small)
