"""Issue 26, the conda group: classes of conda/mamba reports the development part did not hold.

1. conda-forge's way to ask for a CUDA is the cuda-version metapackage ("a meta-package for
   pinning to a CUDA release version", https://anaconda.org/conda-forge/cuda-version): a
   `mamba install ... "cuda-version>=12"` that still got conda-forge's CPU pytorch
   (openmm/openmm-torch#170) is conda-cpu-pytorch-on-gpu-host, as "cudatoolkit=11.3" beside
   "py3.8_cpu_0" is. A cuda-version in a solver's message or in `conda list` is no request.
2. libmamba 2 (mamba/micromamba 2.x, conda >= 25) writes a spec as "name version build", "any" as
   "=*": "└─ __cuda =* *, which is missing on the system." It is the same sentence libmamba 1
   wrote as "└─ __cuda, which is missing on the system." (conda-cuda-pin-conflict: the solve ran
   where no driver answered). The same rendering about __win (trianglesplatting2/
   triangle-splatting2#9) or under an option's "would require" is not that.
3. conda's classic UnsatisfiableError "incompatible with your system" names the virtual packages
   the system has ("feature:/linux-64::__cuda==11.4=0"); one whose package needs __cuda
   ("pytorch==2[build=*cuda*] -> __cuda", openmm/openmm-torch#118 on a login node) and that names
   no __cuda of the system had none. conda 4.8's listing of a __cuda pin alone ("incompatible
   with your CUDA driver: - feature:/linux-64::__cuda==10.2=0", knights-lab/SHOGUN#38) is a
   hint conda shows by mistake (conda/conda#9897) and is not read.

Every text is quoted from a public thread or file and read also as pasting mangles it."""

from __future__ import annotations

import pytest

from fwdoctor.triage import triage
from tests.pasting import as_pasted
from tests.triage_run import cli_findings as findings

pytestmark = pytest.mark.usefixtures("use_test_kb")


def errors(cli, tmp_path, text: str) -> set[str]:
    return {k for k, f in findings(cli, tmp_path, text).items() if f["severity"] == "error"}


# openmm/openmm-torch#170 (RockyOS 8; the plan quoted as the reporter quoted it)
CUDA_VERSION_ASKED = (
    "I am having trouble installing the CUDA version of openmm-torch on RockyOS 8. I tried the following command\n\n"
    "`mamba install -c conda-forge openmm-torch \"cuda-version>=12\"`\n\n"
    "and it installs me the CPU version of openmm-torch and Pytorch:\n\n"
    ">  + pytorch                 2.7.1  cpu_mkl_py311_h7bde0a3_103  conda-forge     Cached\n"
    ">  + openmm-torch            1.5.1  cpu_py311h59d55e3_1         conda-forge     Cached\n\n"
    "Any pointers?\n"
)


def test_cuda_version_asked_beside_conda_forges_cpu_pytorch_is_a_cpu_build_on_a_gpu_host(cli, tmp_path):
    for form in as_pasted(CUDA_VERSION_ASKED):
        facts, _ = triage(form)
        assert facts["conda.torch_build"]["kind"] == "cpu", form
        assert "cuda-version>=12" in str(facts["report.gpu_expected"]), form
        assert "conda-cpu-pytorch-on-gpu-host" in errors(cli, tmp_path, form), form


# cuda-version named by a solver or held by an env is not the user's request
NOT_ASKED = [
    # the libmamba tree of the EDGELESS Jetson notes (a requirement of pytorch's CUDA build)
    ("+ pytorch                 2.7.1  cpu_mkl_py311_h7bde0a3_103  conda-forge     Cached\n"
     "      └─ cuda-version [>=12.0,<13 |>=12.6,<13 ], which requires\n"
     "         └─ __cuda >=12 , which conflicts with any installable versions previously reported.\n"),
    # a `conda list` row of cuda-version beside the CPU build
    ("pytorch                   2.7.1           cpu_mkl_py311_h7bde0a3_103    conda-forge\n"
     "cuda-version              12.4                 h3060b56_3    conda-forge\n"),
]


