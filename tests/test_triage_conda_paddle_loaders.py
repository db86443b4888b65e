"""Issue 26, conda and paddle (batch 43's development reports): three classes triage missed.

1. libmamba's "__cuda ..., which is missing on the system" quoted without its tree ("└─") or
   with its requirer on the same line: the solver still says no __cuda was there
   (conda-cuda-pin-conflict). Under an option's "would require" it is not read.
2. The loader's "libstdc++.so.6: version `GLIBCXX_3.4.32' not found" with the folder cut by
   the reporter ("…/libstdc++.so.6", a bare "libstdc++.so.6") in a report that runs in a conda
   env (`conda activate NAME`): the env's python loads its env's lib/ first
   (conda-libstdcxx-too-old); and conda folders named as installers and pyenv name them
   ("anaconda2", "anaconda3-2023.03"). A /lib64 path, or a cut path with no conda env, is not.
3. Paddle's dynload messages: "Cannot load cudnn shared library. Cannot invoke method
   cudnnGetVersion" (Paddle 1.x and 2.x) and "Can not find library: libcudnn.so"
   (cuda-lib-not-found). TensorRT's libnvinfer and ROCm's miopen are not.

Every text is quoted from a public thread and read also as pasting mangles it."""

from __future__ import annotations

import pytest

from fwdoctor.triage import triage
from tests.pasting import as_pasted
from tests.triage_run import cli_findings as findings

pytestmark = pytest.mark.usefixtures("use_test_kb")


def errors(cli, tmp_path, text: str) -> set[str]:
    return {k for k, f in findings(cli, tmp_path, text).items() if f["severity"] == "error"}


# ----------------------------------------------------------------------------- 1. __cuda missing, no tree
CUDA_MISSING_NO_TREE = [
    # conda-forge/pytorch-cpu-feedstock#364 (micromamba on a cluster's login node; a development-part report)
    ("- I am trying to install pytorch with CUDA supports on the login node of our cluster (without any GPUs) using "
     "`micromamba install -c conda-forge pytorch \"libtorch=*=cuda12*\"`, where I encounter a huge trace, but my hunch for the "
     "most important error raised while solving the installation is this tiny line `__cuda =* *, which is missing on the system;` "
     "(would be happy to share the entire trace)\n", None),
    # a setup script's note on the same solver error (public repository file, found by the code index)
    ("# note: if you have encountered the error: *** is not installable because it requires __cuda, which is missing on the system,\n"
     "#   then you can refer to the work-around at\n", None),
    # the libmamba 1 sentence with its requirer on one line (the glyphs lost in a paste)
    ("pytorch =2.5.1 cuda120* is not installable because it requires __cuda =* *, which is missing on the system.\n", "pytorch"),
]


@pytest.mark.parametrize("text, package", CUDA_MISSING_NO_TREE)
def test_cuda_missing_on_the_system_quoted_without_the_tree_is_a_solve_without_a_driver(cli, tmp_path, text, package):
    for form in as_pasted(text):
        facts, _ = triage(form)
        need = facts["conda.cuda_conflict"]["requires"][0]
        assert (need["package"], need["missing"]) == (package, True), form
        assert "conda-cuda-pin-conflict" in errors(cli, tmp_path, form), form


CUDA_MISSING_LOOKALIKES = [
    # an option's "would require" with the tree's glyphs lost: one way out of several
    ("└─ libhwloc 2.12.1**  is installable with the potential options\n"
     "   libhwloc 2.12.1 would require\n"
     "      __cuda, which is missing on the system;\n"),
    # trianglesplatting2/triangle-splatting2#9: another virtual package
    "to be looking for (__win =* *, which is missing on the system.)\n",
    # a package whose name ends in __cuda is not the virtual package
    "foo__cuda, which is missing on the system\n",
]


@pytest.mark.parametrize("text", CUDA_MISSING_LOOKALIKES)
def test_options_and_other_names_without_the_tree_are_not_a_missing_cuda(cli, tmp_path, text):
    for form in as_pasted(text):
        facts, _ = triage(form)
        assert "conda.cuda_conflict" not in facts, form
        assert "conda-cuda-pin-conflict" not in errors(cli, tmp_path, form), form


# ----------------------------------------------------------------------------- 2. conda's libstdc++
CONDA_LIBSTDCXX = [
    # FFTAI/Wiki-GRx-Gym#6 (a development-part report): the path cut with "…", `conda activate` in the steps
    ("```text\nImportError: …/libstdc++.so.6: version `GLIBCXX_3.4.32' not found (required by …/gymtorch.so)\n```\n\n"
     "   ```bash\n   conda activate wiki-grx-gym\n   python train.py --task=N1 --headless\n   ```\n"),
    # YOUNG-bit/OpenGS-Fusion#1: the title's bare libstdc++ (the fix relinks ${CONDA_PREFIX}/lib/libstdc++.so.6)
    ("Issue1.0 libstdc++.so.6: version GLIBCXX_3.4.30' not found (required by /usr/local/lib/libpcl_common.so.1.14)\n\n"
     "First activate your target environment:\n```bash\nconda activate opengsfusion\n```\n"),
    # BVLC/caffe#4953 (fixed by `conda install libgcc`): anaconda2, not a name the old list held
    "ImportError: /home/../anaconda2/lib/python2.7/site-packages/zmq/backend/cython/../../../../.././libstdc++.so.6: version `GLIBCXX_3.4.21' not found (required by ../python/caffe/_caffe.so)\n",
]


