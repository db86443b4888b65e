"""Conda match specs, channels, platforms and build strings, judged without a solver.

    parse_spec("pytorch=2.5.1=cuda126*")   -> CondaSpec(name="pytorch", version="==2.5.1", build="cuda126*")
    torch_build("cuda126_mkl_py311_h0_302") -> TorchBuild(variant="cu126", cuda="12.6", major=12)
    build_cuda_major("*cuda11*")            -> 11
    admits("3.11.*", "3.11.4")              -> True

Match specs are parsed by py-rattler (`fwdoctor[conda]`) when it is importable: the same
parser conda-lock's rattler backend and pixi use, so a spec it refuses is one the solver
would refuse. Without it, a strict pattern of fwdoctor's own accepts the plain forms
(`name`, `name VERSION [BUILD]`, `name=VERSION[=BUILD]`, `name==VERSION`, `name>=A,<B`,
`channel::name...`) and refuses the rest (bracket forms). Both paths give the same
normalised version text ("=2.5.1" -> "2.5.1.*", "=2.5.1=b" -> "==2.5.1", "2.5.1" -> "==2.5.1"),
and both refuse characters no conda spec needs (quotes, `$`, `;`, backticks, control
characters), so a spec can never smuggle a second command or line into an environment
file, a lock or a Dockerfile.

Pure: no network, no solver, nothing read from the machine.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from packaging.version import InvalidVersion, Version

try:  # optional extra fwdoctor[conda]
    import rattler as _rattler
except ImportError:  # pragma: no cover - exercised by forcing USE_RATTLER off in the tests
    _rattler = None

# Tests turn this off to exercise the fallback pattern on a machine that has py-rattler.
USE_RATTLER = _rattler is not None

# conda's own list of platform subdirectories (conda/conda, conda/base/constants.py,
# KNOWN_SUBDIRS); a lock for any other name would find no repodata.
KNOWN_SUBDIRS = (
    "noarch", "linux-32", "linux-64", "linux-aarch64", "linux-armv6l", "linux-armv7l", "linux-ppc64",
    "linux-ppc64le", "linux-s390x", "osx-64", "osx-arm64", "win-32", "win-64", "win-arm64", "zos-z",
)
DEFAULT_CHANNELS = ("conda-forge",)
DEFAULT_PLATFORMS = ("linux-64",)

# Characters a plain match spec may hold: name, operators, versions, globs, `::`, `|`, `,`
# and single spaces between the parts. Everything else (quotes, $, ;, `, \, brackets,
# newlines, tabs) is refused before any parser sees it.
_SPEC_CHARS = re.compile(r"^[A-Za-z0-9 ._\-=<>!~*,|:/+]+\Z")
_NAME = r"[A-Za-z0-9_][A-Za-z0-9._-]*"
_CHANNEL = r"[A-Za-z0-9][A-Za-z0-9._-]*(?:/[A-Za-z0-9._-]+)*"
_VERSION_ATOM = r"(?:==|!=|>=|<=|~=|>|<)?[0-9A-Za-z_.+!*]+"
_VERSION_SPEC = rf"{_VERSION_ATOM}(?:[,|]{_VERSION_ATOM})*"
_BUILD = r"[A-Za-z0-9_.*+]+"
_PLAIN = re.compile(rf"^(?:(?P<channel>{_CHANNEL})::)?(?P<name>{_NAME})\Z")
_SPACED = re.compile(rf"^(?:(?P<channel>{_CHANNEL})::)?(?P<name>{_NAME}) (?P<version>{_VERSION_SPEC})(?: (?P<build>{_BUILD}))?\Z")
_EQUALS = re.compile(rf"^(?:(?P<channel>{_CHANNEL})::)?(?P<name>{_NAME})(?P<op>==?)(?P<version>[0-9A-Za-z_.+!*]+)(?:=(?P<build>{_BUILD}))?\Z")
_OPERATOR = re.compile(rf"^(?:(?P<channel>{_CHANNEL})::)?(?P<name>{_NAME})(?P<version>(?:!=|>=|<=|~=|>|<)[0-9A-Za-z_.+!*]+(?:[,|]{_VERSION_ATOM})*)\Z")

# Channel names as conda-forge/anaconda.org spell them ("conda-forge", "nvidia",
# "my-org/label/dev"); URLs with only characters that need no quoting anywhere.
_CHANNEL_NAME = re.compile(rf"^{_CHANNEL}\Z")
_URL_CHARS = re.compile(r"^[A-Za-z0-9._~:/%@+=,-]+\Z")


class CondaSpecError(ValueError):
    """A conda spec, channel or platform that fwdoctor will not pass on; says why."""


@dataclass(frozen=True)
class CondaSpec:
    """One match spec. `version` is normalised conda version-spec text, `build` a build string or glob."""

    text: str  # as written (stripped)
    name: str  # lowercase
    version: str | None = None  # "==2.5.1", "3.11.*", ">=12,<13"; None: any
    build: str | None = None  # "cuda126*"; None: any
    channel: str | None = None  # "conda-forge" in "conda-forge::pytorch"


def validator() -> str:
    """Which parser judges match specs here (for notes and reports)."""
    if USE_RATTLER and _rattler is not None:
        return f"py-rattler {getattr(_rattler, '__version__', '')}".strip()
    return "fwdoctor's strict pattern (py-rattler not installed: pip install 'fwdoctor[conda]')"


def parse_spec(text: str) -> CondaSpec:
    """A CondaSpec, or CondaSpecError saying what is wrong with `text`."""
    spec = text.strip()
    if not spec:
        raise CondaSpecError("empty spec")
    if not _SPEC_CHARS.match(spec) or "  " in spec:
        raise CondaSpecError("has a character no plain conda spec needs (quotes, $, ;, brackets, backslash, tab, newline or doubled space)")
    if USE_RATTLER and _rattler is not None:
        return _parse_rattler(spec)
    return _parse_pattern(spec)


def _parse_rattler(spec: str) -> CondaSpec:
    try:
        match = _rattler.MatchSpec(spec)
    except Exception as exc:  # rattler raises its own InvalidMatchSpecError family
        raise CondaSpecError(f"not a conda match spec (py-rattler: {str(exc).splitlines()[0]})") from None
    name = match.name.normalized if hasattr(match.name, "normalized") else str(match.name)
    version = str(match.version) if match.version is not None else None
    channel = getattr(match.channel, "name", None) if match.channel is not None else None
    if not name or not re.fullmatch(_NAME, name):
        raise CondaSpecError(f"{name!r} is not a plain package name")
    return CondaSpec(spec, name.lower(), None if version in (None, "*") else version, match.build or None, channel)


def _parse_pattern(spec: str) -> CondaSpec:
    for pattern in (_PLAIN, _SPACED, _EQUALS, _OPERATOR):
        m = pattern.match(spec)
        if m is None:
            continue
        parts = m.groupdict()
        version, build = parts.get("version"), parts.get("build")
        if pattern is _EQUALS:
            if parts["op"] == "==" or build is not None:
                version = f"=={version}"  # name=V=B and name==V pin V exactly
            elif not version.endswith("*"):
                version = f"{version}.*"  # name=V is fuzzy: V.*
        elif pattern is _SPACED and version is not None and re.fullmatch(r"[0-9A-Za-z_.+!]+", version):
            version = f"=={version}"  # a bare version in the spaced form is exact
        if version is not None:
            _check_version_spec(version)
        return CondaSpec(spec, parts["name"].lower(), None if version in (None, "*") else version, build, parts.get("channel"))
    raise CondaSpecError("not a plain conda match spec (name, name=VERSION[=BUILD], name VERSION [BUILD], name>=A,<B, channel::name...)")


def _check_version_spec(text: str) -> None:
    for alternative in text.split("|"):
        for atom in alternative.split(","):
            op, version = _split_atom(atom)
            body = version[:-2] if version.endswith(".*") else version.rstrip("*")
            if version == "*" or not body:
                continue
            try:
                Version(body)
            except InvalidVersion:
                raise CondaSpecError(f"{atom!r} is not a version fwdoctor can compare") from None


# --------------------------------------------------------------------------- versions
def _split_atom(atom: str) -> tuple[str, str]:
    m = re.match(r"^(==|!=|>=|<=|~=|>|<|=)?(.*)\Z", atom.strip())
    assert m is not None
    return m.group(1) or "", m.group(2)


def admits(version_spec: str | None, version: str) -> bool:
    """Whether a conda version spec admits `version`. ValueError when it cannot be judged."""
    if version_spec is None or version_spec.strip() in ("", "*"):
        return True
    if USE_RATTLER and _rattler is not None:
        try:
            return bool(_rattler.VersionSpec(version_spec).matches(_rattler.Version(version)))
        except Exception as exc:
            raise ValueError(f"{version_spec!r}: {exc}") from None
    return any(all(_admits_atom(atom, version) for atom in alternative.split(",")) for alternative in version_spec.split("|"))


def _admits_atom(atom: str, version: str) -> bool:
    op, text = _split_atom(atom)
    try:
        have = Version(version)
        if text == "*":
            return True
        if text.endswith("*"):
            prefix = Version(text.rstrip("*").rstrip("."))
            same = have.release[: len(prefix.release)] == prefix.release
            return not same if op == "!=" else same
        want = Version(text)
    except InvalidVersion:
        raise ValueError(f"{atom!r} or {version!r} is not a comparable version") from None
    if op == "=":  # inside a spec, "=V" is "V.*"
        return have.release[: len(want.release)] == want.release
    if op == "~=":
        return have >= want and have.release[: len(want.release) - 1] == want.release[:-1]
    return {"": have == want, "==": have == want, "!=": have != want, ">=": have >= want,
            "<=": have <= want, ">": have > want, "<": have < want}[op]


def pinned_version(version_spec: str | None, parts: int) -> str | None:
    """The one version a spec pins to `parts` components ("==2.5.1" / "2.5.1.*" -> "2.5.1"
    for parts=3; "12.6.*" / "==12.6" -> "12.6" for parts=2); None when it pins none."""
    if version_spec is None:
        return None
    m = re.fullmatch(r"(?:==)?(\d+(?:\.\d+)*)(?:\.\*)?", version_spec.strip())
    if m is None or len(m.group(1).split(".")) != parts:
        return None
    return m.group(1)


def admitted_majors(version_spec: str | None, majors: range) -> set[int]:
    """The majors in `majors` of which the spec admits some X.Y (Y in 0..20)."""
    return {major for major in majors if any(admits(version_spec, f"{major}.{minor}") for minor in range(21))}


def admitted_minors(version_spec: str | None, major: int) -> set[int]:
    """The minors of `major` (0..40) of which the spec admits some major.minor.patch."""
    return {minor for minor in range(41) if any(admits(version_spec, f"{major}.{minor}.{patch}") for patch in (0, 1, 9, 99))}


# --------------------------------------------------------------------------- build strings
@dataclass(frozen=True)
class TorchBuild:
    """What a pytorch build string says: the variant ("cu126", "cpu", "cuda" when the CUDA
    version is not in it) and, for CUDA builds, the CUDA it names (major only for "cuda12*")."""

    variant: str
    cuda: str | None  # "12.6"; None: CPU, or not named
    major: int | None


# conda-forge: cuda126_mkl_py311_h..._302, older cuda120py311h..._300; the pytorch channel:
# py3.11_cuda12.1_cudnn8.9.2_0. "cuda" must start the string or follow "_" or "*".
_CUDA_DOTTED = re.compile(r"(?:^|[_*])cuda(\d+)\.(\d+)(?![\d.])")
_CUDA_DIGITS = re.compile(r"(?:^|[_*])cuda(\d{2,3})(?!\d)")
_CUDA_BARE = re.compile(r"(?:^|[_*])cuda(?=\*|_|\Z)")
_CPU = re.compile(r"(?:^|[_*])cpu(?=\*|_|\Z)")


def _cuda_of_digits(digits: str) -> tuple[int, int | None]:
    if len(digits) == 3:  # "126" -> 12.6, "100" -> 10.0
        return int(digits[:2]), int(digits[2])
    if digits.startswith("9"):  # "92" -> 9.2 (before CUDA 10)
        return 9, int(digits[1])
    return int(digits), None  # "12" -> CUDA 12, minor not named


def build_cuda(build: str | None) -> tuple[int, int | None] | None:
    """(major, minor or None) of the CUDA a build string or glob names; None when it names none."""
    if not build:
        return None
    text = build.lower()
    m = _CUDA_DOTTED.search(text)
    if m:
        return int(m.group(1)), int(m.group(2))
    m = _CUDA_DIGITS.search(text)
    if m:
        return _cuda_of_digits(m.group(1))
    return None


def build_cuda_major(build: str | None) -> int | None:
    found = build_cuda(build)
    return found[0] if found else None


def torch_build(build: str | None) -> TorchBuild | None:
    """The variant a pytorch build string names; None when it names neither CPU nor CUDA."""
    if not build:
        return None
    cuda = build_cuda(build)
    if cuda is not None:
        major, minor = cuda
        if minor is None:
            return TorchBuild("cuda", None, major)
        return TorchBuild(f"cu{major}{minor}", f"{major}.{minor}", major)
    text = build.lower()
    if _CPU.search(text):
        return TorchBuild("cpu", None, None)
    if _CUDA_BARE.search(text):
        return TorchBuild("cuda", None, None)
    return None


# --------------------------------------------------------------------------- channels, platforms
def check_channel(text: str) -> str:
    """A channel name ("conda-forge", "my-org/label/dev") or an http(s)/file URL, returned
    stripped; CondaSpecError for anything else (whitespace, quotes, shell characters)."""
    channel = text.strip()
    if not channel:
        raise CondaSpecError("empty channel")
    if "://" not in channel:
        if not _CHANNEL_NAME.match(channel):
            raise CondaSpecError(f"{channel!r} is not a channel name (letters, digits, '.', '_', '-', '/') or an http(s)/file URL")
        return channel
    if not _URL_CHARS.match(channel):
        raise CondaSpecError(f"{channel!r}: a channel URL may hold only letters, digits and . _ ~ : / % @ + = , - (no spaces, quotes or shell characters)")
    parts = urlsplit(channel)
    if parts.scheme not in ("http", "https", "file"):
        raise CondaSpecError(f"{channel!r}: only http://, https:// and file:// channel URLs")
    if parts.scheme == "file":
        if parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
            raise CondaSpecError(f"{channel!r}: a file channel is file:///ABSOLUTE/PATH")
    elif not parts.hostname:
        raise CondaSpecError(f"{channel!r}: no host")
    if ".." in parts.path.split("/"):
        raise CondaSpecError(f"{channel!r}: '..' in the path")
    return channel


def check_platform(text: str) -> str:
    platform = text.strip()
    if platform not in KNOWN_SUBDIRS:
        raise CondaSpecError(f"{platform!r} is not a conda platform ({', '.join(KNOWN_SUBDIRS)})")
    return platform
