"""The torch probe reads Requires-Dist without packaging.requirements (an import that costs
a plain check ~25 ms): its small parser must agree with packaging's on every line of the
recorded METADATA files and on the PEP 508 shapes real wheels use."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from packaging.requirements import InvalidRequirement, Requirement

from conftest import DATA
from fwdoctor.probes.torch import _requirement


def _expected(text: str) -> tuple[str, str] | None:
    try:
        req = Requirement(text)
    except InvalidRequirement:
        return None
    if req.url or (req.marker is not None and "extra" in str(req.marker)):
        return None
    return req.name, str(req.specifier)


def _requires_lines() -> list[str]:
    lines = []
    for path in sorted((DATA / "torch").glob("METADATA-*")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("Requires-Dist:"):
                lines.append(line.partition(":")[2].strip())
    return lines


@pytest.mark.parametrize("line", _requires_lines())
def test_every_recorded_requires_dist_line_parses_as_packaging_parses_it(line):
    assert _requirement(line) == _expected(line)


@pytest.mark.parametrize(
    "line",
    [
        'nvidia-nccl-cu12 (==2.21.5) ; platform_system == "Linux"',
        "bar[x,y] ~= 1.2",
        'opt-einsum>=3.3; extra == "opt-einsum"',
        "pkg @ https://example.invalid/pkg-1.0-py3-none-any.whl",
        "typing_extensions>=4.10.0",
    ],
)
def test_pep508_shapes_parse_as_packaging_parses_them(line):
    assert _requirement(line) == _expected(line)


_names = st.from_regex(r"[a-z][a-z0-9_.-]{0,10}[a-z0-9]", fullmatch=True)
_specs = st.sampled_from(["", "==2.1.0", ">=1.0,<2", "~=3.4", "!=1.5", "===weird", "== 1.0.*"])
_markers = st.sampled_from(["", '; platform_system == "Linux"', '; extra == "dev"', "; python_version < '3.12'"])


@given(_names, _specs, _markers)
def test_generated_requirements_parse_as_packaging_parses_them(name, spec, marker):
    line = f"{name}{spec}{marker}"
    assert _requirement(line) == _expected(line)
