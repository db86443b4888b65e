"""Issue 26, the containers group (rule round of 2026-12-05): a small /dev/shm told by texts that
do not show its size (doctor/kb/errors.yaml rows launcher-child-sigbus and
nccl-unhandled-system-error, fwdoctor.triage.container_shm), and a container started without
the GPUs told by Paddle's "CUDA device is not set properly" or an application's "No GPUs
detected" (rows paddle-no-cuda-device and container-run-without-gpus). Each text is quoted
from the public thread named above it and read as pasting leaves it (tests/pasting.py); its
look-alikes are not read so."""

from __future__ import annotations

import pytest

from pasting import as_pasted
from triage_helpers import findings

SIGBUS = {
    # https://github.com/hiyouga/LlamaFactory/issues/285 (DeepSpeed on one node with several GPUs; the title)
    "llamafactory 285": "单机多卡DeepSpeed sft训练Llama2-70b-chat-hf时报错：exits with return code = -7\n",
    # https://github.com/haotian-liu/LLaVA/issues/739 (the title; "`shm_size` on docker needs to be bigger")
    "llava 739": "Exits with return code = -7 [Usage]\n",
    # https://github.com/msr-fiddle/pipedream/issues/76 (NCCL in a container with Docker's 64M /dev/shm)
    "pipedream 76": "[8d6bf97c3bf4:3039 :0:3095] Caught signal 7 (Bus error: nonexistent physical address)\n"
                    " 2 0x000000000007587d ncclGroupEnd()  ???:0\n",
}


@pytest.mark.parametrize("text", SIGBUS.values(), ids=SIGBUS.keys())
def test_a_worker_killed_by_sigbus_warns_of_a_small_dev_shm(cli, use_test_kb, tmp_path, text):
    for pasted in as_pasted(text):
        hit = findings(cli, tmp_path, pasted)["shm-too-small"]
        assert hit["severity"] == "warning" and "SIGBUS" in hit["message"] and "df -h /dev/shm" in " ".join(hit["fix"]["commands"])


@pytest.mark.parametrize("text", [
    # https://github.com/haotian-liu/LLaVA/issues/1085: the same launcher line with -9 (the OOM killer's SIGKILL)
    "[2024-02-06 06:23:39,510] [ERROR] [launch.py:321:sigkill_handler] ['/mnt/d/anaconda3/envs/llava2/bin/python', '-u', "
    "'train_mem.py', '--local_rank=7'] exits with return code = -9\n",
    # a return code that merely starts with 7
    "exits with return code = 7\n",
])
def test_other_exit_codes_are_no_sigbus(cli, use_test_kb, tmp_path, text):
    assert "shm-too-small" not in findings(cli, tmp_path, text)


# https://github.com/pytorch/pytorch/issues/37004 (4 GPUs in a single node, the error line alone)
NCCL_BARE = ("I came across this error `RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:290, unhandled system error` when trying "
             "to distribute neural network training to 4 GPUs in a single node with PyTorch 1.2.\n")


def test_ncclsystemerror_on_one_node_without_a_log_warns_of_dev_shm(cli, use_test_kb, tmp_path):
    for pasted in as_pasted(NCCL_BARE):
        hit = findings(cli, tmp_path, pasted)["shm-too-small"]
        assert hit["severity"] == "warning" and "no NCCL_DEBUG log" in hit["message"]


@pytest.mark.parametrize("extra", [
    # https://github.com/NVIDIA/nccl/issues/697: between two nodes the failed call is a socket's as often
    "ncclSystemError: System call (socket, malloc, munmap, etc) failed when training on two remote nodes\n",
    "torchrun --nnodes=2 --nproc_per_node=8 train.py\n",
    # an NCCL_DEBUG log names the call: the rows of its WARN lines judge it, not a guess
    "node08:27106:27302 [0] include/socket.h:403 NCCL WARN Connect to 10.0.0.2<34567> failed : Connection refused\n",
])
def test_ncclsystemerror_beside_a_second_node_or_a_log_is_not_guessed(cli, use_test_kb, tmp_path, extra):
    assert "shm-too-small" not in findings(cli, tmp_path, extra + NCCL_BARE)


