"""Windows and WSL environment text: which Windows build, whether WSL is version 1, a Linux
NVIDIA driver installed inside WSL, and a torch wheel pip fetched for Windows.

    C:\\Users\\me> ver
    Microsoft Windows [Version 10.0.17763.292]          -> platform.windows_build 17763

    OS Version:                10.0.19041 N/A Build 19041   (systeminfo)
    Windows version: 10.0.22631.2861                       (wsl --version)

    $ uname -r
    4.4.0-17763-Microsoft                                  -> platform.wsl 1 (and build 17763)
    5.15.90.1-microsoft-standard-WSL2                      -> platform.wsl 2

    PS C:\\> wsl -l -v
      NAME      STATE      VERSION
    * Ubuntu    Running    1                               -> platform.wsl 1

WSL 1's kernel is Microsoft's Linux emulation, whose release names the Windows build it ships
with ("4.4.0-<build>-Microsoft"); WSL 2's is a real kernel ("...-microsoft-standard-WSL2").
Only WSL 2 has GPU access (https://docs.nvidia.com/cuda/wsl-user-guide/: "CUDA support in
this user guide is specifically for WSL 2").

A Linux NVIDIA driver inside WSL (wsl.linux_driver): its packages being installed
("apt install nvidia-driver-535", dpkg's "ii  libnvidia-compute-535"), NVIDIA's Linux .run
installer, a libcuda with a driver version suffix ("libcuda.so.535.104.05": WSL's own is
libcuda.so.1.1 in /usr/lib/wsl/lib), or a sentence that says a driver was installed in WSL.
Whether the report is from WSL at all is the rule's to ask (platform.wsl, or WSL named).

pip's download line of a Windows torch wheel ("Downloading torch-1.7.1-cp38-cp38-win_amd64.whl")
settles torch.cuda: a "+cu118" tag names the CUDA, "+cpu" none, and no tag is the PyPI
wheel, which on Windows is the CPU build (PyTorch's maintainers on pytorch/pytorch#52662:
"on Windows the CPU rather than the CUDA 10.2 wheels go on PyPI"; pytorch.github.io#757:
"Windows CPU only wheels are available on PyPI"), unless the line shows a /whl/cuNNN/ URL.
Lines may carry PowerShell or cmd prompts, quote markers, fences and CRLF (fwdoctor.triage.text).
"""

from __future__ import annotations

import re

from fwdoctor.triage.base import Fragment, cuda_from_local
from fwdoctor.triage.text import Lines

# `ver` and cmd's banner, systeminfo's "OS Version", `wsl --version`'s "Windows version",
# collect_env's "OS: Microsoft Windows 10 Pro (10.0.19045 64-bit)". Windows prints them in its
# display language, and reports paste them so: cmd's banner "Microsoft Windows [版本
# 10.0.19044.1586]", "[Versión 10.0.19045.3803]", "[versão ...]" (any word in the bracket);
# `wsl --version`'s last line "Windows-Version: 10.0.22631.4169" (German), "Version de Windows :
# 10.0.19045.5796" (French), "Windows 版本: 10.0.22631.4037" (Chinese), "Versión de Windows:".
_BUILD = re.compile(
    r"(?:Microsoft Windows \[[^\]\d\n]{1,16}|OS Version:|Windows[- ](?:version|versión|versão|versione|版本)\s?:"
    r"|Versi(?:on|ón|one) (?:de|di) Windows\s?:|Versão do Windows\s?:|Microsoft Windows [\w .]{0,40}\()\s*"
    r"(?P<version>10\.0\.(?P<build>\d{5})(?:\.\d{1,6})?)",
    re.IGNORECASE,
)
# systeminfo's "OS Version" row in any language: the version, a localized "N/A", then "Build"
# and the same build ("10.0.19045 N/A Build 19045", "OS 版本:  10.0.19045 暂缺 Build 19045",
# "Betriebssystemversion:  10.0.19042 Nicht zutreffend Build 19042").
_SYSTEMINFO_BUILD = re.compile(r"\b(?P<version>10\.0\.(?P<build>\d{5}))\s{1,4}\S{1,24}(?:\s\S{1,24})?\s{1,4}Build\s(?P=build)\b")
_WSL1_KERNEL = re.compile(r"\b\d\.\d{1,2}\.\d{1,3}-(?P<build>\d{5})-Microsoft\b")  # case matters: WSL 2's is "microsoft-standard"
_WSL2_KERNEL = re.compile(r"-microsoft-standard(?:-WSL2)?\b", re.IGNORECASE)
# `wsl -l -v`: a distribution row under the "NAME STATE VERSION" header.
_WSL_LIST_HEAD = re.compile(r"^\s*NAME\s+STATE\s+VERSION\s*$")
_WSL_STATES = frozenset({"Running", "Stopped", "Installing", "Converting", "Uninstalling"})

