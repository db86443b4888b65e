"""Issue 26, the paddle group: which Paddle build a report installed (fwdoctor.triage.paddle_packages).

Paddle's GPU wheels off PyPI name their CUDA in the version's post tag ("2.4.2.post112": CUDA
11.2, PaddlePaddle/docs install/pip/linux-pip_en.md), Paddle 3's in the index
(".../packages/stable/cu118/"); Paddle's issue form pastes tools/summary_env.py ("Paddle version:
2.4.2 / Paddle With CUDA: True"). Read, they give Paddle's entry of frameworks.installed, so that
driver-too-old-for-framework can judge a driver older than the wheel's CUDA
(PaddlePaddle/Paddle#52100: post112 on driver 440.33.01, "Compiled with WITH_GPU, but no GPU found
in runtime."). Tags of Paddle 1.x that spell no CUDA release ("post97", "post107") are not read.

Every text is quoted from a public thread and read also as pasting mangles it."""

from __future__ import annotations

import pytest

from fwdoctor.triage import triage
from tests.pasting import as_pasted
from tests.triage_run import cli_findings as findings

pytestmark = pytest.mark.usefixtures("use_test_kb")


def paddle(text: str) -> dict | None:
    facts, _ = triage(text)
    items = [i for i in facts["frameworks.installed"] or [] if isinstance(i, dict) and i.get("framework") == "paddle"]
    return items[0] if items else None


def errors(cli, tmp_path, text: str) -> set[str]:
    return {k for k, f in findings(cli, tmp_path, text).items() if f["severity"] == "error"}


# PaddlePaddle/Paddle#52100 (the install command, Paddle's warning and summary_env.py's output)
POST112_DRIVER_440 = (
    "I use the official command to install the paddlepaddle-gpu==2.4.2.post112\n\n"
    "```\npython -m pip install paddlepaddle-gpu==2.4.2.post112 -f https://www.paddlepaddle.org.cn/whl/linux/mkl/avx/stable.html\n```\n\n"
    "```\nW0324 15:29:02.249459  3747 init.cc:182] Compiled with WITH_GPU, but no GPU found in runtime.\n```\n\n"
    "### 版本&环境信息 Version & Environment Information\n\n"
    "****************************************\n"
    "Paddle version: 2.4.2\n"
    "Paddle With CUDA: True\n\n"
    "OS: ubuntu 18.04\n"
    "GCC version: (GCC) 8.2.0\n"
    "Clang version: 3.8.0 (tags/RELEASE_380/final)\n"
    "CMake version: version 3.16.0\n"
    "Libc version: glibc 2.27\n"
    "Python version: 3.8.16\n\n"
    "CUDA version: 11.2.142\n"
    "Build cuda_11.2.r11.2/compiler.29558016_0\n"
    "cuDNN version: 8.1.1\n"
    "Nvidia driver version: 440.33.01\n"
    "Nvidia driver List:\n"
    "GPU 0: Tesla P40\n"
    "GPU 1: Tesla P40\n\n"
    "******************************\n"
)


def test_a_post112_wheel_on_driver_440_is_a_driver_too_old_for_paddle(cli, tmp_path):
    for form in as_pasted(POST112_DRIVER_440):
        item = paddle(form)
        assert item and item["cuda"] == "11.2" and item["version"] == "2.4.2" and item["gpu_build"] is True, form
        assert "driver-too-old-for-framework" in errors(cli, tmp_path, form), form


