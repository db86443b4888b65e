"""Issue 26, the nccl-fabric group: Ray's own measure of /dev/shm, read from a report
(doctor/kb/errors.yaml row ray-object-store-shm-small, fwdoctor.triage.ray_shm). vLLM's
tensor-parallel workers run under Ray, whose start-up warning names the free bytes of
/dev/shm; below the KB's floor that is the container's 64 MiB default that NCCL's SHM
transport fails in. Each text is quoted from the public thread named above it; each is also
read as pasting leaves it (tests/pasting.py), and its look-alikes are not."""

from __future__ import annotations

import pytest

from fwdoctor.triage import triage
from pasting import forms
from triage_helpers import findings


def kinds(text: str) -> list[str]:
    return [e["kind"] for e in triage(text)[0].get("report.errors") or []]


RAY_SMALL = {
    # https://github.com/vllm-project/vllm/issues/1111 (tensor_parallel_size=2 on L4 GPUs)
    "vllm 1111": "2023-09-21 09:59:38,239\tWARNING services.py:1889 -- WARNING: The object store is using /tmp instead of /dev/shm "
                 "because /dev/shm has only 67108864 bytes available. This will harm performance! You may be able to free up space by "
                 "deleting files in /dev/shm. If you are inside a Docker container, you can increase /dev/shm size by passing "
                 "'--shm-size=10.24gb' to 'docker run' (or add it to the run_options list in a Ray cluster config). Make sure to set "
                 "this to more than 30% of available RAM.\n",
    # https://github.com/vllm-project/vllm/issues/1710 (docker run ... --tensor-parallel-size 2; "ncclShmOpen";
    # --shm-size fixed it): the development-part report b32-vllm-docker-tp2-ncclshmopen-shm-64mb.md
    "vllm 1710": "2023-11-18 03:39:16,283 WARNING services.py:1996 -- WARNING: The object store is using /tmp instead of /dev/shm "
                 "because /dev/shm has only 67108864 bytes available. This will harm performance! You may be able to free up space by "
                 "deleting files in /dev/shm. If you are inside a Docker container, you can increase /dev/shm size by passing "
                 "'--shm-size=10.24gb' to 'docker run' (or add it to the run_options list in a Ray cluster config). Make sure to set "
                 "this to more than 30% of available RAM.\n",
    # the same warning (Ray 2.x: "/tmp/ray") wrapped before its number, as a terminal or a README quoting it breaks the line
    "wrapped": "WARNING: The object store is using /tmp/ray instead of /dev/shm because /dev/shm has only\n"
               "67108864 bytes available. This will harm performance!\n",
}


@pytest.mark.parametrize("text", RAY_SMALL.values(), ids=RAY_SMALL.keys())
def test_rays_small_dev_shm_is_shm_too_small(cli, use_test_kb, tmp_path, text):
    for pasted in [text, *forms(text)]:
        assert "ray-object-store-shm-small" in kinds(pasted)
        hit = findings(cli, tmp_path, pasted)["shm-too-small"]
        assert "Ray found only 64 MiB" in hit["message"] and hit["severity"] == "warning"


@pytest.mark.parametrize("text", [
    # https://github.com/allenai/open-instruct/pull/1067: Ray's warning at 5 GiB free (under 30% of RAM, above NCCL's floor)
    "2025-10-09 20:16:32,652    WARNING services.py:2159 -- WARNING: The object store is using /tmp instead of /dev/shm "
    "because /dev/shm has only 5368709120 bytes available. This will harm performance!\n",
    # https://github.com/gpustack/gpustack/issues/5014: the raylet's own message about 9 GiB (another program's line)
    "[2026-03-25 05:44:29,435 W 39 39] (raylet) store_runner.cc:83: System memory request exceeds memory available in /dev/shm. "
    "The request is for 10200547328 bytes, and the amount available is 9663676416 bytes.\n",
    # prose about the warning, with no number Ray measured
    "Ray says /dev/shm has only a few bytes available, so I passed --shm-size=10gb\n",
])
def test_look_alikes_of_rays_small_shm_raise_nothing(cli, use_test_kb, tmp_path, text):
    assert "shm-too-small" not in findings(cli, tmp_path, text)


def test_a_big_dev_shm_shown_beside_rays_warning_wins(cli, use_test_kb, tmp_path):
    # a df of a 32 GB /dev/shm: the regular rule judges the size shown, not Ray's free bytes
    df = "Filesystem      Size  Used Avail Use% Mounted on\ntmpfs            32G     0   32G   0% /dev/shm\n"
    assert "shm-too-small" not in findings(cli, tmp_path, df + RAY_SMALL["vllm 1111"])
