"""Run INSIDE the private mount namespace that `unshare --mount` made: perform the mounts
a manifest lists (written by world.py), then exec the command. Standalone (run by path
with `python -I -S`): imports nothing from the repository, so it works from any folder.

    python -I -S inside.py MANIFEST.json -- COMMAND ARGS...

Mounts go through mount(2) by ctypes (one call each, no `mount` process per entry).
An overlay hides the mounts below its target (/dev/pts, /dev/shm), so those are bound
back on top of it from a recursive bind of the original taken first.
"""

import ctypes
import json
import os
import sys

MS_RDONLY = 1
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18

_libc = ctypes.CDLL(None, use_errno=True)


def mount(source, target, fstype, flags, data=None):
    enc = lambda s: None if s is None else s.encode()  # noqa: E731
    if _libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {source} on {target} ({fstype or 'bind'}): {os.strerror(err)}")


def submounts(target):
    """Mount points strictly below `target`, outermost first, each once."""
    points = []
    with open("/proc/self/mountinfo") as handle:
        for line in handle:
            point = line.split(" ")[4]
            point = point.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")
            if point.startswith(target.rstrip("/") + "/") and point not in points:
                points.append(point)
    points.sort(key=lambda p: p.count("/"))
    outer = []
    for point in points:
        if not any(point.startswith(o + "/") for o in outer):
            outer.append(point)
    return outer


def overlay(step, keep_root, number):
    target, stage = step["target"], step["stage"]
    below = submounts(target)
    keep = os.path.join(keep_root, str(number))
    if below:
        os.makedirs(keep)
        mount(target, keep, None, MS_BIND | MS_REC)
    # Read-only overlay: the stage above, the real folder below; no upper layer, so nothing
    # the command does there can reach the real folder.
    mount("overlay", target, "overlay", 0, f"lowerdir={stage}:{target}")
    for point in below:
        mount(os.path.join(keep, os.path.relpath(point, target)), point, None, MS_BIND | MS_REC)


def main(argv):
    if len(argv) < 4 or argv[2] != "--":
        sys.stderr.write("usage: inside.py MANIFEST.json -- COMMAND ARGS...\n")
        return 2
    with open(argv[1]) as handle:
        manifest = json.load(handle)
    # unshare(1) already makes the new namespace's mounts private; say so again, as a
    # shared mount would carry every mount below back to the real host.
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    for number, step in enumerate(manifest["steps"]):
        if step["op"] == "overlay":
            overlay(step, manifest["keep"], number)
        elif step["op"] == "bind":
            mount(step["source"], step["target"], None, MS_BIND | (MS_REC if step.get("recursive") else 0))
        else:
            raise ValueError(f"unknown step {step!r}")
    env = dict(os.environ)
    env.update(manifest.get("env", {}))
    command = argv[3:]
    try:
        os.execvpe(command[0], command, env)
    except OSError as exc:
        sys.stderr.write(f"gpuhost: cannot run {command[0]}: {exc.strerror}\n")
        return 127


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except OSError as exc:
        sys.stderr.write(f"gpuhost: {exc}\n")
        sys.exit(125)
