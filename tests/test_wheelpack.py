"""The running fwdoctor packed as a wheel (what `docker generate` puts in .fwdoctor/):
reproducible bytes, a RECORD that verifies, every package file. Installing it, and packing
it again from that install, is tests/test_project_docker.py's job (slow)."""

from __future__ import annotations

import base64
import hashlib
import zipfile

import fwdoctor
from fwdoctor.recipes import wheelpack


def test_the_wheel_is_the_same_bytes_every_time(tmp_path):
    first = wheelpack.write(tmp_path / "a")
    second = wheelpack.write(tmp_path / "b")
    assert first.path.name == f"fwdoctor-{fwdoctor.__version__}-py3-none-any.whl"
    assert first.path.read_bytes() == second.path.read_bytes()
    assert first.sha256 == hashlib.sha256(first.path.read_bytes()).hexdigest()


def test_every_entry_is_in_record_with_its_hash_and_size(tmp_path):
    wheel = wheelpack.write(tmp_path)
    archive = zipfile.ZipFile(wheel.path)
    info = f"fwdoctor-{fwdoctor.__version__}.dist-info"
    rows = [line.split(",") for line in archive.read(f"{info}/RECORD").decode().splitlines()]
    assert [r[0] for r in rows] == archive.namelist()  # RECORD lists every entry, itself last
    assert rows[-1] == [f"{info}/RECORD", "", ""]
    for name, digest, size in rows[:-1]:
        data = archive.read(name)
        assert digest == "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode(), name
        assert int(size) == len(data)
    assert "Tag: py3-none-any" in archive.read(f"{info}/WHEEL").decode()
    metadata = archive.read(f"{info}/METADATA").decode()
    assert "Name: fwdoctor" in metadata and f"Version: {fwdoctor.__version__}" in metadata
    assert "fwdoctor = fwdoctor.launch:run" in archive.read(f"{info}/entry_points.txt").decode()
    names = set(archive.namelist())
    assert {"fwdoctor/__init__.py", "fwdoctor/recipes/wheelpack.py", "fwdoctor/kb/torch.yaml"} <= names
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)
    assert all(i.date_time == (1980, 1, 1, 0, 0, 0) for i in archive.infolist())


def test_an_older_fwdoctor_wheel_in_the_folder_is_replaced(tmp_path):
    (tmp_path / "fwdoctor-0.0.1-py3-none-any.whl").write_bytes(b"old")
    wheel = wheelpack.write(tmp_path)
    assert sorted(p.name for p in tmp_path.glob("*.whl")) == [wheel.path.name]
