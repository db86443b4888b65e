"""The machine being inspected: the live host, or a folder treated as `/` (`--root DIR`).

Probes only see a machine through `Host`. Paths they pass and receive are *host-view*
paths ("/usr/local/cuda/bin/nvcc"), whatever folder they really live in. For a root
folder, every path is resolved inside it, absolute symlink targets included, and `..`
never climbs above it; no program is run (`run` returns None), and the environment comes
only from an env file.
"""

from __future__ import annotations

import errno
import os
import posixpath
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Callable, ClassVar, Mapping, Sequence

from fwdoctor import runner
from fwdoctor.probecache import ProbeCache

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
MAX_READ_BYTES = 4 * 1024 * 1024  # no probe needs more; protects against /dev/zero-like files
MAX_ENV_FILE_BYTES = 1024 * 1024  # an environment, not a data file
MAX_SYMLINK_HOPS = 40  # the kernel's own limit (ELOOP)


class UnreadableError(OSError):
    """A file exists but cannot be read (permission, not a regular file, I/O error)."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class EnvFileError(ValueError):
    """An --env-file that cannot be used; the message names the file and line."""


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "not a plain file"


def _open_regular(real: str, shown: str) -> IO[bytes]:
    """`real` opened for reading if it is a regular file; UnreadableError naming `shown`
    otherwise. Checked before opening (a FIFO blocks in open()) and again on the open
    descriptor (the path may have been swapped in between): O_NONBLOCK keeps a FIFO
    swapped in from blocking the open, O_NOFOLLOW refuses a symlink swapped in for the
    already-resolved last component."""
    st = os.stat(real)
    if stat.S_ISDIR(st.st_mode):
        raise UnreadableError(shown, "is a directory")
    if not stat.S_ISREG(st.st_mode):
        raise UnreadableError(shown, f"not a regular file ({_kind(st.st_mode)})")
    fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnreadableError(shown, f"not a regular file ({_kind(st.st_mode)})")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular_file(path: str, limit: int, flag: str) -> bytes:
    """A whole input file named on the command line (`flag PATH`), at most `limit` bytes.

    Raises ValueError naming it: absent, unreadable, not a regular file (/dev/zero, a
    FIFO: never opened), or bigger than `limit` (refused, not truncated: half a file
    would be judged as if it were whole)."""
    try:
        with _open_regular(path, path) as handle:
            data = handle.read(limit + 1)
    except UnreadableError as exc:
        raise ValueError(f"{flag} {path}: {exc.reason}") from None
    except OSError as exc:
        raise ValueError(f"{flag} {path}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise ValueError(f"{flag} {path}: too big (over {limit // (1024 * 1024)} MiB); is this the right file?")
    return data


@dataclass
class Host:
    """A view of one machine. Use `Host.live()` or `Host.at_root(DIR, env)`."""

    root: Path
    env: Mapping[str, str]
    live: bool
    # An image, not a machine (fwdoctor.image.host.ImageHost sets it): its /etc/hostname is
    # Docker's per-container file. Asked as a Host attribute so that no probe needs to
    # import the image package to tell (issue 29 item 8: the image readers depend on the
    # probes' declared reads, never the other way round).
    is_image: ClassVar[bool] = False
    command_timeout: float = runner.DEFAULT_TIMEOUT_S
    # Answers of version-style questions by the program file's identity (run_version);
    # None: always run (--no-cache, tests, and every root or image, where nothing runs).
    probe_cache: ProbeCache | None = field(default=None, repr=False, compare=False)
    _resolve_cache: dict[str, str] = field(default_factory=dict, repr=False)
    _entry_cache: dict[str, tuple[bool, str | None]] = field(default_factory=dict, repr=False)
    _listdir_cache: dict[str, list[str]] = field(default_factory=dict, repr=False)
    _memo: dict[str, Any] = field(default_factory=dict, repr=False)
    # The last path a probe asked about: named when a probe overruns its deadline (a read
    # on a stalled network mount never returns; the engine stops waiting for it).
    last_path: str = field(default="", repr=False, compare=False)

    @classmethod
    def live_host(cls, env: Mapping[str, str] | None = None, command_timeout: float = runner.DEFAULT_TIMEOUT_S,
                  probe_cache: ProbeCache | None = None) -> "Host":
        # A snapshot: nothing in the doctor mutates its own os.environ.
        return cls(Path("/"), dict(os.environ if env is None else env), live=True, command_timeout=command_timeout,
                   probe_cache=probe_cache)

    @classmethod
    def at_root(cls, root: str | os.PathLike[str], env: Mapping[str, str] | None = None) -> "Host":
        try:
            real = Path(root).resolve()
        except (RuntimeError, OSError):  # Python 3.11 reports a symlink loop as RuntimeError
            raise NotADirectoryError(f"--root {root}: too many levels of symbolic links") from None
        try:
            mode = os.stat(real).st_mode
        except OSError as exc:
            # Python 3.13's resolve() returns a looping path as it is, without raising: the
            # stat names the loop (ELOOP) as 3.11's RuntimeError did.
            loop = exc.errno == errno.ELOOP
            raise NotADirectoryError(f"--root {root}: {'too many levels of symbolic links' if loop else 'not a directory'}") from None
        if not stat.S_ISDIR(mode):
            raise NotADirectoryError(f"--root {root}: not a directory")
        merged = {"PATH": DEFAULT_PATH}
        merged.update(env or {})
        return cls(real, merged, live=False)

    def memo(self, key: str, compute: Callable[[], Any]) -> Any:
        """`compute()` once per host: for a parse several probes need (the dpkg database)."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    # ---------------------------------------------------------------- paths
    def resolve(self, path: str) -> str:
        """The host-view path with every symlink resolved, confined to the root.

        Dangling links resolve as far as they can (like `realpath -m`)."""
        path = posixpath.normpath("/" + path) if not path.startswith("/") else posixpath.normpath(path)
        self.last_path = path
        cached = self._resolve_cache.get(path)
        if cached is not None:
            return cached
        result = self._resolve(path)
        self._resolve_cache[path] = result
        return result

    def _resolve(self, path: str) -> str:
        parts = [p for p in path.split("/") if p]
        resolved: list[str] = []
        hops = 0
        while parts:
            part = parts.pop(0)
            if part in (".", ""):
                continue
            if part == "..":
                if resolved:
                    resolved.pop()  # never above the root
                continue
            found, target = self._entry_cached("/" + "/".join(resolved + [part]))
            if not found:
                resolved.append(part)
                resolved.extend(p for p in parts if p not in (".", ""))
                return posixpath.normpath("/" + "/".join(resolved))
            if target is not None:
                hops += 1
                if hops > MAX_SYMLINK_HOPS:
                    raise UnreadableError(path, "too many levels of symbolic links")
                if target.startswith("/"):
                    resolved = []
                parts = [p for p in target.split("/") if p] + parts
                continue
            resolved.append(part)
        return "/" + "/".join(resolved)

    def _entry_cached(self, view_path: str) -> tuple[bool, str | None]:
        """_entry once per path and host: resolving every file of a folder asked again about
        each folder above it (~900 lstat calls on a plain check, issue 30); like the resolved
        paths themselves, the answers hold for the host's one look at the filesystem."""
        known = self._entry_cache.get(view_path)
        if known is None:
            known = self._entry_cache[view_path] = self._entry(view_path)
        return known

    def _entry(self, view_path: str) -> tuple[bool, str | None]:
        """(exists, symlink target or None) for one host-view path, links not followed:
        the only filesystem question `resolve` asks (an image's in-memory tree answers it
        from its own nodes)."""
        candidate = self._real(view_path)
        try:
            st = os.lstat(candidate)
        except OSError:
            return False, None
        return True, (os.readlink(candidate) if stat.S_ISLNK(st.st_mode) else None)

    def _real(self, host_path: str) -> str:
        """The real filesystem path for an already-resolved host-view path."""
        if self.live:
            return host_path
        return str(self.root) + host_path if host_path != "/" else str(self.root)

    def real_path(self, path: str) -> str:
        """The real path to open for a host-view path (symlinks resolved in the root)."""
        return self._real(self.resolve(path))

    # ---------------------------------------------------------------- queries
    def exists(self, path: str) -> bool:
        return os.path.exists(self.real_path(path))

    def is_file(self, path: str) -> bool:
        return os.path.isfile(self.real_path(path))

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(self.real_path(path))

    def is_symlink(self, path: str) -> bool:
        parent = self.resolve(posixpath.dirname(path) or "/")
        return os.path.islink(self._real(posixpath.join(parent, posixpath.basename(path))))

    def readlink(self, path: str) -> str | None:
        """The raw link target, or None if `path` is not a symlink."""
        parent = self.resolve(posixpath.dirname(path) or "/")
        try:
            return os.readlink(self._real(posixpath.join(parent, posixpath.basename(path))))
        except OSError:
            return None

    def is_executable(self, path: str) -> bool:
        real = self.real_path(path)
        return os.path.isfile(real) and os.access(real, os.X_OK)

    def listdir(self, path: str) -> list[str]:
        """Sorted names in a directory; [] when absent or unreadable. Listed once per host
        (a copy each time): the CUDA, cuDNN, NCCL and driver probes each scan the same
        library folders, /usr/lib/x86_64-linux-gnu with its thousands of names four times
        (issue 30), and like the resolved paths the listing is of the host's one look."""
        real = self.real_path(path)
        names = self._listdir_cache.get(real)
        if names is None:
            try:
                names = sorted(os.listdir(real))
            except OSError:
                names = []
            self._listdir_cache[real] = names
        return list(names)

    def glob(self, directory: str, pattern: str) -> list[str]:
        """Host-view paths of entries of `directory` whose names match a fnmatch `pattern`."""
        import fnmatch

        # fnmatch.filter matches with one compiled pattern (on POSIX it is fnmatchcase for
        # every name); a name-by-name fnmatchcase looked the pattern up again for each of the
        # ~6,700 names a check globs (issue 30).
        return [posixpath.join(directory, n) for n in fnmatch.filter(self.listdir(directory), pattern)]

    def read_bytes(self, path: str, limit: int = MAX_READ_BYTES) -> bytes | None:
        """The file's first `limit` bytes, None when absent. Raises UnreadableError
        otherwise, and for anything but a regular file (a FIFO, socket or device is never
        opened: opening a FIFO blocks until a writer comes, /dev/zero never ends)."""
        real = self.real_path(path)
        try:
            if not os.path.lexists(real):
                return None
            with _open_regular(real, path) as handle:
                return handle.read(limit)
        except UnreadableError:
            raise
        except PermissionError:
            raise UnreadableError(path, "permission denied") from None
        except OSError as exc:
            raise UnreadableError(path, exc.strerror or str(exc)) from None

    def open_binary(self, path: str) -> IO[bytes]:
        """The file opened for a chunked, bounded scan (a library's prefix). Raises OSError
        (UnreadableError for anything but a regular file)."""
        return _open_regular(self.real_path(path), path)

    def read_text(self, path: str, limit: int = MAX_READ_BYTES) -> str | None:
        data = self.read_bytes(path, limit)
        return None if data is None else data.decode("utf-8", errors="replace")

    def stat(self, path: str) -> os.stat_result | None:
        try:
            return os.stat(self.real_path(path))
        except OSError:
            return None

    # ---------------------------------------------------------------- environment
    def path_list(self, var: str) -> list[str]:
        """A colon-separated variable as a list, empty entries dropped."""
        return [p for p in self.env.get(var, "").split(":") if p]

    def which(self, name: str, path: str | None = None) -> str | None:
        """The first executable `name` on PATH (host-view, unresolved), like `command -v`."""
        for directory in (path if path is not None else self.env.get("PATH", "")).split(":"):
            if not directory:
                continue
            candidate = posixpath.join(directory, name)
            if self.is_executable(candidate):
                return candidate
        return None

    # ---------------------------------------------------------------- commands
    def run(self, argv: Sequence[str], timeout: float | None = None) -> runner.CommandResult | None:
        """Run a program on a live host; None for a root folder, where nothing runs."""
        if not self.live:
            return None
        return runner.run(argv, timeout=timeout or self.command_timeout, env=self.env)

    def run_version(self, argv: Sequence[str], timeout: float | None = None) -> runner.CommandResult | None:
        """`run` for a question whose answer is a pure function of the program file
        (`nvcc --version`, `gcc -dumpfullversion`): served from `probe_cache` while the
        file is unchanged (fwdoctor/probecache.py). Never for live GPU or driver state."""
        if not self.live:
            return None
        if self.probe_cache is None:
            return self.run(argv, timeout)
        return self.probe_cache.run(argv, self.env, lambda: self.run(argv, timeout))