# Windows as people write it: a release ("Windows 10 2004", "Win10 version 21H1", "Windows 11
# Pro 23H2"), a build in a sentence ("build 19041 (Windows 10 2004)", winver's "Version 21H2 (OS
# Build 19044.1288)") or a WSL issue form's "Windows build number: [10.0.22000.194]". Each
# release's build: Microsoft's release information (learn.microsoft.com/windows/release-health/
# release-information and .../windows11-release-information). A bare "Windows 11" is build
# 22000 or later. Read as prose (below `ver` and systeminfo); of several, the newest is kept,
# since a report that names an old release beside a newer one is mostly telling its upgrade.
_RELEASE_BUILDS = {
    "10": {"1507": 10240, "1511": 10586, "1607": 14393, "1703": 15063, "1709": 16299, "1803": 17134, "1809": 17763,
           "1903": 18362, "1909": 18363, "2004": 19041, "20H2": 19042, "21H1": 19043, "21H2": 19044, "22H2": 19045},
    "11": {"21H2": 22000, "22H2": 22621, "23H2": 22631, "24H2": 26100, "25H2": 26200},
}
_RELEASE = re.compile(
    r"\bWin(?:dows)?[ _-]?(?P<major>10|11)\b(?P<gap>[^.\n]{0,30}?)\b(?P<release>1[5-9]0[1-9]|2004|2[0-5]H[12])\b", re.IGNORECASE)
_BARE_H_RELEASE = re.compile(r"(?<![\w.-])(2[0-5]H[12])\b", re.IGNORECASE)
_WINDOWS_11 = re.compile(r"\bWin(?:dows)?[ _-]?11\b", re.IGNORECASE)
_BUILD_SAID = re.compile(
    r"(?:\b(?:OS\s?build|build(?:\s?number)?)|(?:OS ?|操作系統|操作系统)[内內]部版本|Betriebssystembuild)\W{0,6}(?:Microsoft Windows \[Version\s?)?(?:10\.0\.)?(?P<build>1\d{4}|2\d{4})(?![\d])", re.IGNORECASE)
# winver in Chinese: "版本 21H2 (OS 内部版本 19044.1288)", Traditional "(操作系統內部版本19041.985)".
_WINDOWS_ON_LINE = re.compile(r"\bWin(?:dows)?\b|\bWin1[01]\b|\bOS\s?build\b|\bWSL|[内內]部版本|Betriebssystembuild", re.IGNORECASE)

# WSL named anywhere (as fwdoctor.triage.errors' hook wsl_named reads it): the name, Microsoft's
# long form, its driver folder, the WSL 2 kernel's release.
_WSL_NAMED = re.compile(r"\bWSL ?2?\b|Windows Subsystem for Linux|/usr/lib/wsl/|microsoft-standard", re.IGNORECASE)

# A Linux driver inside WSL: its packages, its installer, its libraries.
# A name may sit in Markdown's inline code or quotes ("`apt install nvidia-utils-510`", microsoft/WSL#9166).
_DRIVER_PACKAGE = re.compile(
    r"(?:^|[\s`'\"])(?:ii\s+)?(?P<package>nvidia-driver-\d{3}(?:-(?:open|server))?|libnvidia-compute-\d{3}|nvidia-utils-\d{3}|cuda-drivers(?:-\d{3})?)(?=[\s:=`'\",;]|$)"
)
_DRIVER_INSTALL_CMD = re.compile(r"\b(?:apt(?:-get)?|dpkg)\b")
_DRIVER_RUN = re.compile(r"\bNVIDIA-Linux-x86_64-\d{3}\.\d{1,3}(?:\.\d{1,3})?\.run\b")
_DRIVER_LIB = re.compile(r"\blib(?:cuda|nvidia-ml)\.so\.\d{3}\.\d{1,3}(?:\.\d{1,3})?\b")
# "installed ... GPU driver ... in wsl" within one sentence (no '.' between).
_DRIVER_PROSE = re.compile(
    r"\binstall(?:ed|ing)?\b[^.]{0,80}\b(?:nvidia|gpu|linux|cuda)\b[^.]{0,20}\bdrivers?\b[^.]{0,60}\b(?:in|inside|within|into|on)\s+(?:the\s+|my\s+)?wsl",
    re.IGNORECASE,
)

# pip's line for a torch wheel it fetched or used for Windows.
_WHEEL = re.compile(
    r"(?:Downloading|Using cached|Processing|Saved)\s+(?P<where>\S{0,300}?)torch-(?P<version>\d{1,2}\.\d{1,3}\.\d{1,3}(?:\+\w{1,12})?)-cp\d{2,3}-\w{1,12}-win_amd64\.whl"
)


