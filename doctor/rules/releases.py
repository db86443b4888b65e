"""Releases with a known bug, fixed in a later release: nccl-release-known-bug and
driver-release-known-bug (issue 26). The rows are doctor/kb/libs.yaml `nccl_bugs` (those with
`symptoms`) and doctor/kb/cuda.yaml `driver_bugs`: an affected range (PEP 440), the first fixed
release, and the doctor/kb/errors.yaml row ids of what users see.

A release in an affected range is a warning (on a live host, and in a report that shows the
release alone); it is an error only where a report also shows the row's symptom, since the
symptom texts ("Cuda failure 'invalid argument'") have other causes on other releases.
Versions are compared with packaging only. Pure: facts and KB in, hits out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

from fwdoctor.model import Facts, FixRef, Severity
from fwdoctor.rules.base import Hit, NotCheckable, Rule, report_errors, report_line, rule, sh
from fwdoctor.versions import release

if TYPE_CHECKING:
    from fwdoctor.kb import KB
    from fwdoctor.kb.cuda import DriverBug
    from fwdoctor.kb.libs import NcclBug

# Where a NCCL release is seen, most direct first: the banner of a run (what was loaded), the
# torch child's torch.cuda.nccl.version(), NVIDIA's NCCL wheels listed, the pip wheels a live
# probe found, the NCCL the KB knows torch's wheel pins, the other installs a live probe found.
NCCL_FACTS = ("nccl.loaded", "torch.deep", "nccl.wheels", "torch.version", "nccl.installs")


def _symptoms(facts: Facts, kinds: Iterable[str]) -> list[dict[str, Any]]:
    said = report_errors(facts, *kinds)
    # NCCL's NVLS transport's own "Cuda failure 'invalid argument'" is a fabric manager fault
    # (nccl-nvls-failed), not a release bug.
    return [e for e in said if "nvls.cc" not in str(e.get("text", ""))]


def nccl_releases(facts: Facts, kb: KB) -> list[tuple[str, str, str | None]]:
    """(version, where it was seen, pip package or None) of the NCCL in use, from the most direct
    fact that names one (NCCL_FACTS); [] when none does."""
    loaded = facts.get("nccl.loaded")
    if isinstance(loaded, dict):
        seen = [e for e in loaded.get("versions") or [] if isinstance(e, dict) and e.get("version")]
        if seen:
            return [(str(e["version"]), f"NCCL's own banner (report line {e.get('line')})", None) for e in seen]
        if loaded.get("version"):
            return [(str(loaded["version"]), "NCCL's own banner", None)]
    deep = facts.get("torch.deep")
    if isinstance(deep, dict) and deep.get("nccl_version"):
        return [(str(deep["nccl_version"]), "torch.cuda.nccl.version()", None)]
    wheels = [w for w in facts.get("nccl.wheels") or [] if isinstance(w, dict) and w.get("version")]
    if wheels:
        return [(str(w["version"]), f"{w.get('package')} (report line {w.get('line')})", str(w.get("package") or "") or None) for w in wheels]
    from fwdoctor.rules.libs import install_version  # the same reading as the other NCCL rules

    installed = []
    for inst in facts.get("nccl.installs") or []:
        version = install_version(inst) if isinstance(inst, dict) else None
        if len(release(version) or ()) >= 3:  # a whole NCCL release (2.18.1), not a bare soname major
            where = str(inst.get("library") or inst.get("prefix") or "an NCCL install")
            pip = inst.get("kind") == "pip"
            installed.append((pip, (version, where, (str(inst.get("package") or "") or None) if pip else None)))
    # an installed pip wheel is what torch loads (a user may have upgraded it past torch's pin)
    if any(pip for pip, _ in installed):
        return [row for pip, row in installed if pip]
    torch_version = facts.get("torch.version")
    if isinstance(torch_version, str) and torch_version:
        variant = kb.torch.variant_for(torch_version)
        if variant is not None and variant.nccl:
            return [(variant.nccl, f"the NCCL torch {torch_version}'s wheel pins (doctor/kb/torch.yaml)", None)]
    return [row for _, row in installed]


@rule("nccl-release-known-bug", optional=(*NCCL_FACTS, "report.errors"))
def nccl_release_known_bug(facts: Facts, kb: KB) -> list[Hit] | None:
    """What it does
        Looks up the NCCL release in use (NCCL's "NCCL version 2.18.1+cuda12.1" banner, or the one
        torch appends to its errors; torch.cuda.nccl.version() on a live host; the
        nvidia-nccl-cu12 wheel listed; the NCCL torch's wheel pins, from the KB; the installed
        libnccl) in the NCCL bugs of doctor/kb/libs.yaml that name a symptom (`nccl_bugs` rows
        with `symptoms`). An error where a report also shows that symptom; a warning on the
        release alone.

    Why is this bad?
        Some NCCL releases fail in a way no setting explains, and only a later release fixes it:
        2.18.1 to 2.18.5 and 2.19.1 read a device pointer before the copy that fetched it had
        completed, and fail with "Cuda failure 'invalid argument'" where CUDA IPC buffers are
        registered (vLLM's custom all-reduce; NVIDIA/nccl#957, fixed in 2.18.6 and 2.19.3);
        2.20.3 binds its proxy's UNIX-domain socket twice under ncclCommSplit (FSDP) and fails
        with "UDS: Binding to socket ... Address already in use" (NVIDIA/nccl#1185, fixed in
        2.20.5). The same texts on another release have other causes.

    Example
            torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1333, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.18.1
            ncclUnhandledCudaError: Call to CUDA function failed.
            Last error:
            Cuda failure 'invalid argument'

    Fix
        Install the fixed NCCL release the finding names, or a later one: the nvidia-nccl-cu12/cu13
        wheel (`pip install -U nvidia-nccl-cu12`; torch loads the wheel beside it), or a torch
        release that pins a fixed NCCL.
    """
    seen = nccl_releases(facts, kb)
    if not seen:
        if facts.known("nccl.installs") and not facts.get("nccl.installs"):
            return None  # no NCCL on this host
        raise NotCheckable("no NCCL release known (no NCCL banner, torch.cuda.nccl.version(), nvidia-nccl wheel or libnccl install)")
    hits: list[Hit] = []
    done: set[tuple[str, str]] = set()
    for version, where, package in seen:
        for bug in kb.libs.nccl_release_bugs(version):
            if (bug.id, version) in done:
                continue
            done.add((bug.id, version))
            hits.append(_nccl_hit(facts, bug, version, where, package))
    return hits or None


def _nccl_hit(facts: Facts, bug: NcclBug, version: str, where: str, package: str | None) -> Hit:
    said = _symptoms(facts, bug.symptoms)
    message = (f"NCCL {version} ({where}) has a known bug, fixed in NCCL {bug.fixed} (affected: {bug.affected}): {bug.summary}")
    if said:
        message += f"; the report shows it: {report_line(said[0])}"
    commands = [f"pip install -U {sh(package, 'a package name')}   # or a torch release that pins a fixed NCCL"] if package else []
    commands.append("python -c 'import torch; print(torch.cuda.nccl.version())'   # the NCCL torch loads")
    return Hit(
        message,
        evidence={"nccl.version": version, "seen_in": where, "bug": bug.to_json(), "kb_source": list(bug.source), "report.errors": said or None},
        fix=FixRef(commands=tuple(commands), note=f"install NCCL {bug.fixed} or a later release outside {bug.affected}"),
        severity=None if said else Severity.WARNING,
    )


@rule("driver-release-known-bug", needs=("driver.version",), optional=("report.errors",))
def driver_release_known_bug(facts: Facts, kb: KB) -> list[Hit] | None:
    """What it does
        Looks up the loaded NVIDIA driver's release (nvidia-smi, /proc/driver/nvidia/version,
        collect_env's "Nvidia driver version") in doctor/kb/cuda.yaml `driver_bugs`: releases with
        a known bug fixed in a later release, each with what users see. An error where a report
        also shows that symptom; a warning on the release alone.

    Why is this bad?
        The driver's own libraries carry the bug, so no environment change fixes it: the 535
        drivers from 535.43 to 535.98 changed, then removed, libnvidia-ml's process-info v3
        functions without a version bump (NVIDIA on gpuopenanalytics/pynvml#48: "an inadvertent
        ABI break in the 535 driver"), so pynvml, nvitop and gpustat read wrong process rows or
        fail with NVMLError_FunctionNotFound until 535.104.05.

    Example
            | NVIDIA-SMI 535.98         Driver Version: 535.98         CUDA Version: 12.2     |
            pynvml.nvml.NVMLError_FunctionNotFound: Function Not Found

    Fix
        Install the fixed driver release the finding names or a later one of the same branch
        (the distribution's or NVIDIA's driver packages), then reboot.
    """
    version = str(facts["driver.version"])
    bugs = kb.cuda.driver_release_bugs(version)
    if not bugs:
        return None
    return [_driver_hit(facts, bug, version) for bug in bugs]


def _driver_hit(facts: Facts, bug: DriverBug, version: str) -> Hit:
    said = _symptoms(facts, bug.symptoms)
    message = (f"NVIDIA driver {version} ({facts.source('driver.version')}) has a known bug, fixed in {bug.fixed} "
               f"(affected: {bug.affected}): {bug.summary}")
    if said:
        message += f"; the report shows it: {report_line(said[0])}"
    return Hit(
        message,
        evidence={"driver.version": version, "bug": {"id": bug.id, "affected": str(bug.affected), "fixed": bug.fixed},
                  "kb_source": list(bug.source), "report.errors": said or None},
        fix=FixRef(commands=("nvidia-smi --query-gpu=driver_version --format=csv,noheader",),
                   note=f"install NVIDIA driver {bug.fixed} or a later release of the branch, then reboot"),
        severity=None if said else Severity.WARNING,
    )


RULES: tuple[Rule, ...] = (nccl_release_known_bug, driver_release_known_bug)
