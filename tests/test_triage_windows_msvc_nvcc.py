"""Issue 26, the windows-wsl group: nvcc refusing the Visual Studio it runs with
(host-compiler-unsupported, doctor/kb/errors.yaml's unsupported-msvc row), in the two wordings
nvcc has: host_config.h's "#error -- unsupported Microsoft Visual Studio version! Only the
versions ... are supported!" (MSVC's fatal error C1189) and nvcc's own "nvcc cannot find a
supported version of Microsoft Visual Studio. Only the versions ... are supported", also as a
CMake or MSBuild log wraps it inside the message.

Recorded public text, also as pasting mangles it, beside look-alikes that must stay quiet.
"""

from __future__ import annotations

import pytest

from fwdoctor.kb import KB
from pasting import as_pasted
from triage_run import severities

# kokkos/kokkos#7064 (a CMake configure on a Windows CI runner; the log wraps the message).
CMAKE_WRAPPED = """\
> C:\\Program Files\\NVIDIA GPU Computing
  Toolkit\\CUDA\\v12.1\\include\\crt/host_config.h(153): fatal error C1189:
  #error: -- unsupported Microsoft Visual Studio version! Only the versions
  between 2017 and 2022 (inclusive) are supported! The nvcc flag
  '-allow-unsupported-compiler' can be used to override this version check;
"""

# CERN/TIGRE#86, vlfeat/matconvnet#417, CERN/TIGRE#414: nvcc's own wording.
NVCC_TIGRE_86 = "nvcc : fatal error : nvcc cannot find a supported version of Microsoft Visual Studio. Only the versions 2008, 2010, and 2012 are supported\n"
NVCC_MATCONVNET = "nvcc fatal   : nvcc cannot find a supported version of Microsoft Visual Studio. Only the versions 2010, 2012, and 2013 are supported\n"
NVCC_TIGRE_414 = """\
Error using mex
nvcc fatal   : nvcc cannot find a supported version of Microsoft Visual Studio. Only the versions between 2017 and 2019 (inclusive) are supported! The nvcc flag
'-allow-unsupported-compiler' can be used to override this version check; however, using an unsupported host compiler may cause compilation failure or incorrect run
time execution. Use at your own risk.
"""

# Look-alikes: the flag named in advice, Visual Studio named in prose, nvcc's other fatal errors.
QUIET = [
    "Tried to add '-allow-unsupported-compiler'  to mex_CUDA_win64.xml line 36, but it overwrite anyway.\n",
    "Visual Studio Community 2022 v17.10 throws up an error stating only VS 2017 to 2022 is supported.\n",
    "nvcc fatal   : Cannot find compiler 'cl.exe' in PATH\n",
]


@pytest.fixture(scope="module")
def kb() -> KB:
    return KB()


@pytest.mark.parametrize("text", as_pasted(CMAKE_WRAPPED, NVCC_TIGRE_86, NVCC_MATCONVNET, NVCC_TIGRE_414))
def test_nvcc_refusing_the_visual_studio_it_runs_with_is_host_compiler_unsupported(text, kb):
    assert severities(text, kb).get("host-compiler-unsupported") is not None


@pytest.mark.parametrize("text", as_pasted(*QUIET))
def test_visual_studio_named_elsewhere_stays_quiet(text, kb):
    assert "host-compiler-unsupported" not in severities(text, kb)
