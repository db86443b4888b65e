#!/usr/bin/env python3
"""Written by `fwdoctor docker generate` into an image's build stage: create a conda
environment from a conda-lock.yml exactly, every file checked against the lock's hashes.

    python conda_install.py conda-lock.yml /opt/conda [--platform linux-64] [--cache DIR]

It needs py-rattler (the linker: it writes conda-meta/*.json, replaces prefix
placeholders, compiles nothing and runs no link scripts) and ruamel.yaml (a pure-Python
YAML reader), both installed hash-pinned beside it. For each conda package of the lock's
`main` category for the platform (default: the one this machine is, as rattler sees it):

1. fetch its url (https://, http:// or file://; no other network access: rattler links
   from the verified local copies, so it never downloads);
2. compare the file's sha256 (required) and md5 (when the lock has one) with the lock,
   and the name/version/build in the archive's info/index.json with the lock's entry;
3. link all of them into the prefix with rattler.install; then each conda-meta record's
   url is set back to the lock's url (rattler recorded the local copy's file:// url).

Any failure exits 1 with one line naming the package. Progress goes to stdout, one line a
step. Standard library + rattler + ruamel.yaml only: this file runs outside fwdoctor.
"""
import argparse
import asyncio
import hashlib
import os
import shutil
import sys
import tempfile
import urllib.parse
import urllib.request

FETCH_TIMEOUT_S = 120  # per socket operation, not per file: conda's torch is > 1 GB
CHUNK = 1 << 20


class InstallError(Exception):
    """One line for the build log, naming the package (or the lock) that failed."""


def say(text):
    print(f"conda_install: {text}", flush=True)


