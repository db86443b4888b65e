"""fwdoctor.libraries, the one description of cuDNN and NCCL: file names, headers, wheels,
packages and version codes on real examples; the KB's formula rows and the scripts that run
in a foreign interpreter (probes/torch_child.py, recipes/scripts/verify_torch.py) agree with it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import given, strategies as st

from conftest import DATA, TEST_KB_DIR
from fwdoctor import libraries
from fwdoctor.kb import KB, KBError
from fwdoctor.libraries import CUDNN, NCCL, LIBRARIES
from fwdoctor.probes import torch_child, torch_deep
from fwdoctor.recipes.scripts import FOLDER as SCRIPTS

LIBS = DATA / "libs"


def _header_macros(text: str) -> dict[str, str]:
    return dict(re.findall(r"^#define (\w+) (.+?)\s*$", text, re.M))


def test_the_packed_versions_are_what_the_real_headers_compute():
    # cudnn_version.h states its formula over its own macros: (MAJOR * F1 + MINOR * F2 + PATCHLEVEL).
    for name, version in (("cudnn_version-9.24.0.h", "9.24.0"), ("cudnn_version-8.9.3-excerpt.h", "8.9.3")):
        macros = _header_macros((LIBS / name).read_text())
        major, minor, patch = (int(macros[m]) for m in CUDNN.version_macros)
        formula = re.fullmatch(r"\(CUDNN_MAJOR \* (\d+) \+ CUDNN_MINOR \* (\d+) \+ CUDNN_PATCHLEVEL\)", macros[CUDNN.code_macro])
        assert formula, name
        assert CUDNN.version_code.encode(version) == major * int(formula[1]) + minor * int(formula[2]) + patch, name
    nccl_h = (LIBS / "nccl-2.30.7.h").read_text()
    assert NCCL.version_code.encode("2.30.7") == int(_header_macros(nccl_h)[NCCL.code_macro]) == 23007
    # NCCL_VERSION(X,Y,Z): (X <= 2 && Y <= 8) ? X*1000 + Y*100 + Z : X*10000 + Y*100 + Z
    assert NCCL.version_code.encode("2.8.4") == 2804 and NCCL.version_code.encode("2.9.6") == 20906


def test_torch_reports_cudnn_as_the_packed_integer():
    # torch.backends.cudnn.version() of torch 2.14.1 with nvidia-cudnn-cu13 9.24.0.43
    assert CUDNN.version_code.decode(92400) == "9.24.0"
    assert CUDNN.version_code.decode(8903) == "8.9.3"
    assert NCCL.version_code.decode(2804) == "2.8.4"
    assert CUDNN.version_code.decode(7) is None


@given(st.sampled_from(LIBRARIES), st.integers(1, 30), st.integers(0, 99), st.integers(0, 99))
def test_every_release_code_decodes_back_to_its_version(lib, major, minor, patch):
    code = lib.version_code
    if major <= code.old_if_major_at_most and minor <= code.old_if_minor_at_most and minor > 9:
        return  # MINOR*100 would spill into the major: no cuDNN <= 8 release had a minor above 9
    assert code.decode(code.encode(f"{major}.{minor}.{patch}")) == f"{major}.{minor}.{patch}"


def test_library_files_sub_libraries_and_sonames():
    assert CUDNN.is_library_file("libcudnn.so.9") and CUDNN.is_library_file("libcudnn.so")
    assert not CUDNN.is_library_file("libcudnn_ops.so.9") and not CUDNN.is_library_file("libcudnn.a")
    assert CUDNN.owns_file("libcudnn_ops.so.9") and CUDNN.owns_file("libcudnn.so.9") and not NCCL.owns_file("libcudnn.so.9")
    assert CUDNN.file_version("libcudnn.so.9.1.0") == "9.1.0" and CUDNN.file_version("libcudnn_ops.so.9") is None
    assert NCCL.file_version("libnccl.so.2") == "2" and NCCL.file_version("libnccl.so.2.x") is None
    assert CUDNN.soname_file("9.24.0.43") == "libcudnn.so.9" and NCCL.soname_file("2.30.7") == "libnccl.so.2"


def test_wheels_their_folder_and_dist_info_in_any_spelling():
    assert CUDNN.wheel_for(12) == "nvidia-cudnn-cu12" and CUDNN.pip_dir == "nvidia/cudnn"
    assert libraries.library_of_wheel("nvidia_nccl_cu13") is NCCL and libraries.library_of_wheel("nvidia-cublas-cu12") is None
    assert libraries.pip_cuda_major("nvidia_cudnn_cu13") == 13 and libraries.pip_cuda_major("nvidia-cudnn") is None
    assert CUDNN.dist_re.match("nvidia_cudnn_cu13-9.24.0.43.dist-info").groups() == ("nvidia_cudnn_cu13", "9.24.0.43")
    assert NCCL.dist_re.match("nvidia_cudnn_cu13-9.24.0.43.dist-info") is None
    assert libraries.library("nccl") is NCCL
    with pytest.raises(KeyError, match="cudnn, nccl"):
        libraries.library("cublas")


def test_debian_package_names_and_their_cuda_major():
    assert CUDNN.deb_packages.match("libcudnn9-cuda-12") and not CUDNN.deb_packages.match("libcudnn9-dev-cuda-12")
    assert NCCL.deb_packages.match("libnccl2") and not NCCL.deb_packages.match("libnccl-dev")
    assert libraries.deb_cuda_major("libcudnn9-cuda-12", "9.1.0.70-1") == 12
    assert libraries.deb_cuda_major("libnccl2", "2.21.5-1+cuda12.4") == 12
    assert libraries.deb_package_for_cuda("libcudnn9-cuda-12", 13) == "libcudnn9-cuda-13"
    assert libraries.deb_package_for_cuda("libnccl2", 13) == "libnccl2"


def test_headers_are_read_with_the_described_macros():
    assert CUDNN.parse_header((LIBS / "cudnn_version-9.24.0.h").read_text()) == "9.24.0"
    assert NCCL.parse_header((LIBS / "nccl-2.30.7.h").read_text()) == "2.30.7"
    assert NCCL.parse_header((LIBS / "cudnn_version-9.24.0.h").read_text()) is None
    assert CUDNN.parse_header("#define CUDNN_MAJOR 8\n#define CUDNN_MINOR 9\n") == "8.9.0"


def test_the_kb_formula_rows_are_the_described_formulas(test_kb):
    for lib in LIBRARIES:
        assert test_kb.libs.version_codes[lib.name] == lib.version_code


def test_a_kb_formula_row_that_disagrees_is_refused(tmp_path: Path):
    shutil.copytree(TEST_KB_DIR, tmp_path / "kb", ignore=shutil.ignore_patterns("*.md"))
    path = tmp_path / "kb" / "libs.yaml"
    data = yaml.safe_load(path.read_text())
    data["version_codes"]["cudnn"]["major_factor"] = 1000
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(KBError, match=r"libs\.yaml: version_codes\.cudnn: disagrees with fwdoctor\.libraries"):
        KB(tmp_path / "kb").libs


def test_the_torch_child_names_the_described_sonames():
    # torch_child.py runs in the inspected interpreter and cannot import fwdoctor.
    for lib in LIBRARIES:
        assert lib.soname in torch_child.LIB_WORDS
        assert any(lib.owns_file(word) for word in torch_child.LIB_WORDS)


def test_the_deep_probe_reads_the_childs_raw_versions_with_the_description():
    # torch >= 1.12 gives a tuple (joined by the child); older torch gave NCCL_VERSION_CODE.
    assert torch_deep.to_fact_value({"nccl_version": "2.30.7"})["nccl_version"] == "2.30.7"
    assert torch_deep.to_fact_value({"nccl_version": "2708"})["nccl_version"] == "2.7.8"
    deep = torch_deep.to_fact_value({"cudnn_version": 92400})
    assert CUDNN.version_code.decode(deep["cudnn_version"]) == "9.24.0"


# A stand-in for torch with only what verify_torch.py reads, reporting the cuDNN code it is given.
_STUB_TORCH = """import os
from types import SimpleNamespace
__version__ = "0.0+stub"
version = SimpleNamespace(cuda="13.0")
backends = SimpleNamespace(cudnn=SimpleNamespace(version=lambda: int(os.environ["STUB_CUDNN_CODE"])))
cuda = SimpleNamespace(is_available=lambda: False)
_C = SimpleNamespace(_cuda_getArchFlags=lambda: "sm_90")
"""


def _verify_cudnn(tmp_path: Path, requested: str, code: int) -> tuple[int, list[str]]:
    stub = tmp_path / "stub"
    (stub / "torch").mkdir(parents=True, exist_ok=True)
    (stub / "torch" / "__init__.py").write_text(_STUB_TORCH)
    env = {**os.environ, "PYTHONPATH": str(stub), "STUB_CUDNN_CODE": str(code)}
    res = subprocess.run([sys.executable, str(SCRIPTS / "verify_torch.py"), "--cuda", "13.0", "--cudnn", requested, "--arch", "9.0"],
                         capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert res.returncode in (0, 1), res.stderr
    return res.returncode, json.loads(res.stdout)["problems"]


def test_the_proof_script_packs_cudnn_versions_as_described(tmp_path: Path):
    # verify_torch.py runs in the built torch's interpreter and cannot import fwdoctor, so it
    # writes the cuDNN formula again; the real headers state the code each release reports.
    for name, wheel_version in (("cudnn_version-9.24.0.h", "9.24.0.43"), ("cudnn_version-8.9.3-excerpt.h", "8.9.3.28")):
        macros = _header_macros((LIBS / name).read_text())
        major, minor, patch = (int(macros[m]) for m in CUDNN.version_macros)
        formula = re.fullmatch(r"\(CUDNN_MAJOR \* (\d+) \+ CUDNN_MINOR \* (\d+) \+ CUDNN_PATCHLEVEL\)", macros[CUDNN.code_macro])
        assert formula, name
        code = major * int(formula[1]) + minor * int(formula[2]) + patch
        assert CUDNN.version_code.encode(wheel_version) == code, name
        for requested in (f"{major}.{minor}.{patch}", wheel_version):
            assert _verify_cudnn(tmp_path, requested, code) == (0, []), requested
        # A torch reporting another release's code is named, with the code the script wanted.
        returncode, problems = _verify_cudnn(tmp_path, wheel_version, code + 1)
        assert returncode == 1 and any(p.endswith(f"wanted {code} ({wheel_version})") for p in problems), problems