def test_a_size_named_by_ncclss_own_line_beats_the_warning(cli, use_test_kb, tmp_path):
    # https://github.com/pytorch/torchtitan/issues/853 (torch >= 2.2 appends NCCL's last error): the row nccl-shm-segment answers
    text = ("torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:268, unhandled system "
            "error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5\nLast error:\n"
            "Error while creating shared memory segment /dev/shm/nccl-1YsMbG (size 7340384)\n")
    hit = findings(cli, tmp_path, text)["shm-too-small"]
    assert "no NCCL_DEBUG log" not in hit["message"]


PADDLE_IN_DOCKER = {
    # https://github.com/PaddlePaddle/PaddleClas/issues/1725 (the install guide's plain `docker run`, no GPU asked for)
    "paddleclas 1725": "按paddle安装手册上，使用Docker环境命令（sudo docker run --name ppcls -v $PWD:/paddle --shm-size=8G --network=host -it "
                       "paddlepaddle/paddle:2.1.0-gpu-cuda10.2-cudnn7 /bin/bash）进行容器后，报警告只能使用CPU，无法使用GPU\n"
                       ">>> import paddle\n"
                       "/usr/local/python3.7.0/lib/python3.7/site-packages/paddle/fluid/framework.py:299: UserWarning: You are using GPU "
                       "version Paddle, but your CUDA device is not set properly. CPU device will be used by default.\n",
    # https://github.com/PaddlePaddle/Paddle/issues/44953 (the image pulled with nvidia-docker, the warning at import)
    "paddle 44953": "nvidia-docker pull registry.baidubce.com/paddlepaddle/paddle:2.3.1-gpu-cuda11.2-cudnn8\n"
                    "/usr/local/lib/python3.7/dist-packages/paddle/fluid/framework.py:517: UserWarning: You are using GPU version Paddle, "
                    "but your CUDA device is not set properly. CPU device will be used by default.\n",
}


@pytest.mark.parametrize("text", PADDLE_IN_DOCKER.values(), ids=PADDLE_IN_DOCKER.keys())
def test_paddle_counting_no_gpu_in_a_container_warns_it_was_started_without(cli, use_test_kb, tmp_path, text):
    for pasted in as_pasted(text):
        hit = findings(cli, tmp_path, pasted)["container-started-without-gpus"]
        assert hit["severity"] == "warning" and "nvidia-smi" in hit["message"]


def test_paddle_counting_no_gpu_on_a_host_is_not_a_container_finding(cli, use_test_kb, tmp_path):
    # https://github.com/PaddlePaddle/PaddleSeg/issues/964 (a conda env on the host, CUDA_VISIBLE_DEVICES=0)
    text = ("export CUDA_VISIBLE_DEVICES=0\n"
            "UserWarning: You are using GPU version Paddle, but your CUDA device is not set properly. CPU device will be used by default.\n")
    assert "container-started-without-gpus" not in findings(cli, tmp_path, text)


# https://github.com/stevezau/media_preview_generator/issues/124 (the development-part report
# b37a-media-preview-docker-run-without-gpus-cuda-test-failed.md): the image's own GPU probe
MEDIA_RUN = ("❯ docker run --rm stevezzau/plex_generate_vid_previews:latest --list-gpus\n"
             "2025/12/23 15:39:05 | ⚠  -   ⚠  card1: NVIDIA CUDA test failed\n"
             "2025/12/23 15:39:05 | ℹ  - ❌ No GPUs detected\n")


def test_an_applications_no_gpus_detected_after_docker_run_without_gpus(cli, use_test_kb, tmp_path):
    for pasted in as_pasted(MEDIA_RUN):
        assert findings(cli, tmp_path, pasted)["container-started-without-gpus"]["severity"] == "error"


def test_no_gpus_detected_after_docker_run_with_gpus_is_not_that(cli, use_test_kb, tmp_path):
    text = MEDIA_RUN.replace("docker run --rm", "docker run --rm --gpus all")
    assert "container-started-without-gpus" not in findings(cli, tmp_path, text)