def read_lock(path, platform):
    """[(name, version, build, url, sha256, md5)] of the lock's conda packages for `platform`
    (conda-lock's unified format, version 1; the `main` category, as `conda-lock install`
    installs by default)."""
    from ruamel.yaml import YAML

    try:
        with open(path, encoding="utf-8") as handle:
            data = YAML(typ="safe", pure=True).load(handle)
    except Exception as exc:  # a YAML or OS error: either way the lock cannot be read
        raise InstallError(f"{path}: cannot read the lock: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
    if not isinstance(data, dict) or data.get("version") != 1 or not isinstance(data.get("package"), list):
        raise InstallError(f"{path}: not a conda-lock unified lockfile (version: 1 with a package list)")
    platforms = (data.get("metadata") or {}).get("platforms") or []
    if platform not in platforms:
        raise InstallError(f"{path}: no packages for platform {platform} (the lock has {', '.join(map(str, platforms)) or 'none'})")
    chosen, pip = {}, []
    for entry in data["package"]:
        if not isinstance(entry, dict) or entry.get("platform") != platform:
            continue
        name = str(entry.get("name"))
        if entry.get("manager") == "pip":
            pip.append(name)
            continue
        if entry.get("manager") != "conda":
            raise InstallError(f"{name}: unknown manager {entry.get('manager')!r} in {path}")
        if entry.get("category", "main") != "main" and "main" not in (entry.get("categories") or ()):
            continue
        digest = entry.get("hash") or {}
        sha256, md5 = digest.get("sha256"), digest.get("md5")
        label = f"{name} {entry.get('version')} {entry.get('build')}"
        if not sha256:
            raise InstallError(f"{label}: the lock has no sha256 for it: refusing to install an unverifiable file")
        url = entry.get("url")
        if not isinstance(url, str) or not url:
            raise InstallError(f"{label}: the lock has no url for it")
        record = (name, str(entry.get("version")), str(entry.get("build")), url, str(sha256).lower(), str(md5).lower() if md5 else None)
        if name in chosen and chosen[name] != record:
            raise InstallError(f"{name}: the lock names it twice for {platform} with different files")
        chosen[name] = record
    if pip:
        raise InstallError(f"{path} has pip packages ({', '.join(sorted(pip))}): the image installs pip packages from requirements.lock only")
    if not chosen:
        raise InstallError(f"{path}: no conda packages for platform {platform}")
    return list(chosen.values())


def fetch(url, dest, label):
    """Copy `url` to `dest`; (sha256, md5) of what was written."""
    scheme = urllib.parse.urlsplit(url).scheme
    sha256, md5 = hashlib.sha256(), hashlib.md5()
    try:
        if scheme == "file":
            source = urllib.request.url2pathname(urllib.parse.urlsplit(url).path)
            if not os.path.isfile(source):
                raise InstallError(f"{label}: {url}: no such file")
            handle = open(source, "rb")
        elif scheme in ("http", "https"):
            handle = urllib.request.urlopen(urllib.request.Request(url, headers={"User-Agent": "fwdoctor-conda-install"}), timeout=FETCH_TIMEOUT_S)
        else:
            raise InstallError(f"{label}: {url}: only https://, http:// and file:// URLs are fetched")
        with handle, open(dest, "wb") as out:
            for block in iter(lambda: handle.read(CHUNK), b""):
                sha256.update(block)
                md5.update(block)
                out.write(block)
    except InstallError:
        raise
    except Exception as exc:  # URLError, HTTPError, OSError, timeouts: all one line
        raise InstallError(f"{label}: cannot fetch {url}: {exc}")
    return sha256.hexdigest(), md5.hexdigest()


def verify(package, path, got_sha256, got_md5):
    import rattler

    name, version, build, url, sha256, md5 = package
    label = f"{name} {version} {build}"
    if got_sha256 != sha256:
        raise InstallError(f"{label}: sha256 mismatch for {url}: the lock says {sha256}, the file is {got_sha256}")
    if md5 and got_md5 != md5:
        raise InstallError(f"{label}: md5 mismatch for {url}: the lock says {md5}, the file is {got_md5}")
    try:
        index = rattler.IndexJson.from_package_archive(path)
    except Exception as exc:
        raise InstallError(f"{label}: {url} is not a conda package: {exc}")
    inside = (index.name.normalized, str(index.version), str(index.build))
    if inside != (name, version, build):
        raise InstallError(f"{label}: {url} holds {' '.join(inside)}, not what the lock names")


async def build_record(package, path, md5):
    import rattler

    url = package[3]
    # The record comes from the archive itself (info/index.json: depends, build_number,
    # noarch, ...): the lock's entry holds only part of it.
    record = await rattler.RepoDataRecord.from_package_archive(path)
    record.md5 = bytes.fromhex(md5)
    # The channel's base URL (the package URL without subdir and file name), as rattler's
    # own reader of conda-lock files records it.
    record.channel = url.rsplit("/", 2)[0] + "/"
    return record


def restore_urls(prefix, packages):
    """rattler recorded the local copies' file:// URLs: write the lock's URLs back."""
    import json

    by_file = {urllib.parse.unquote(url.rsplit("/", 1)[-1]): url for _, _, _, url, _, _ in packages}
    meta = os.path.join(prefix, "conda-meta")
    for entry in sorted(os.listdir(meta)):
        if not entry.endswith(".json"):
            continue
        path = os.path.join(meta, entry)
        with open(path, encoding="utf-8") as handle:
            record = json.load(handle)
        url = by_file.get(record.get("fn", ""))
        if url is None:
            continue
        record["url"] = url
        # Paths into this build's scratch cache mean nothing in the image.
        for key in ("extracted_package_dir", "package_tarball_full_path"):
            record.pop(key, None)
        if isinstance(record.get("link"), dict):
            record["link"].pop("source", None)
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(record, handle, indent=2, sort_keys=False)
            handle.write("\n")
        os.replace(tmp, path)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Create a conda environment from a conda-lock.yml, hashes verified.")
    parser.add_argument("lock")
    parser.add_argument("prefix")
    parser.add_argument("--platform", help="conda subdir (default: this machine's)")
    parser.add_argument("--cache", help="download and extraction folder (default: a temporary one, removed)")
    args = parser.parse_args(argv)
    try:
        import rattler
    except ImportError as exc:
        say(f"py-rattler is not importable here ({exc}): install it beside this script")
        return 1
    platform = args.platform or str(rattler.Platform.current())
    cache = args.cache or tempfile.mkdtemp(prefix="conda-install-")
    try:
        if os.path.exists(os.path.join(args.prefix, "conda-meta")):
            raise InstallError(f"{args.prefix} already holds a conda environment: the lock is installed into a new prefix only")
        packages = read_lock(args.lock, platform)
        say(f"{len(packages)} conda packages for {platform} from {args.lock}")
        downloads = os.path.join(cache, "downloads")
        os.makedirs(downloads, exist_ok=True)
        records = []
        for package in packages:
            name, version, build, url, _, _ = package
            filename = urllib.parse.unquote(url.rsplit("/", 1)[-1])
            if not filename.endswith((".conda", ".tar.bz2")) or "/" in filename or filename.startswith("."):
                raise InstallError(f"{name} {version} {build}: {url} does not name a .conda or .tar.bz2 file")
            path = os.path.join(downloads, filename)
            got_sha256, got_md5 = fetch(url, path, f"{name} {version} {build}")
            verify(package, path, got_sha256, got_md5)
            say(f"verified {name} {version} {build} ({os.path.getsize(path)} bytes, sha256 {got_sha256[:16]}...)")
            records.append(asyncio.run(build_record(package, path, got_md5)))
        say(f"linking {len(records)} packages into {args.prefix}")
        try:
            asyncio.run(rattler.install(records, target_prefix=args.prefix, cache_dir=os.path.join(cache, "pkgs"),
                                        platform=rattler.Platform(platform), execute_link_scripts=False, show_progress=False))
        except Exception as exc:
            raise InstallError(f"linking into {args.prefix} failed: {exc}")
        restore_urls(args.prefix, packages)
        say(f"done: {args.prefix} ({len(records)} packages, conda-meta written)")
        return 0
    except InstallError as exc:
        say(f"FAILED: {exc}")
        return 1
    finally:
        if not args.cache:
            shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
