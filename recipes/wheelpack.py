"""The running fwdoctor as a wheel, so an image can install it with --require-hashes.

fwdoctor is not on PyPI, so `docker generate` puts a wheel of the fwdoctor that runs it
into the build context. The wheel is packed from what is importable right now, which works
the same for an installed wheel (pipx, a venv) and for an editable source checkout:

- the files of the `fwdoctor` import package (and `fwdoctor.recipes`, which a source
  checkout keeps in another folder), without bytecode caches;
- the distribution's own metadata (METADATA, entry_points.txt, licenses) from its
  .dist-info, plus a new WHEEL and RECORD (PEP 427/376: sha256, urlsafe base64, no padding).

Reproducible: entries sorted, every timestamp 1980-01-01, fixed permissions, so the same
sources give the same bytes (and the same --hash in the build context).
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import io
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path

import fwdoctor

DIST = "fwdoctor"
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip entry can carry
# Metadata copied from the installed .dist-info; the installer's own records
# (RECORD, INSTALLER, REQUESTED, direct_url.json) describe that install, not a wheel.
_DIST_INFO_KEEP = ("METADATA", "entry_points.txt", "top_level.txt")
_SKIP_SUFFIXES = (".pyc", ".pyo")


class WheelError(RuntimeError):
    """The running fwdoctor cannot be packed (no distribution metadata); says why."""


@dataclass(frozen=True)
class Wheel:
    path: Path
    sha256: str
    version: str

    @property
    def requirement_line(self) -> str:
        return f"{self.path.name} --hash=sha256:{self.sha256}"


def _package_files() -> dict[str, Path]:
    """arcname -> file for every module and data file of the importable fwdoctor."""
    import fwdoctor.recipes

    roots = [("fwdoctor", Path(p)) for p in fwdoctor.__path__]
    roots += [("fwdoctor/recipes", Path(p)) for p in fwdoctor.recipes.__path__]
    files: dict[str, Path] = {}
    for prefix, root in roots:
        for path in sorted(root.rglob("*")):
            if not path.is_file() or "__pycache__" in path.parts or path.suffix in _SKIP_SUFFIXES:
                continue
            files.setdefault(f"{prefix}/{path.relative_to(root).as_posix()}", path)
    if "fwdoctor/__init__.py" not in files or "fwdoctor/recipes/__init__.py" not in files:
        raise WheelError(f"fwdoctor's package files were not found under {', '.join(str(r) for _, r in roots)}")
    return files


def _dist_info_files(dist: importlib.metadata.Distribution, info_dir: str) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for name in _DIST_INFO_KEEP:
        text = dist.read_text(name)
        if name == "METADATA" and text is None:
            text = dist.read_text("PKG-INFO")  # an .egg-info's name for the same core metadata
        if text is not None:
            out[f"{info_dir}/{name}"] = text.encode("utf-8")
    for entry in dist.files or ():
        parts = entry.parts
        # PEP 639 license files live in <name>.dist-info/licenses/.
        if len(parts) >= 3 and parts[0].endswith(".dist-info") and parts[1] == "licenses":
            out[f"{info_dir}/{'/'.join(parts[1:])}"] = Path(str(entry.locate())).read_bytes()
    if f"{info_dir}/METADATA" not in out:
        raise WheelError("the installed fwdoctor has no METADATA in its .dist-info")
    return out


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def build_bytes() -> tuple[str, bytes]:
    """(wheel file name, wheel bytes) of the running fwdoctor."""
    # A .dist-info first: run from a source checkout, the path also finds the checkout's
    # setuptools fwdoctor.egg-info (PKG-INFO, no license files), the fallback.
    found = sorted(importlib.metadata.distributions(name=DIST), key=lambda d: d.read_text("METADATA") is None)
    dist = found[0] if found else None
    if dist is None:
        raise WheelError("fwdoctor runs without distribution metadata (not installed by pip): "
                         "install it (`pip install .` or `pip install -e .`) or pass --fwdoctor-requirement") from None
    version = dist.version
    if version != fwdoctor.__version__:
        raise WheelError(f"the importable fwdoctor is {fwdoctor.__version__} but its metadata says {version}: reinstall it")
    info_dir = f"{DIST}-{version}.dist-info"
    entries: dict[str, bytes] = {name: path.read_bytes() for name, path in _package_files().items()}
    entries.update(_dist_info_files(dist, info_dir))
    entries[f"{info_dir}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: fwdoctor.recipes.wheelpack\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record_name = f"{info_dir}/RECORD"
    # The .dist-info goes last, RECORD at its end (the order `wheel` writes).
    names = sorted(n for n in entries if not n.startswith(info_dir)) + sorted(n for n in entries if n.startswith(info_dir))
    record = "".join(f"{n},{_record_hash(entries[n])},{len(entries[n])}\n" for n in names) + f"{record_name},,\n"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in [*((n, entries[n]) for n in names), (record_name, record.encode())]:
            info = zipfile.ZipInfo(name, date_time=ZIP_EPOCH)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return f"{DIST}-{version}-py3-none-any.whl", buffer.getvalue()


def write(folder: str | Path) -> Wheel:
    """Write the wheel into `folder` (created), replacing an older fwdoctor wheel there."""
    name, data = build_bytes()
    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    for old in target.glob(f"{DIST}-*.whl"):
        if old.name != name:
            old.unlink()
    path = target / name
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return Wheel(path, hashlib.sha256(data).hexdigest(), name.split("-")[1])
