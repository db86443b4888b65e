"""xla-libdevice-missing (FWD912): a GPU build of JAX or TensorFlow whose XLA finds no CUDA
libdevice (nvvm/libdevice/libdevice.10.bc) in the folders it searches.

`check` judges the frameworks.libdevice fact on fixture roots (tests/data/frameworks/make_roots.py
builds tests/roots/frameworks-jax-local-no-cuda: jax[cuda13-local] with no CUDA toolkit);
`triage` reads XLA's own messages (doctor/kb/errors.yaml rows xla-libdevice-*), quoted from the
public threads named above each text, as printed and as pasting mangles them."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import ROOTS, finding_ids
from fwdoctor.probes.frameworks import libdevice_roots, xla_data_dir
from triage_helpers import findings

pytestmark = pytest.mark.usefixtures("use_test_kb")
ID = "xla-libdevice-missing"
NO_CUDA = "frameworks-jax-local-no-cuda"


def check(cli, root, env_extra: str = ""):
    env = root / "fixture.env"
    if env_extra:
        env = root / "with-extra.env"
        env.write_text((root / "fixture.env").read_text() + env_extra)
    result = cli("check", "--root", str(root), "--env-file", str(env), "--json")
    return json.loads(result.output)


def by_id(report: dict) -> dict:
    return {f["id"]: f for f in report["findings"]}


def copy_root(tmp_path, name: str = NO_CUDA):
    root = tmp_path / name
    shutil.copytree(ROOTS / name, root, symlinks=True)
    return root


def put(root, path: str) -> None:
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("stand-in for CUDA's libdevice bitcode\n")


# ------------------------------------------------------------------------------ check
def test_jax_cuda13_local_with_no_cuda_toolkit_has_no_libdevice(cli):
    report = check(cli, ROOTS / NO_CUDA)
    hit = by_id(report)[ID]
    assert hit["severity"] == "error"
    assert "no nvvm/libdevice/libdevice.10.bc" in hit["message"] and "JAX 0.10.2" in hit["message"]
    assert "/opt/venv/lib/python3.11/site-packages/nvidia/cu13" in hit["evidence"]["searched"]
    assert "/usr/local/cuda" in hit["evidence"]["searched"]
    assert any("nvidia-cuda-nvcc nvidia-nvvm" in c for c in hit["fix"]["commands"])


@pytest.mark.parametrize("root", ["frameworks-jax", "frameworks-tf", "frameworks-torch-jax", "frameworks-jax-driver-old"])
def test_the_wheels_libdevice_clears_it(cli, root):
    assert ID not in finding_ids(check(cli, ROOTS / root))


def test_a_libdevice_under_usr_local_cuda_clears_it(cli, tmp_path):
    root = copy_root(tmp_path)
    put(root, "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc")
    assert ID not in finding_ids(check(cli, root))


def test_a_versioned_toolkit_xla_does_not_search_is_named_in_the_fix_and_xla_flags_clears_it(cli, tmp_path):
    root = copy_root(tmp_path)
    put(root, "/usr/local/cuda-13.0/nvvm/libdevice/libdevice.10.bc")
    hit = by_id(check(cli, root))[ID]
    assert hit["fix"]["commands"] == ["export XLA_FLAGS=--xla_gpu_cuda_data_dir=/usr/local/cuda-13.0"]
    assert ID not in finding_ids(check(cli, root, "XLA_FLAGS=--xla_gpu_cuda_data_dir=/usr/local/cuda-13.0\n"))


def test_an_xla_flags_data_dir_without_nvvm_is_named(cli, tmp_path):
    root = copy_root(tmp_path)
    hit = by_id(check(cli, root, "XLA_FLAGS=--xla_gpu_cuda_data_dir=/opt/venv/lib\n"))[ID]
    assert hit["evidence"]["xla_flags_data_dir"] == "/opt/venv/lib"
    assert "XLA_FLAGS points at /opt/venv/lib" in hit["fix"]["note"]


def test_conda_cudatoolkits_flat_libdevice_gets_the_copy_and_the_data_dir(cli, tmp_path):
    root = copy_root(tmp_path)
    put(root, "/opt/venv/lib/libdevice.10.bc")  # where conda's cudatoolkit 11.x puts it
    hit = by_id(check(cli, root))[ID]
    assert hit["fix"]["commands"] == ["mkdir -p /opt/venv/lib/nvvm/libdevice", "cp /opt/venv/lib/libdevice.10.bc /opt/venv/lib/nvvm/libdevice/",
                                      "export XLA_FLAGS=--xla_gpu_cuda_data_dir=/opt/venv/lib"]


def test_a_libdevice_in_the_env_prefix_is_counted(cli, tmp_path):
    root = copy_root(tmp_path)
    put(root, "/opt/venv/nvvm/libdevice/libdevice.10.bc")  # conda's cuda-nvvm: $PREFIX/nvvm/libdevice
    assert ID not in finding_ids(check(cli, root))


def test_the_data_dir_is_read_from_xla_flags_last_one_winning():
    assert xla_data_dir("--xla_gpu_cuda_data_dir=/a --xla_gpu_enable_triton_gemm=false --xla_gpu_cuda_data_dir='/b'") == "/b"
    assert xla_data_dir("--xla_gpu_force_compilation_parallelism=1") is None
    assert xla_data_dir(None) is None


def test_the_roots_follow_xlas_order_data_dir_first():
    roots = [r for r, _ in libdevice_roots({"XLA_FLAGS": "--xla_gpu_cuda_data_dir=/x/"}, ["/e/lib/python3.11/site-packages"], ["/e"], ["tensorflow"])]
    assert roots[0] == "/x"
    assert roots[1:3] == ["/e/lib/python3.11/site-packages/nvidia/cu13", "/e/lib/python3.11/site-packages/nvidia/cuda_nvcc"]
    assert roots.index("/usr/local/cuda") < roots.index("/e")
    assert not any("jaxlib" in r for r in roots)


# ------------------------------------------------------------------------------ triage
# https://github.com/talmolab/sleap/pull/1485 (TensorFlow from pip)
SLEAP = ("2023-09-14 08:17:07.669125: W tensorflow/compiler/xla/service/gpu/llvm_gpu_backend/gpu_backend_lib.cc:326] "
         "libdevice is required by this HLO module but was not found at ./libdevice.10.bc\n"
         "2023-09-14 08:17:07.669298: W tensorflow/core/framework/op_kernel.cc:1830] OP_REQUIRES failed at xla_ops.cc:446 : "
         "INTERNAL: libdevice not found at ./libdevice.10.bc\n")
# https://github.com/tensorflow/tensorflow/issues/58859 (TensorFlow 2.11)
TF_58859 = ("2022-12-12 09:21:38.279776: W tensorflow/compiler/xla/service/gpu/nvptx_helper.cc:56] Can't find libdevice directory "
            "${CUDA_DIR}/nvvm/libdevice. This may result in compilation or runtime failures, if the program we try to run uses routines from libdevice.\n")
# https://github.com/conda-forge/jaxlib-feedstock/pull/288 (conda-forge jaxlib)
JAXLIB_288 = "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: libdevice not found at ./libdevice.10.bc\n"
# https://github.com/EnzymeAD/Enzyme-JAX/pull/1335 (XLA 2025)
ENZYME = ("2025-08-22 15:12:10.945844: W external/xla/xla/service/gpu/llvm_gpu_backend/nvptx_backend.cc:110] "
          "libdevice is required by this HLO module but was not found at ./libdevice.10.bc\n")


def _mangled(text: str) -> list[str]:
    """As printed; in a markdown quote; in a fence; CRLF; coloured; wrapped by a terminal at 80
    columns; behind a log prefix with another timestamp."""
    quoted = "".join(f"> {line}\n" for line in text.splitlines())
    fenced = "```\n" + text + "```\n"
    wrapped = "".join(line[i:i + 80] + "\n" for line in text.splitlines() for i in range(0, len(line), 80))
    stamped = "".join(f"[2026-01-01T00:00:00.000Z] {line}\n" for line in text.splitlines())
    return [text, quoted, fenced, text.replace("\n", "\r\n"), "\x1b[31m" + text.rstrip("\n") + "\x1b[0m\n", wrapped, stamped]


@pytest.mark.parametrize("text", [m for t in (SLEAP, TF_58859, JAXLIB_288, ENZYME) for m in _mangled(t)])
def test_xlas_libdevice_messages_raise_it_however_pasted(cli, tmp_path, text):
    found = findings(cli, tmp_path, text)
    assert found[ID]["severity"] == "error"
    assert "report line" in found[ID]["message"]


@pytest.mark.parametrize("text", [
    # XLA's VLOG when it did find libdevice (xla/service/gpu/llvm_gpu_backend/default/nvptx_libdevice_path.cc)
    "I0000 00:00:1700000000.000000 1 nvptx_libdevice_path.cc:40] Found libdevice dir /usr/local/cuda/nvvm/libdevice\n",
    # nvcc's own libdevice errors while building CUDA code (cbuchner1/CudaMiner#53, negativo17/cuda#9): no XLA involved
    "nvcc fatal   : Path to libdevice library not specified\n",
    "error in open: /usr/bin/../nvvm/libdevice/libdevice.10.bc\n",
    # codon's GPU backend (exaloop/codon#400)
    "libdevice.10.bc: error: Could not open input file: No such file or directory\n",
    # the fix, written down in prose
    "I set XLA_FLAGS=--xla_gpu_cuda_data_dir=$CONDA_PREFIX and now libdevice.10.bc is found under nvvm/libdevice.\n",
])
def test_look_alike_texts_do_not_raise_it(cli, tmp_path, text):
    assert ID not in findings(cli, tmp_path, text)
