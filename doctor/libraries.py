"""cuDNN and NCCL as they appear on disk, in package managers and in version numbers: the
one description that probes, rules, the KB loader and recipes read.

Each library is one frozen `Library`: its file names (libcudnn.so.9 and the sub-libraries
libcudnn_ops.so.9 ...), its headers and their version macros, its pip wheels
(nvidia-cudnn-cu12, installed under site-packages/nvidia/cudnn whatever the CUDA major; the
CUDA 13 toolkit wheels' nvidia/cu13 folder is a toolkit's, see probes/cuda.py PIP_ROOTS),
its Debian and conda package names, and how it packs X.Y.Z into one integer.

Compatibility knowledge (which CUDA a cuDNN release serves, which wheels exist, NCCL bugs)
is not here: that is data with sources, in kb/libs.yaml. libs.yaml's `version_codes` rows
cite where the formulas below come from; the KB loader refuses rows that disagree.

doctor/probes/torch_child.py and recipes/scripts/verify_torch.py run inside a foreign
interpreter and cannot import this module; what they assume (the sonames in LIB_WORDS, the
cuDNN version-code formula) is checked against this description by tests/test_libraries.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fwdoctor import versions

# pip wheels end in -cuNN (nvidia-nccl-cu13; nvidia_nccl_cu13 in a dist-info name).
_WHEEL_CUDA = re.compile(r"[-_]cu(\d+)$")
# Debian: cuDNN 9 names the CUDA major in the package (libcudnn9-cuda-12); cuDNN 8 and NCCL
# put it in the version's revision (libcudnn8 8.9.7.29-1+cuda12.2, libnccl2 2.21.5-1+cuda12.4).
_DEB_NAME_CUDA = re.compile(r"-cuda-(\d+)$")
_DEB_VERSION_CUDA = re.compile(r"\+cuda(\d+)(?:\.\d+)?")


@dataclass(frozen=True)
class VersionCode:
    """How a library packs MAJOR.MINOR.PATCH into one integer (CUDNN_VERSION,
    NCCL_VERSION_CODE, torch.backends.cudnn.version()):
    MAJOR * major_factor + MINOR * minor_factor + PATCH, except that releases with
    MAJOR <= old_if_major_at_most and MINOR <= old_if_minor_at_most use old_major_factor."""

    old_if_major_at_most: int
    old_if_minor_at_most: int
    old_major_factor: int
    major_factor: int
    minor_factor: int

    def encode(self, version: str) -> int:
        """"2.30.7" -> 23007. ValueError for text that is no version."""
        found = versions.release(version)
        if found is None:
            raise ValueError(f"not a version: {version!r}")
        major, minor, patch = (list(found[:3]) + [0, 0])[:3]
        old = major <= self.old_if_major_at_most and minor <= self.old_if_minor_at_most
        return major * (self.old_major_factor if old else self.major_factor) + minor * self.minor_factor + patch

    def decode(self, code: int) -> str | None:
        """The inverse: 23007 -> "2.30.7", 8903 -> "8.9.3"; None for a code no release has."""
        for factor in (self.major_factor, self.old_major_factor):
            major, rest = divmod(code, factor)
            minor, patch = divmod(rest, self.minor_factor)
            if major and self.encode(f"{major}.{minor}.{patch}") == code:
                return f"{major}.{minor}.{patch}"
        return None


@dataclass(frozen=True)
class Library:
    """One library's files, headers, packages and version code (CUDNN, NCCL below)."""

    name: str  # "cudnn": fact-key area (cudnn.installs), libs.yaml `library`, pip folder nvidia/<name>
    title: str  # "cuDNN", for messages
    soname: str  # "libcudnn": libcudnn.so, libcudnn.so.9.1.0 and sub-libraries libcudnn_ops.so.9
    soname_major: int | None  # the .so.N of every release (NCCL 2.x: libnccl.so.2); None: the version's major
    headers: tuple[str, ...]  # header file names holding the version macros, most specific first
    version_macros: tuple[str, str, str]  # MAJOR, MINOR, PATCH #defines in those headers
    code_macro: str  # the #define holding the packed integer
    version_code: VersionCode
    wheel: str  # "nvidia-cudnn": the pip wheels are nvidia-cudnn-cuNN
    deb_packages: re.Pattern[str]  # runtime Debian packages (not -dev, not -static)
    conda_names: tuple[str, ...]
    tarball_globs: tuple[tuple[str, str], ...]  # (directory, fnmatch pattern) of unpacked archives
    embedded: bool  # the library file carries "NCCL version X.Y.Z+cudaA.B"

    # ------------------------------------------------------------------ files
    @property
    def lib_prefix(self) -> str:
        """"libcudnn.so": the main library is this name or this name + ".N[.N...]"."""
        return f"{self.soname}.so"

    def is_library_file(self, name: str) -> bool:
        """libcudnn.so and libcudnn.so.9.1.0, not libcudnn_ops.so.9 nor libcudnn.a."""
        return name == self.lib_prefix or name.startswith(self.lib_prefix + ".")

    def owns_file(self, name: str) -> bool:
        """Any file of the library's family, sub-libraries included (libcudnn_graph.so.9):
        the files a loader must take from one release."""
        return name.startswith(self.soname)

    def file_version(self, name: str) -> str | None:
        """The version in a library file name: libcudnn.so.9.1.0 -> "9.1.0", libnccl.so.2 ->
        "2"; None for the unversioned libcudnn.so, for sub-libraries and garbage."""
        return library_file_version(name, self.lib_prefix)

    def soname_file(self, version: str) -> str:
        """The file the dynamic loader asks for: libnccl.so.2 for any NCCL 2.x,
        libcudnn.so.9 for cuDNN 9.1.0."""
        major = self.soname_major if self.soname_major is not None else versions.major(version)
        return f"{self.lib_prefix}.{major}"

    # ------------------------------------------------------------------ headers
    def parse_header(self, text: str) -> str | None:
        """"9.24.0" from the MAJOR/MINOR/PATCH macros of one of `headers` (a missing PATCH
        reads as 0); None when they are absent. Never raises."""
        major, minor, patch = (_define(text, name) for name in self.version_macros)
        if major is None or minor is None:
            return None
        return f"{major}.{minor}.{patch if patch is not None else 0}"

    # ------------------------------------------------------------------ pip
    @property
    def pip_dir(self) -> str:
        """"nvidia/cudnn": where every -cuNN wheel of the library puts include/ and lib/,
        relative to site-packages (the cu12 and cu13 wheels share it)."""
        return f"nvidia/{self.name}"

    def wheel_for(self, cuda_major: int) -> str:
        """"nvidia-cudnn-cu12"."""
        return f"{self.wheel}-cu{cuda_major}"

    @property
    def dist_re(self) -> re.Pattern[str]:
        """Dist-info folder names of the wheels: group 1 the project, group 2 its version."""
        return re.compile(rf"^({re.escape(self.wheel.replace('-', '_'))}(?:_cu\d+)?)-([^-]+)\.dist-info$")

    # ------------------------------------------------------------------ facts
    @property
    def installs_key(self) -> str:
        return f"{self.name}.installs"

    @property
    def ld_first_key(self) -> str:
        return f"{self.name}.ld_first"