def find(lines: Lines) -> list[Fragment]:
    out: list[Fragment] = []
    wsl_list = False
    named = False
    said: list[tuple[int, int, str]] = []  # (build, line, text): Windows named in prose
    for i, text in enumerate(lines.norm):
        if not text:
            continue
        number = i + 1
        said.extend((build, number, what) for build, what in _windows_said(text))
        if not named and (m := _WSL_NAMED.search(text)):
            named = True
            frag = Fragment("windows", number, number)
            frag.add("report.wsl_named", f"report line {number}: {m.group(0)}")
            out.append(frag)
        if m := _BUILD.search(text) or _SYSTEMINFO_BUILD.search(text):
            frag = Fragment("windows", number, number)
            frag.add("platform.windows_build", {"version": m.group("version"), "build": int(m.group("build"))})
            out.append(frag)
        if m := _WSL1_KERNEL.search(text):
            frag = Fragment("windows", number, number)
            frag.add("platform.wsl", {"version": 1, "text": m.group(0)})
            frag.add("platform.windows_build", {"version": f"10.0.{m.group('build')}", "build": int(m.group("build"))})
            out.append(frag)
        elif m := _WSL2_KERNEL.search(text):
            frag = Fragment("windows", number, number)
            frag.add("platform.wsl", {"version": 2, "text": m.group(0).lstrip("-")})
            out.append(frag)
        if _WSL_LIST_HEAD.match(text):
            wsl_list = True
            continue
        if wsl_list:
            row = _wsl_list_row(text)
            if row and text.lstrip().startswith("*"):  # the default distribution
                frag = Fragment("windows", number, number)
                frag.add("platform.wsl", {"version": row, "text": text.strip()})
                out.append(frag)
            wsl_list = row is not None
        driver = _linux_driver(text)
        if driver:
            frag = Fragment("windows", number, number)
            frag.add("wsl.linux_driver", {"line": number, "text": text.strip()[:200], "what": driver})
            out.append(frag)
        if m := _WHEEL.search(text):
            frag = _wheel(number, m)
            if frag:
                out.append(frag)
    if said:
        build, number, what = max(said, key=lambda b: (b[0], -b[1]))
        frag = Fragment("prose", number, number)
        frag.add("platform.windows_build", {"version": f"10.0.{build}", "build": build, "text": what})
        out.append(frag)
    return out


def _windows_said(text: str) -> list[tuple[int, str]]:
    """The Windows builds a line names in prose: (build, the words that name it)."""
    found: list[tuple[int, str]] = []
    for m in _RELEASE.finditer(text):
        build = _RELEASE_BUILDS[m.group("major")].get(m.group("release").upper())
        if build is not None and not re.search(r"\d", m.group("gap")):  # "Windows 10 with CUDA 11.8 1903" is not a release
            found.append((build, m.group(0)))
    if not found and _WINDOWS_11.search(text):
        found.append((_RELEASE_BUILDS["11"]["21H2"], _WINDOWS_11.search(text).group(0)))
    if _WINDOWS_ON_LINE.search(text):
        found.extend((int(m.group("build")), m.group(0)) for m in _BUILD_SAID.finditer(text))
        # "upgraded from Windows 10 1909 to 21H2": a bare H release beside the named one, read as
        # Windows 10's (the older of the two it may be)
        found.extend((_RELEASE_BUILDS["10"][m.group(1).upper()], m.group(0)) for m in _BARE_H_RELEASE.finditer(text)
                     if m.group(1).upper() in _RELEASE_BUILDS["10"])
    return found


def _wsl_list_row(text: str) -> int | None:
    """The VERSION of a `wsl -l -v` row ("* Ubuntu  Running  2"), split on blanks (a regex of
    blank runs around the name backtracks quadratically on a line of blanks)."""
    words = text.split()
    if words[:1] == ["*"]:
        words = words[1:]
    if len(words) == 3 and words[1] in _WSL_STATES and words[2] in ("1", "2"):
        return int(words[2])
    return None


def _linux_driver(text: str) -> str | None:
    """What on this line says a Linux NVIDIA driver is (being) installed, or None."""
    if (m := _DRIVER_PACKAGE.search(text)) and (_DRIVER_INSTALL_CMD.search(text) or text.lstrip().startswith("ii ")):
        return f"the Linux driver package {m.group('package')}"
    if m := _DRIVER_RUN.search(text):
        return f"NVIDIA's Linux driver installer {m.group(0)}"
    if (m := _DRIVER_LIB.search(text)) and "/usr/lib/wsl/" not in text:
        return f"a Linux driver library {m.group(0)}"
    if m := _DRIVER_PROSE.search(text):
        return f"the report says so: \"{m.group(0)}\""
    return None


def _wheel(number: int, m: re.Match[str]) -> Fragment | None:
    version = m.group("version")
    settled, cuda = cuda_from_local(version)
    if not settled:
        if re.search(r"/cu\d{2,3}/", m.group("where")):
            return None  # download.pytorch.org's CUDA folder: some CUDA builds there carry no tag
        settled, cuda = True, None  # PyPI's Windows wheel: the CPU build
    frag = Fragment("pip log", number, number)
    frag.add("torch.installed", True)
    frag.add("torch.version", version)
    frag.add("torch.cuda", cuda)
    frag.add("torch.wheel", {"file": m.group(0).split()[-1].rsplit("/", 1)[-1], "platform": "win_amd64", "line": number})
    return frag
