"""The probes on this machine's real torch 2.14.1 venv: nvidia-cudnn-cu13 9.24.0.43 and
nvidia-nccl-cu13 2.30.7, cross-checked against what torch itself reports (imported in a
child process with a timeout; cuDNN and NCCL report their versions without a GPU)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import sys

import pytest

from fwdoctor import runner
from fwdoctor.engine import collect
from fwdoctor.host import Host
from fwdoctor.kb import KB
from fwdoctor.probes import cudnn, ldpath, nccl

CANDIDATES = (Path(sys.prefix), Path(__file__).resolve().parents[1] / ".venv", Path("/tmp/venv-torch"))


def torch_venv() -> Path | None:
    for venv in CANDIDATES:
        if (venv / "lib/python3.11/site-packages/nvidia/cudnn").is_dir() and (venv / "bin/python").exists():
            return venv
    return None


VENV = torch_venv()
pytestmark = pytest.mark.skipif(VENV is None, reason="no torch 2.14.1 venv with the cu13 wheels (make test-venv)")


@pytest.fixture(scope="module")
def live_facts():
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "LD_LIBRARY_PATH", "CONDA_PREFIX")}
    env["VIRTUAL_ENV"] = str(VENV)
    return collect(Host.live_host(env), (*ldpath.PROBES, *cudnn.PROBES, *nccl.PROBES))


def pip_install(facts, key):
    return [i for i in facts[key] if i["kind"] == "pip"]


def test_the_venv_holds_the_cudnn_wheel_torch_pins(live_facts):
    (install,) = pip_install(live_facts, "cudnn.installs")
    assert install["package"] == "nvidia-cudnn-cu13 9.24.0.43"
    assert (install["header_version"], install["library_version"], install["cuda_major"]) == ("9.24.0", "9", 13)


def test_the_venv_holds_the_nccl_wheel_with_its_embedded_version(live_facts):
    (install,) = pip_install(live_facts, "nccl.installs")
    assert install["package"] == "nvidia-nccl-cu13 2.30.7"
    assert (install["header_version"], install["library_version"], install["cuda_major"]) == ("2.30.7", "2.30.7", 13)


def test_the_probe_agrees_with_what_torch_reports(live_facts):
    script = "import torch; print(torch.backends.cudnn.version()); print('.'.join(map(str, torch.cuda.nccl.version())))"
    result = runner.run([str(VENV / "bin/python"), "-c", script], timeout=180)
    if not result.ok:
        pytest.skip(f"torch could not report its libraries here: {result.describe_failure()}")
    cudnn_code, nccl_version = result.stdout.split()[-2:]
    libs = KB().libs
    (cudnn_install,) = pip_install(live_facts, "cudnn.installs")
    (nccl_install,) = pip_install(live_facts, "nccl.installs")
    assert libs.version_from_code("cudnn", int(cudnn_code)) == cudnn_install["header_version"]
    assert nccl_version == nccl_install["library_version"]


def test_the_live_check_finds_no_cudnn_or_nccl_problem_in_a_clean_venv(cli):
    # click's runner overlays these on os.environ for the call; None unsets a variable.
    env = {"VIRTUAL_ENV": str(VENV), "PATH": f"{VENV}/bin:{os.environ.get('PATH', '')}",
           "LD_PRELOAD": None, "LD_LIBRARY_PATH": None, "CONDA_PREFIX": None}
    only = [arg for fid in ("cudnn-cuda-mismatch", "cudnn-shadowed", "nccl-cuda-mismatch", "nccl-shadowed") for arg in ("--only", fid)]
    result = cli("check", "--json", *only, env=env)
    report = json.loads(result.output)
    assert [f["id"] for f in report["findings"] if f["area"] in ("cudnn", "nccl")] == []
    assert report["facts"]["cudnn.installs"]["value"][0]["package"] == "nvidia-cudnn-cu13 9.24.0.43"


@pytest.mark.slow
def test_torchs_rpath_beats_ld_library_path_but_not_ld_preload(tmp_path):
    """Backs the severities of cudnn-shadowed: through LD_LIBRARY_PATH a pip torch still
    maps its own libcudnn (warning); through LD_PRELOAD the other file wins (error)."""
    gcc = runner.run(["gcc", "-shared", "-fPIC", "-o", str(tmp_path / "libcudnn.so.9"), "-Wl,-soname,libcudnn.so.9", "-x", "c", "-"],
                     input_text="int fwdoctor_stand_in(void) { return 1; }\n", timeout=60)
    if not gcc.ok:
        pytest.skip(f"no C compiler to build a stand-in library: {gcc.describe_failure()}")
    script = ("import torch\n"
              "print(sorted({l.split()[-1] for l in open('/proc/self/maps') if 'libcudnn.so' in l}))\n")
    base = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "LD_LIBRARY_PATH")}
    via_path = runner.run([str(VENV / "bin/python"), "-c", script], timeout=180, env={**base, "LD_LIBRARY_PATH": str(tmp_path)})
    assert via_path.ok, via_path.describe_failure()
    assert "nvidia/cudnn/lib/libcudnn.so.9" in via_path.stdout and str(tmp_path) not in via_path.stdout
    via_preload = runner.run([str(VENV / "bin/python"), "-c", script], timeout=180, env={**base, "LD_PRELOAD": str(tmp_path / "libcudnn.so.9")})
    assert not via_preload.ok and "undefined symbol" in via_preload.stderr