CUDNN = Library(
    name="cudnn",
    title="cuDNN",
    soname="libcudnn",
    soname_major=None,
    # Debian's cuDNN 9 packages ship cudnn_version_v9.h under the multiarch include folder
    # and point cudnn_version.h at it through alternatives; cuDNN <= 7 had no
    # cudnn_version.h and kept the macros in cudnn.h (cuDNN 8/9 headers: S-CUDNNHDR in libs.yaml).
    headers=("cudnn_version.h", "cudnn_version_v9.h", "cudnn_version_v8.h", "cudnn.h"),
    version_macros=("CUDNN_MAJOR", "CUDNN_MINOR", "CUDNN_PATCHLEVEL"),
    code_macro="CUDNN_VERSION",
    # cudnn_version.h of cuDNN 9.24.0: CUDNN_MAJOR * 10000 + CUDNN_MINOR * 100 + CUDNN_PATCHLEVEL;
    # of cuDNN 8.9.3: CUDNN_MAJOR * 1000 + ... (libs.yaml S-CUDNNHDR).
    version_code=VersionCode(old_if_major_at_most=8, old_if_minor_at_most=99, old_major_factor=1000, major_factor=10000, minor_factor=100),
    wheel="nvidia-cudnn",
    deb_packages=re.compile(r"^(libcudnn\d+|libcudnn\d+-cuda-\d+)$"),
    conda_names=("cudnn", "libcudnn"),
    tarball_globs=(("/usr/local", "cudnn*"), ("/opt", "cudnn*")),
    embedded=False,
)

