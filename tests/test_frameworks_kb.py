"""frameworks.yaml against the real wheel files it cites (tests/data/frameworks/, README.md
there gives each file's URL and sha256): every nvidia-* requirement, jaxlib range and GPU
target list is the wheel's own, byte for byte."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from fwdoctor.kb import KB
from fwdoctor.probes.frameworks import parse_build_info, parse_metadata, parse_paddle_version

DATA = Path(__file__).resolve().parent / "data" / "frameworks"
SHIPPED = KB.load(areas=("frameworks",)).frameworks


def _meta(prefix: str) -> dict:
    (path,) = [p for p in DATA.glob(f"{prefix}-*.METADATA") if p.name.split("-")[0] == prefix.split("-")[0] and p.name.startswith(prefix + "-")]
    return parse_metadata(path.read_text())


def _extra(meta: dict, extra: str) -> dict[str, str]:
    return {n: s for n, s, e in meta["requires"] if e == extra and n.startswith("nvidia-")}


def test_every_fixture_file_has_the_sha256_its_readme_gives():
    rows = [line.split(" | ") for line in (DATA / "README.md").read_text().splitlines() if line.startswith("| ") and ".whl" in line]
    assert len(rows) >= 50
    for row in rows:
        name, sha = row[0][2:], row[-1].rstrip(" |")
        assert hashlib.sha256((DATA / name).read_bytes()).hexdigest() == sha, name


@pytest.mark.parametrize("release", SHIPPED.releases("jax"), ids=lambda r: r.version)
def test_each_jax_row_is_its_wheels_metadata(release):
    jax = _meta(f"jax-{release.version}")
    assert {"jaxlib": next(s for n, s, e in jax["requires"] if n == "jaxlib" and e is None)} == dict(release.companion)
    for build in release.builds:
        plugin = _meta(f"{build.package.replace('-', '_')}-{release.version}")
        assert dict(build.requires) == _extra(plugin, "with-cuda")
        # jax's cudaNN extra installs exactly this plugin at its own version.
        assert (build.package, f"<={release.version},>={release.version}", build.extra) in jax["requires"]


@pytest.mark.parametrize("release", SHIPPED.releases("tensorflow"), ids=lambda r: r.version)
def test_each_tensorflow_row_is_its_wheels_metadata_and_build_info(release):
    (build,) = release.builds
    assert dict(build.requires) == _extra(_meta(f"tensorflow-{release.version}"), "and-cuda")
    infos = list(DATA.glob(f"tensorflow-{release.version}-*build_info.py"))
    if infos:
        info = parse_build_info(infos[0].read_text())
        assert list(build.arch_list or ()) == info["cuda_compute_capabilities"]
        assert info["cuda_version"].startswith(build.cuda + ".")  # 12.5.1 in the 12.5 row
        assert str(info["cudnn_version"]) == build.cudnn.split(".")[0]
    else:
        assert build.arch_list is None  # never guessed


def test_the_paddle_rows_are_their_version_files():
    for release in SHIPPED.releases("paddle"):
        (build,) = release.builds
        (path,) = DATA.glob(f"{build.package.replace('-', '_')}-{release.version}-*version____init__.py")
        info = parse_paddle_version(path.read_text())
        assert (build.cuda, build.cudnn) == ((None, None) if info["cuda_version"] == "False" else (info["cuda_version"], info["cudnn_version"]))


def test_the_ptxas_floor_of_a_build_is_its_own_nvcc_requirement():
    assert SHIPPED.release("jax", "0.10.2").build("12").ptxas_min == "12.6"
    assert SHIPPED.release("tensorflow", "2.21.0").builds[0].ptxas_min == "12.5"


def test_the_test_kb_holds_the_same_frameworks_rows(test_kb):
    assert [r.version for r in test_kb.frameworks.releases("jax")] == [r.version for r in SHIPPED.releases("jax")]