# the post tag and Paddle 3's index, each as a report pasted it
TAGGED = [
    # PaddlePaddle/PaddleSeg#3470
    ("I installed paddle with cuda 11.7 following [installation page](https://www.paddlepaddle.org.cn/documentation/docs/en/install/pip/linux-pip_en.html#gpu) "
     "`python3 -m pip install paddlepaddle-gpu==2.5.1.post117 -f https://www.paddlepaddle.org.cn/whl/linux/mkl/avx/stable.html`.\n", "2.5.1.post117", "11.7"),
    # PaddlePaddle/Paddle#49609
    ("python3 -m pip install paddlepaddle-gpu==2.4.1.post117 -f https://www.paddlepaddle.org.cn/whl/linux/mkl/avx/stable.html\n", "2.4.1.post117", "11.7"),
    # PaddlePaddle/Paddle#28360 (Windows)
    ("python -m pip install paddlepaddle-gpu==2.0.0rc0.post101 -f https://paddlepaddle.org.cn/whl/stable.html\n", "2.0.0rc0.post101", "10.1"),
    # PaddlePaddle/PaddleX#4682 (the fix that worked: the CUDA 11.8 build from Paddle 3's index)
    ("`pip install paddlepaddle-gpu==3.2.0 -i https://www.paddlepaddle.org.cn/packages/stable/cu118/`\n", "3.2.0", "11.8"),
]


@pytest.mark.parametrize("text,version,cuda", TAGGED)
def test_the_cuda_tag_of_a_paddle_gpu_install_is_its_cuda(text, version, cuda):
    for form in as_pasted(text):
        item = paddle(form)
        assert item and item["version"] == version and item["cuda"] == cuda and item["gpu_build"] is True, form


# PaddlePaddle/Paddle#33209: summary_env.py without a tagged install says a GPU build, not its CUDA
SUMMARY_ONLY = (
    "附执行summary_env.py的输出信息：\n"
    "W0531 13:49:16.473908 50067 init.cc:136] Compiled with WITH_GPU, but no GPU found in runtime.\n"
    "****************************************\n"
    "Paddle version: 2.0.2\n"
    "Paddle With CUDA: True\n\n"
    "OS: Ubuntu 16.04\n"
    "Python version: 3.8.5\n\n"
    "CUDA version: 10.0.130\n"
    "cuDNN version: 7.6.5\n"
    "Nvidia driver version: 410.48\n"
    "****************************************\n"
)


def test_summary_env_says_paddles_version_and_gpu_build_but_no_cuda_and_no_driver_verdict(cli, tmp_path):
    for form in as_pasted(SUMMARY_ONLY):
        item = paddle(form)
        assert item and item["version"] == "2.0.2" and item["gpu_build"] is True and item["cuda"] is None, form
        assert "driver-too-old-for-framework" not in errors(cli, tmp_path, form), form


NOT_A_CUDA_TAG = [
    # PaddlePaddle/Paddle#29737: Paddle 1.x's "post97" is CUDA 9 with cuDNN 7
    "python -m pip install paddlepaddle-gpu==1.8.5.post97 -i https://mirror.baidu.com/pypi/simple\n",
    # PaddlePaddle/Paddle#18602: "post107" is CUDA 10.0 with cuDNN 7, not a CUDA 10.7
    "pip install paddlepaddle_gpu-1.5.0.post107-cp37-cp37m-manylinux1_x86_64.whl\n",
    # PaddlePaddle/PaddleX#4682: the failing install (untagged) and the fix (cu118) disagree
    "pip install paddlepaddle-gpu==3.2.0\n...\n`pip install paddlepaddle-gpu==3.2.0 -i https://www.paddlepaddle.org.cn/packages/stable/cu118/`\n",
]


@pytest.mark.parametrize("text", NOT_A_CUDA_TAG)
def test_a_tag_that_spells_no_cuda_release_or_installs_that_disagree_give_no_cuda(text):
    for form in as_pasted(text):
        item = paddle(form)
        assert item is not None and item["cuda"] is None, form


LOOK_ALIKES = [
    # Paddle Serving's own wheel (PaddlePaddle/PaddleOCR deploy/pdserving), not Paddle
    "pip3 install paddle_serving_server_gpu-0.8.3.post112-py3-none-any.whl\n",
    # the CPU package
    "python3 -m pip install paddlepaddle==2.6.1 -i https://mirror.baidu.com/pypi/simple\n",
]


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_other_packages_are_not_a_paddle_gpu_install(text):
    for form in as_pasted(text):
        assert paddle(form) is None, form