def parse_env_file(text: str, name: str = "env file") -> dict[str, str]:
    """KEY=VALUE lines, `#` comments, optional `export `, optional matching quotes.

    No shell expansion happens: `$HOME` stays `$HOME`. Raises EnvFileError naming the line.
    """
    env: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export "):].lstrip()
        key, sep, value = line.partition("=")
        key = key.strip()
        if not sep or not key or not (key[0].isalpha() or key[0] == "_") or not all(c.isalnum() or c == "_" for c in key):
            raise EnvFileError(f"{name}:{number}: expected KEY=VALUE, got {raw.strip()[:80]!r}")
        value = value.strip()
        if "\x00" in value:
            # No process environment can hold a NUL: refused here, not when a probe runs.
            raise EnvFileError(f"{name}:{number}: {key}: a NUL byte in the value")
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        env[key] = value
    return env


def load_env_file(path: str) -> dict[str, str]:
    try:
        text = read_regular_file(path, MAX_ENV_FILE_BYTES, "--env-file").decode("utf-8")
    except ValueError as exc:
        if isinstance(exc, UnicodeDecodeError):
            raise EnvFileError(f"--env-file {path}: not UTF-8 text") from None
        raise EnvFileError(str(exc)) from None
    return parse_env_file(text, name=path)