@pytest.mark.parametrize("text", CONDA_LIBSTDCXX)
def test_glibcxx_missing_from_a_conda_envs_cut_or_named_libstdcxx_is_conda_libstdcxx_too_old(cli, tmp_path, text):
    for form in as_pasted(text):
        assert "conda-libstdcxx-too-old" in errors(cli, tmp_path, form), form


LIBSTDCXX_LOOKALIKES = [
    # mxfold/mxfold2#6: the system's /lib64 libstdc++ under a conda env's python (the other way round)
    "ImportError: /lib64/libstdc++.so.6: version `GLIBCXX_3.4.20' not found (required by /home/ekofman/new_anaconda3/envs/mxfold2_python38/lib/python3.8/site-packages/mxfold2/interface.cpython-38-x86_64-linux-gnu.so)\n",
    # ContinuumIO/anaconda-issues#13100: an HPC compiler module's libstdc++, with conda info's env shown
    ("2) The version `GLIBCXX_3.4.29' exists in the libstdc++.so.6 provided in the `/u/project/tom/joy/programs/conda-envs/test/lib/libstdc++.so.6.0.29`, "
     "but not in the compiler provided version `/u/local/compilers/gcc/10.2.0/lib/../lib64/libstdc++.so.6: version `GLIBCXX_3.4.29' not found`\n"
     "    active env location : /u/project/tom/joy/programs/conda-envs/test\n"),
    # ManfredStoiber/stag-python#4's title: a cut path, but nothing says a conda env ran
    "libstdc++.so.6: version GLIBCXX_3.4.30' not found\n",
]


@pytest.mark.parametrize("text", LIBSTDCXX_LOOKALIKES)
def test_system_libstdcxx_or_a_cut_path_outside_conda_is_not_condas(cli, tmp_path, text):
    for form in as_pasted(text):
        assert "conda-libstdcxx-too-old" not in errors(cli, tmp_path, form), form


def test_conda_activate_and_conda_info_name_the_env_in_use():
    facts, _ = triage("(base) user@host:~$ conda activate wiki-grx-gym\n    active env location : /u/project/conda-envs/test\n")
    assert [(e.get("name"), e.get("prefix"), e["how"]) for e in facts["conda.envs"]] == [
        ("wiki-grx-gym", None, "activate"), (None, "/u/project/conda-envs/test", "conda info")]
    facts, _ = triage("To activate this environment, use\n\n     $ conda activate --help\n")
    assert "conda.envs" not in facts


# ----------------------------------------------------------------------------- 3. Paddle's dynload
PADDLE_DYNLOAD = [
    # PaddlePaddle/Paddle#36238 (Paddle 2.0.2; the cudnn .so not found)
    ("`RuntimeError: (PreconditionNotMet) Cannot load cudnn shared library. Cannot invoke method cudnnGetVersion.\n"
     "  [Hint: cudnn_dso_handle should not be null.] (at /paddle/paddle/fluid/platform/dynload/cudnn.cc:76)`\n"),
    # PaddlePaddle/PaddleOCR#300 (Paddle 1.7's wording)
    "Error: Cannot load cudnn shared library. Cannot invoke method cudnnGetVersion at (/paddle/paddle/fluid/platform/dynload/cudnn.cc:63)\n",
    # PaddlePaddle/Paddle#51127 (a development-part report: Paddle develop, phi's dynload)
    ("在ununtu20上安装paddle的develop版本，cuda是11.7版本，cudnn是8.6，在torch环境下已经测试成功，但是paddle下一直报错，错误如下：RuntimeError: (PreconditionNotMet) "
     "Cannot load cudnn shared library. Cannot invoke method cudnnGetVersion.\n"
     "  [Hint: cudnn_dso_handle should not be null.] (at /paddle/paddle/phi/backends/dynload/cudnn.cc:64)\n"),
    # PaddlePaddle/Paddle#26716 and #17177: dynamic_loader.cc's warning
    "W0827 00:56:50.655920 257049 dynamic_loader.cc:120] Can not find library: libcudnn.so. The process maybe hang. Please try to add the lib path to LD_LIBRARY_PATH.\n",
    "W0506 14:56:06.782572 32108 dynamic_loader.cc:107] Can not find library: libcudnn.so. Please try to add the lib path to LD_LIBRARY_PATH.\n",
]


@pytest.mark.parametrize("text", PADDLE_DYNLOAD)
def test_paddles_dynload_messages_are_a_cuda_library_not_found(cli, tmp_path, text):
    for form in as_pasted(text):
        hit = findings(cli, tmp_path, form).get("cuda-lib-not-found")
        assert hit is not None and hit["severity"] == "error" and "libcudnn" in hit["message"], form


PADDLE_LOOKALIKES = [
    # Paddle's ROCm build (dynload/miopen.cc): not a CUDA library
    "Cannot load miopen shared library. Cannot invoke method miopenGetVersion.\n",
    # TensorRT is optional to Paddle Inference
    "W0101 dynamic_loader.cc:120] Can not find library: libnvinfer.so. The process maybe hang. Please try to add the lib path to LD_LIBRARY_PATH.\n",
    # a question about the library, not Paddle's message
    "How can I load the cudnn shared library from a conda env?\n",
]


@pytest.mark.parametrize("text", PADDLE_LOOKALIKES)
def test_rocm_tensorrt_and_prose_are_not_a_cuda_library_not_found(cli, tmp_path, text):
    for form in as_pasted(text):
        assert "cuda-lib-not-found" not in errors(cli, tmp_path, form), form