@pytest.mark.parametrize("text", NOT_ASKED)
def test_cuda_version_in_a_solver_message_or_a_list_row_is_no_request(text):
    for form in as_pasted(text):
        facts, _ = triage(form)
        assert "report.gpu_expected" not in facts, form


MISSING_V2 = [
    # notes of a cluster install measured with mamba on a login node (public repository notes, as
    # found by the code index: "Measured on ln302 ... with mamba")
    ("pytorch =2.5.1 cuda120* is not installable because it requires\n"
     "└─ __cuda =* *, which is missing on the system.\n", "pytorch", None),
]


@pytest.mark.parametrize("text, package, needs", MISSING_V2)
def test_libmamba2_cuda_missing_on_the_system_is_a_solve_without_a_driver(cli, tmp_path, text, package, needs):
    for form in as_pasted(text):
        facts, _ = triage(form)
        need = facts["conda.cuda_conflict"]["requires"][0]
        assert (need["package"], need["range"], need["missing"]) == (package, needs, True), form
        assert "conda-cuda-pin-conflict" in errors(cli, tmp_path, form), form


MISSING_LOOKALIKES = [
    # trianglesplatting2/triangle-splatting2#9: the NVIDIA channel's Windows-only cuda build on Linux
    ("The system is dual boot Ubuntu/Windows and the installer seems \n"
     "to be looking for (__win =* *, which is missing on the system.)\n"),
    # an option's "would require" under libmamba 2 is one way out of several, not the conflict
    ("The following packages are incompatible\n"
     "└─ pytorch =2.5.1 cuda120* is installable with the potential options\n"
     "   ├─ pytorch 2.5.1 would require\n"
     "   │  └─ __cuda =* *, which is missing on the system;\n"),
]


@pytest.mark.parametrize("text", MISSING_LOOKALIKES)
def test_other_virtual_packages_and_options_are_not_a_missing_cuda(cli, tmp_path, text):
    for form in as_pasted(text):
        facts, _ = triage(form)
        assert "conda.cuda_conflict" not in facts, form
        assert "conda-cuda-pin-conflict" not in errors(cli, tmp_path, form), form


# openmm/openmm-torch#118 (conda 4.x classic solver, a SLURM login node)
CLASSIC_NO_CUDA = (
    "$ conda create -n test pytorch=2=*cuda* -c conda-forge\n"
    "...\n"
    "Found conflicts! Looking for incompatible packages.\n"
    "This can take several minutes.  Press CTRL-C to abort.\n"
    "failed                                                                          \n"
    "\n"
    "UnsatisfiableError: The following specifications were found to be incompatible with your system:\n"
    "\n"
    "  - feature:/linux-64::__glibc==2.35=0\n"
    "  - feature:/linux-64::__unix==0=0\n"
    "  - feature:|@/linux-64::__glibc==2.35=0\n"
    "  - feature:|@/linux-64::__unix==0=0\n"
    "  - pytorch==2[build=*cuda*] -> __cuda\n"
    "  - pytorch==2[build=*cuda*] -> nccl[version='>=2.14.3.1,<3.0a0'] -> __cuda[version='10.2|10.2.*|11.0|11.0.*|>=11.2,<12|11.1|11.1.*']\n"
    "\n"
    "Your installed version is: 0\n"
    "\n"
    "Note that strict channel priority may have removed packages required for satisfiability.\n"
)


def test_classic_listing_needing_cuda_with_no_cuda_of_the_system_is_a_solve_without_a_driver(cli, tmp_path):
    for form in as_pasted(CLASSIC_NO_CUDA):
        facts, _ = triage(form)
        needs = facts["conda.cuda_conflict"]["requires"]
        assert [(n["package"], n["version"], n.get("missing")) for n in needs] == [("pytorch", "2", True), ("nccl", None, True)], form
        got = findings(cli, tmp_path, form)
        assert got.get("conda-cuda-pin-conflict", {}).get("severity") == "error", (form, got)
        assert "pytorch 2 needs the __cuda virtual package" in got["conda-cuda-pin-conflict"]["message"]


