"""Where network work goes, and why a place did not answer (issue 29, item 3).

Before pip resolves a lock, each index and find-links location is asked once with a short
timeout, so an unreachable one is named at once with the reason (DNS, refused, TLS, HTTP
status, no answer) instead of pip's "No matching distribution" minutes later. pip's own
configuration is not used for a lock (it names everything it was resolved from); the
settings this machine has are named as ignored, with the flag that passes each explicitly.
A plan's pip step (install/fix --apply) names the indexes it asks and is failed at once
when one does not answer; there pip's configuration is the user's and stays honoured.
"""

from __future__ import annotations

import http.client
import os
import socket
import ssl
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Mapping, Sequence

PROBE_TIMEOUT_S = 10.0  # one connection: an index that needs longer to say hello is down
# What pip is told (pip's defaults are --timeout 15 and --retries 5: a dead find-links URL
# then costs minutes of silent retries).
PIP_SOCKET_TIMEOUT_S = 15
PIP_RETRIES = 1


def reason(exc: BaseException, timeout: float = PROBE_TIMEOUT_S) -> str:
    """A short, classified reason for a failed request: 'DNS: ...', 'connection refused',
    'TLS: ...', 'HTTP 503 Service Unavailable', 'no answer within 10 s'."""
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {exc.reason}".strip()
    inner = exc.reason if isinstance(exc, urllib.error.URLError) and isinstance(exc.reason, BaseException) else exc
    if isinstance(inner, socket.gaierror):
        return f"DNS: the host name does not resolve ({inner.strerror or inner})"
    if isinstance(inner, ConnectionRefusedError):
        return "connection refused (nothing listens on that port)"
    if isinstance(inner, ssl.SSLError):
        return f"TLS: {getattr(inner, 'reason', None) or inner} (is it plain http?)" if "WRONG_VERSION" in str(inner) else f"TLS: {inner}"
    if isinstance(inner, (TimeoutError, socket.timeout)):
        return f"no answer within {timeout:g} s"
    if isinstance(inner, http.client.HTTPException):
        return f"not an HTTP answer ({type(inner).__name__}: {inner})"
    if isinstance(inner, OSError):
        return inner.strerror or str(inner)
    if isinstance(exc, urllib.error.URLError):
        return str(exc.reason)
    return str(exc)


def _context(cert: str | None) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=cert) if cert else ssl.create_default_context()


def probe_url(url: str, timeout: float = PROBE_TIMEOUT_S, cert: str | None = None, missing_ok: bool = True) -> str | None:
    """None when `url` answers (any status below 500; a 404 too when `missing_ok`: an index
    without that project still answered), else the reason. Reads the headers only."""
    request = urllib.request.Request(url, headers={"User-Agent": "fwdoctor-probe"})
    try:
        opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=_context(cert)))
        with opener.open(request, timeout=timeout):
            return None
    except urllib.error.HTTPError as exc:
        if exc.code < 400 or (missing_ok and exc.code == 404):
            return None
        return reason(exc, timeout)
    except (OSError, ValueError, http.client.HTTPException) as exc:
        return reason(exc, timeout)


def probe_sources(indexes: Sequence[str], find_links: Sequence[str], project: str = "pip",
                  timeout: float = PROBE_TIMEOUT_S, cert: str | None = None) -> list[tuple[str, str]]:
    """(location, reason) for each index or find-links location that does not answer now.
    An index is asked for `project`'s page (PEP 503: INDEX/PROJECT/); a find-links URL for
    itself; a find-links folder must exist."""
    failed: list[tuple[str, str]] = []
    for index in indexes:
        if "://" not in index or index.startswith("file:"):
            continue
        why = probe_url(f"{index.rstrip('/')}/{project}/", timeout, cert)
        if why:
            failed.append((index, why))
    for link in find_links:
        if "://" not in link:
            if not Path(link).is_dir():
                failed.append((f"--find-links {link}", "no such folder"))
        elif not link.startswith("file:"):
            why = probe_url(link, timeout, cert, missing_ok=False)
            if why:
                failed.append((f"--find-links {link}", why))
    return failed


def pip_config_in_effect(environ: Mapping[str, str] | None = None, honoured: Sequence[str] = ("PIP_CERT",)) -> list[str]:
    """The pip settings of this machine a plain `pip` would read: PIP_* variables (less
    `honoured`) and the pip.conf files that exist (pip's own search order: site, user, the
    interpreter's prefix, $PIP_CONFIG_FILE)."""
    env = os.environ if environ is None else environ
    found = sorted(k for k in env if k.startswith("PIP_") and k not in honoured and k != "PIP_CONFIG_FILE")
    home = Path(env.get("HOME") or Path.home())
    config_home = Path(env.get("XDG_CONFIG_HOME") or home / ".config")
    dirs = [Path(d) for d in (env.get("XDG_CONFIG_DIRS") or "/etc/xdg").split(os.pathsep) if d]
    files = [*(d / "pip" / "pip.conf" for d in dirs), Path("/etc/pip.conf"), home / ".pip" / "pip.conf",
             config_home / "pip" / "pip.conf", Path(sys.prefix) / "pip.conf"]
    if env.get("PIP_CONFIG_FILE") and env["PIP_CONFIG_FILE"] != os.devnull:
        files.append(Path(env["PIP_CONFIG_FILE"]))
    seen: set[Path] = set()
    for path in files:
        if path not in seen and path.is_file():
            seen.add(path)
            found.append(str(path))
    return found


def pip_sources(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """(indexes, find-links URLs) a pip command line names: --index-url, --extra-index-url,
    --find-links / -f (as `--opt VALUE` or `--opt=VALUE`); ([], []) for a command that is
    not pip (`pip`, `pip3`, `python -m pip`)."""
    args = [str(a) for a in argv]
    is_pip = any(Path(a).name in ("pip", "pip3") for a in args[:3]) or any(args[i:i + 2] == ["-m", "pip"] for i in range(len(args)))
    if not is_pip:
        return [], []
    indexes: list[str] = []
    links: list[str] = []
    for i, arg in enumerate(args):
        for flag, into in (("--index-url", indexes), ("-i", indexes), ("--extra-index-url", indexes), ("--find-links", links), ("-f", links)):
            if arg == flag and i + 1 < len(args):
                into.append(args[i + 1])
            elif flag.startswith("--") and arg.startswith(flag + "="):
                into.append(arg.split("=", 1)[1])
    return list(dict.fromkeys(indexes)), [link for link in dict.fromkeys(links) if "://" in link]