NCCL = Library(
    name="nccl",
    title="NCCL",
    soname="libnccl",
    soname_major=2,
    headers=("nccl.h",),
    version_macros=("NCCL_MAJOR", "NCCL_MINOR", "NCCL_PATCH"),
    code_macro="NCCL_VERSION_CODE",
    # nccl.h: NCCL_VERSION(X,Y,Z) = (X <= 2 && Y <= 8) ? X*1000 + Y*100 + Z : X*10000 + Y*100 + Z
    # (libs.yaml S-NCCLH, S-NCCLHDR).
    version_code=VersionCode(old_if_major_at_most=2, old_if_minor_at_most=8, old_major_factor=1000, major_factor=10000, minor_factor=100),
    wheel="nvidia-nccl",
    deb_packages=re.compile(r"^libnccl\d+$"),
    conda_names=("nccl", "libnccl"),
    tarball_globs=(("/usr/local", "nccl*"), ("/opt", "nccl*")),
    embedded=True,
)

LIBRARIES: tuple[Library, ...] = (CUDNN, NCCL)
# Their names, as KB rows (libs.yaml `library`, build.yaml `lib`) and --nccl/--cudnn spell them.
NAMES: tuple[str, ...] = tuple(lib.name for lib in LIBRARIES)


def library(name: str) -> Library:
    """CUDNN for "cudnn", NCCL for "nccl"; KeyError naming the known ones otherwise."""
    for lib in LIBRARIES:
        if lib.name == name:
            return lib
    raise KeyError(f"unknown library {name!r} (known: {', '.join(NAMES)})")


def _define(text: str, name: str) -> int | None:
    """The integer a header #defines `name` as (`#define NCCL_MAJOR 2`, `(2)`, a trailing comment)."""
    match = re.search(rf"^[ \t]*#[ \t]*define[ \t]+{name}[ \t]+\(?(\d+)\)?[ \t]*(?:$|/[/*])", text, re.M)
    return int(match.group(1)) if match else None


def library_file_version(name: str, lib_prefix: str) -> str | None:
    """`Library.file_version` for a bare prefix: ("libnccl.so.2.30.7", "libnccl.so") -> "2.30.7"."""
    if not name.startswith(lib_prefix + "."):
        return None
    rest = name[len(lib_prefix) + 1:]
    return rest if re.fullmatch(r"\d+(?:\.\d+)*", rest) else None


def canonical(project: str) -> str:
    """A pip project name as PEP 503 compares them: nvidia_cudnn_cu12 -> nvidia-cudnn-cu12."""
    return re.sub(r"[-_.]+", "-", project).lower()


def pip_cuda_major(project: str) -> int | None:
    """nvidia-cudnn-cu12 -> 12 (also nvidia_nccl_cu13); a name without -cuNN -> None."""
    match = _WHEEL_CUDA.search(project)
    return int(match.group(1)) if match else None


def library_of_wheel(project: str) -> Library | None:
    """CUDNN for nvidia-cudnn-cu12 (any spelling), None for a wheel of no library here."""
    base = _WHEEL_CUDA.sub("", canonical(project))
    return next((lib for lib in LIBRARIES if lib.wheel == base), None)


def deb_cuda_major(name: str, version: str) -> int | None:
    """The CUDA major a Debian cuDNN/NCCL package was built for: "+cuda12.2" in the version
    (libcudnn8 8.9.7.29-1+cuda12.2, libnccl2 2.21.5-1+cuda12.4), else "-cuda-12" in the
    name (libcudnn9-cuda-12)."""
    match = _DEB_VERSION_CUDA.search(version) or _DEB_NAME_CUDA.search(name)
    return int(match.group(1)) if match else None


def deb_package_for_cuda(name: str, cuda_major: int) -> str:
    """The same Debian package for another CUDA major where the name says it
    (libcudnn9-cuda-12 -> libcudnn9-cuda-13); other names carry it in the version only."""
    return _DEB_NAME_CUDA.sub(f"-cuda-{cuda_major}", name)