CLASSIC_LOOKALIKES = [
    # knights-lab/SHOGUN#38: conda 4.8's spurious hint naming the system's own __cuda
    ("UnsatisfiableError: The following specifications were found to be incompatible with your CUDA driver:\n\n"
     "  - feature:/linux-64::__cuda==10.2=0\n\nYour installed CUDA driver is: 10.2\n"),
    # rapidsai/integration#381: the same listing about __glibc, which the system has
    ("UnsatisfiableError: The following specifications were found to be incompatible with each other:\n\n"
     "Output in format: Requested package -> Available versionsThe following specifications were found to be incompatible with your system:\n\n"
     "  - feature:/linux-64::__glibc==2.31=0\n"
     "  - feature:|@/linux-64::__glibc==2.31=0\n"
     "  - rapids-blazing=21.10 -> cudatoolkit=11.4 -> __glibc[version='>=2.17,<3.0.a0']\n\n"
     "Your installed version is: 2.31\n"),
]


@pytest.mark.parametrize("text", CLASSIC_LOOKALIKES)
def test_a_listing_of_the_systems_own_virtual_packages_is_no_missing_cuda(cli, tmp_path, text):
    for form in as_pasted(text):
        assert "conda-cuda-pin-conflict" not in errors(cli, tmp_path, form), form


# pytorch/pytorch#66047 (torchaudio's Windows CI: the pytorch-nightly channel's CPU build beside
# cudatoolkit=10.2); the nightly channel versions its builds by date ("1.11.0.dev20211001")
NIGHTLY_CPU = (
    "conda install -y -c pytorch-nightly -c conda-forge pytorch-nightly::pytorch cudatoolkit=10.2 pytest\n"
    "\n"
    "<--snip-->\n"
    "\n"
    "## Package Plan ##\n"
    "\n"
    "  environment location: C:\\Users\\circleci\\project\\env\n"
    "\n"
    "  added / updated specs:\n"
    "    - cudatoolkit=10.2\n"
    "    - pytest\n"
    "    - pytorch-nightly::pytorch\n"
    "\n"
    "\n"
    "The following packages will be downloaded:\n"
    "\n"
    "    package                    |            build\n"
    "    ---------------------------|-----------------\n"
    "\n"
    "    cudatoolkit-10.2.89        |       hb195166_9       398.1 MB  conda-forge\n"
    "    pytorch-1.11.0.dev20211001 |      py3.6_cpu_0       193.2 MB  pytorch-nightly\n"
    "\n"
    "The following NEW packages will be INSTALLED:\n"
    "\n"
    "  cudatoolkit        conda-forge/win-64::cudatoolkit-10.2.89-hb195166_9\n"
    "  pytorch            pytorch-nightly/win-64::pytorch-1.11.0.dev20211001-py3.6_cpu_0\n"
)


def test_a_nightly_cpu_build_beside_a_cudatoolkit_request_is_a_cpu_build_on_a_gpu_host(cli, tmp_path):
    for form in as_pasted(NIGHTLY_CPU):
        facts, _ = triage(form)
        assert (facts["conda.torch_build"]["version"], facts["conda.torch_build"]["build"]) == ("1.11.0.dev20211001", "py3.6_cpu_0"), form
        assert "conda-cpu-pytorch-on-gpu-host" in errors(cli, tmp_path, form), form


# a `conda list` of a nightly CPU build with nothing that says a GPU is meant (a public
# environment listing): read, and no error
NIGHTLY_CPU_ALONE = (
    "   python-snappy             0.6.0            py39h2531618_3  \n"
    "   pytorch                   1.13.0.dev20220620     py3.9_cpu_0    pytorch-nightly\n"
    "   pytorch-mutex             1.0                         cpu    pytorch-nightly\n"
    "   pytz                      2021.3             pyhd3eb1b0_0  \n"
)


def test_a_nightly_cpu_build_alone_is_read_and_raises_no_error(cli, tmp_path):
    for form in as_pasted(NIGHTLY_CPU_ALONE):
        facts, _ = triage(form)
        assert facts["conda.torch_build"]["version"] == "1.13.0.dev20220620", form
        assert not errors(cli, tmp_path, form), form
