"""Shared by tests/test_image_stream.py and tests/test_image_archive.py: hand-built tars,
and a small real image built on the CI base image (.ci/setup-docker.sh) in three layers:

1. a pip-style torch install (torch/version.py + torch-2.13.0.dist-info/METADATA, the
   files fwdoctor's torch probe reads), NCCL's header and a stand-in libnccl.so.2 (8 MB
   of zeros around the "NCCL version 2.21.5+cuda12.4" string the real library carries in
   .rodata, see doctor/probes/libscan.py; its name gives no full version, so only the
   bounded scan finds 2.21.5 and CUDA 12), and folders /opt/gone, /opt/keep, /opt/opq;
2. `RUN rm` of /opt/gone, /opt/keep/old.txt and /opt/opq (then re-made with new.txt):
   the engine records these as `.wh.` whiteout files in the layer;
3. ENV, USER and ENTRYPOINT in the image config.
"""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

BASE_IMAGE = "fwdoctor-e2e-base:bookworm"
LAYERED_TAG = "fwdoctor-test-image-layers:1"
BIG_TAG = "fwdoctor-test-image-big:1"
# Images only the tests build and name: removed when a run ends (tests/conftest.py).
TEST_TAGS = (LAYERED_TAG, BIG_TAG)
SITE = "/usr/local/lib/python3.11/dist-packages"

LAYERED_DOCKERFILE = f"""\
FROM {BASE_IMAGE}
RUN mkdir -p {SITE}/torch {SITE}/torch-2.13.0.dist-info /usr/local/include /opt/gone /opt/keep /opt/opq \\
 && printf "__version__ = '2.13.0+cu124'\\ncuda = '12.4'\\ngit_version = 'abc'\\n" > {SITE}/torch/version.py \\
 && printf "Metadata-Version: 2.1\\nName: torch\\nVersion: 2.13.0+cu124\\nRequires-Dist: filelock\\nRequires-Dist: nvidia-nccl-cu12==2.21.5; platform_system == 'Linux'\\n" > {SITE}/torch-2.13.0.dist-info/METADATA \\
 && printf "#define NCCL_MAJOR 2\\n#define NCCL_MINOR 21\\n#define NCCL_PATCH 5\\n" > /usr/local/include/nccl.h \\
 && python3 -c "open('/usr/local/lib/libnccl.so.2','wb').write(bytes(3<<20) + b'NCCL version 2.21.5+cuda12.4' + bytes(5<<20))" \\
 && echo x > /opt/gone/file && echo y > /opt/keep/old.txt && echo o > /opt/opq/old.txt
RUN rm -rf /opt/gone /opt/keep/old.txt /opt/opq && mkdir /opt/opq && echo n > /opt/opq/new.txt
ENV FWDOCTOR_IMAGE_TEST=1 LD_LIBRARY_PATH=/usr/local/lib
USER 65534
ENTRYPOINT ["/bin/true"]
"""


def tar_bytes(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as archive:
        for info, data in members:
            if data is not None:
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
            else:
                archive.addfile(info)
    return buf.getvalue()


def member(name: str, kind: bytes = tarfile.REGTYPE, mode: int = 0o644, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.linkname = kind, mode, linkname
    return info


def docker_engine():
    """A connected docker SDK client with the base image, or None."""
    try:
        import docker

        client = docker.from_env(timeout=600)
        client.ping()
        client.images.get(BASE_IMAGE)
        return client
    except Exception:
        return None


def unavailable(reason: str) -> None:
    """Skip an e2e test for `reason`, or fail it under FWDOCTOR_REQUIRE_DOCKER=1 (CI started
    the engine and the local index: the tests must run there)."""
    if os.environ.get("FWDOCTOR_REQUIRE_DOCKER") == "1":
        pytest.fail(f"FWDOCTOR_REQUIRE_DOCKER=1 but {reason} (run .ci/setup-docker.sh)")
    pytest.skip(reason)


def required_engine():
    """The docker SDK client for an e2e test module: with the engine and the base image
    (FWDOCTOR_E2E_BASE overrides the name), or `unavailable` saying what is missing."""
    base = os.environ.get("FWDOCTOR_E2E_BASE", BASE_IMAGE)
    try:
        import docker
    except ImportError:
        unavailable("the docker SDK is not installed")
    try:
        client = docker.from_env(timeout=600)
        client.ping()
    except Exception as exc:
        unavailable(f"no Docker engine reachable: {str(exc).splitlines()[0][:120]}")
    try:
        client.images.get(base)
    except Exception:
        unavailable(f"base image {base} missing")
    return client


def build(tag: str, dockerfile: str, context: Path) -> None:
    """`docker build` (the CLI: the SDK's build needs a tarred context)."""
    context.mkdir(parents=True, exist_ok=True)
    (context / "Dockerfile").write_text(dockerfile)
    subprocess.run(["docker", "build", "-q", "-t", tag, str(context)], check=True, capture_output=True, timeout=600)


# ----------------------------------------------------------------------------- leftovers
# A run's builds leave BuildKit cache behind (each test build's lock names a fresh local index
# port, so its big layers are new every run): ~5-9 GB a run on the vfs store, which once
# filled a 32 GB disk. `remove_leftovers` is called once when a whole run ends (the xdist
# controller, after every worker: a worker's cache may still serve another's next build).
def _created_at(text: str) -> float:
    """An engine timestamp ("2026-12-03T23:10:26.347631465Z") as seconds since the epoch."""
    main, _, fraction = text.rstrip("Z").partition(".")
    return datetime.fromisoformat(main + "+00:00").timestamp() + float(f"0.{fraction or 0}")


def remove_leftovers(since: float, timeout: float = 120) -> list[str]:
    """Remove what the tests made since `since` (seconds since the epoch) and nothing else:
    the images of TEST_TAGS, dangling (untagged) images created since then, and the build
    cache records created since then that no build is using. Images and cache that were
    there before, or that are tagged by anyone, stay. Returns what was done, one line each;
    never raises (a cleanup must not fail a run)."""
    done: list[str] = []
    try:
        import docker

        client = docker.from_env(timeout=timeout)
        client.ping()
    except Exception:  # noqa: BLE001 - no SDK or no engine: nothing was built
        return done
    for tag in TEST_TAGS:
        try:
            client.images.remove(tag, force=True)
            done.append(f"removed image {tag}")
        except Exception:  # noqa: BLE001 - not built in this run
            pass
    try:
        dangling = client.api.images(filters={"dangling": True})
    except Exception:  # noqa: BLE001
        dangling = []
    for image in dangling:
        if float(image.get("Created") or 0) >= since:
            try:
                client.images.remove(image["Id"])  # not forced: one a container uses stays
                done.append(f"removed dangling image {image['Id'][:19]}")
            except Exception:  # noqa: BLE001
                pass
    done += _prune_build_cache(client, since)
    return done


def _prune_build_cache(client: Any, since: float) -> list[str]:
    """Prune the build cache records created since `since` and not in use. The engine's
    prune takes one `id` filter value per call; a record that is another's parent goes only
    after its child, so a few passes, until a pass frees nothing."""
    freed: list[str] = []
    for _ in range(4):
        try:
            records = client.df().get("BuildCache") or []
        except Exception:  # noqa: BLE001
            break
        ours = [r for r in records if not r.get("InUse") and _created_at(str(r.get("CreatedAt") or "1970-01-01T00:00:00Z")) >= since]
        if not ours:
            break
        deleted: list[str] = []
        for record in ours:
            try:
                answer = client.api.prune_builds(filters={"id": [record["ID"]]}, all=True)
            except Exception:  # noqa: BLE001
                continue
            deleted += (answer or {}).get("CachesDeleted") or []
        freed += [f"pruned build cache {cache_id}" for cache_id in deleted]
        if not deleted:
            break
    return freed
