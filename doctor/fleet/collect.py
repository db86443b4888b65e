"""Gather one document per node with the tools a cluster already runs: srun, pdsh, ssh.

fwdoctor carries nothing between hosts itself. Each node runs its own `fwdoctor facts`
(or `fwdoctor smoke all --json`) and prints the document on stdout; the cluster's tool
brings the output back, and this module separates it per node and writes one file each:

- Slurm: `srun --label --verbose --ntasks-per-node=1 [OPTIONS] -- FWDOCTOR facts`. Every
  output line of task N arrives as "N: text" (`--label`), so nothing needs a shared
  folder (nodes do not share /tmp). `--verbose` makes srun say which node runs which task
  ("srun: launching StepId=5.0 on host node07, 1 tasks: 0"), and a failed task is named
  by srun itself ("srun: error: node07: task 0: Exited with exit code 2").
- pdsh: `pdsh -R ssh -w h1,h2 -- COMMAND`; every line arrives as "host: text".
- ssh: one `ssh -o BatchMode=yes -o ConnectTimeout=N ... -- HOST COMMAND` per host, a
  bounded number at a time.

srun cuts a long line into 1024-byte pieces, each labelled and ended with a newline
(measured with Slurm 22.05: `srun -l python3 -c "print('a'*100000)"` prints 98 lines of
"0: " + 1024 bytes). A task's pieces are therefore joined with no separator: a JSON text
holds newlines only between tokens, so dropping every newline leaves the same document,
and a piece boundary inside a string or a number is rejoined exactly. fwdoctor writes its
JSON with json.dumps' default ensure_ascii, so a cut never falls inside a UTF-8 sequence.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from collections import deque
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from fwdoctor import quoting, runner

# What each node runs (after the fwdoctor command), and the kind of document it prints.
WHAT: dict[str, tuple[str, ...]] = {
    "facts": ("facts",),
    "smoke": ("smoke", "all", "--json"),
}
EXPECTED_KIND = {"facts": "facts", "smoke": "smoke-suite"}
# Smoke reports and facts may share a folder: fleet report reads both kinds.
FILE_SUFFIX = {"facts": ".json", "smoke": ".smoke.json"}
# `smoke all` exits 1 when a test failed: its report is still the node's answer.
DOCUMENT_EXIT_CODES = {"facts": (0,), "smoke": (0, 1)}
DEFAULT_TIMEOUT_S = {"facts": 600.0, "smoke": 3600.0}
STDERR_TAIL_LINES = 8
MAX_HOSTS_FILE_BYTES = 4 * 1024 * 1024

# A host as ssh and pdsh take it: [user@]name, name a DNS name or an IPv4 address. No
# leading '-' (it would be read as an option), no white space, no shell or pdsh hostlist
# metacharacter ([ ] , expand to several hosts in pdsh), no '/' (it would reach the file
# name). IPv6 literals are not taken: pdsh cannot tell their ':' from its "host: " prefix.
_HOST = re.compile(r"(?:[A-Za-z0-9_][A-Za-z0-9._-]{0,63}@)?[A-Za-z0-9](?:[A-Za-z0-9._-]{0,252}[A-Za-z0-9])?\Z")
_FILE_CHARS = re.compile(r"[^A-Za-z0-9._-]")


class CollectError(ValueError):
    """Bad input (a host name, an option): the CLI turns it into exit 2 naming the input."""


@dataclass
class NodeResult:
    """What came back from one node: its document, or why there is none."""

    node: str  # the node as the transport named it (srun's node name, the host as given)
    document: dict[str, Any] | None = None
    exit_code: int | None = None
    problem: str = ""  # why no document ("" when one came back)
    stderr_tail: list[str] = field(default_factory=list)
    path: str | None = None  # where the document was written

    @property
    def ok(self) -> bool:
        return self.document is not None and not self.problem


# --------------------------------------------------------------------------- names
def validate_host(entry: str, what: str = "host") -> str:
    """`entry` if it is a host ssh/pdsh can take safely, else CollectError naming it."""
    if not isinstance(entry, str) or not _HOST.match(entry) or ".." in entry:
        raise CollectError(f"{what} {_shown(entry)}: not a host name ([user@]name: letters, digits, '.', '-', '_'; no leading '-')")
    return entry


def host_only(entry: str) -> str:
    """The host part of [user@]host (what pdsh prints before ': ')."""
    return entry.rsplit("@", 1)[-1]


def parse_hosts_file(text: str, where: str) -> list[str]:
    """Hosts, one a line; '#' starts a comment, blank lines are skipped, repeats are dropped."""
    hosts: dict[str, None] = {}  # a dict keeps the file's order; `in` a list was n^2 (60,000 hosts: 40 s)
    for number, line in enumerate(text.splitlines(), 1):
        entry = line.split("#", 1)[0].strip()
        if not entry:
            continue
        validate_host(entry, f"{where} line {number}: host")
        hosts.setdefault(entry, None)
    if not hosts:
        raise CollectError(f"{where}: no host in it (one host name a line)")
    return list(hosts)


def file_name_for(node: str) -> str:
    """A node's name made into a file name: never a path, never hidden, never empty.

    Slurm and the hosts file may name a node anything the transport accepts; only the
    characters a host name uses survive ('/' and the rest become '_'), leading dots and
    dashes are dropped ("../x" cannot climb, "-x" is no option), at most 200 characters."""
    cleaned = _FILE_CHARS.sub("_", node).lstrip(".-")[:200]
    return cleaned or "node"


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def default_fwdoctor(argv0: str | None = None, executable: str | None = None) -> str:
    """The fwdoctor the nodes run by default: this one's absolute path when it is a file
    here (nodes of one cluster usually share the install path), else `fwdoctor` on PATH."""
    argv0 = sys.argv[0] if argv0 is None else argv0
    executable = sys.executable if executable is None else executable
    candidates = []
    if os.path.basename(argv0) == "fwdoctor":
        candidates.append(os.path.abspath(argv0))
    if executable:  # `python -m fwdoctor`, or a test runner: the console script beside the interpreter
        candidates.append(os.path.join(os.path.dirname(os.path.abspath(executable)), "fwdoctor"))
    for candidate in candidates:
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return "fwdoctor"


def validate_fwdoctor(command: str) -> str:
    if not command or "\x00" in command or command.startswith("-") or command != command.strip():
        raise CollectError(f"--fwdoctor {_shown(command)}: not a command (a path or a name on the nodes' PATH)")
    return command


def node_argv(fwdoctor: str, what: str) -> list[str]:
    """What each node runs: argv, never a shell string."""
    return [validate_fwdoctor(fwdoctor), *WHAT[what]]


# --------------------------------------------------------------------------- documents
def document_from_text(text: str, what: str) -> tuple[dict[str, Any] | None, str]:
    """The node's document from its stdout (pieces already joined), or None and why not."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        shown = text.strip()[:120]
        return None, "no JSON document on stdout" + (f" (it printed {shown!r})" if shown else " (it printed nothing)")
    try:
        data = json.loads(text[start : end + 1])
    except json.JSONDecodeError as exc:
        return None, f"stdout is not one JSON document ({exc.msg} at character {exc.pos})"
    except RecursionError:
        return None, "stdout is JSON nested too deeply to be an fwdoctor document"
    if not isinstance(data, dict):
        return None, "stdout is JSON but not an object"
    kind = data.get("kind")
    if kind != EXPECTED_KIND[what]:
        return None, f"stdout is a JSON document of kind {_shown(kind)}, not {EXPECTED_KIND[what]!r}"
    return data, ""


def document_host(document: Mapping[str, Any]) -> str | None:
    """The host name a document carries (`host.name`, as `fleet report` reads it)."""
    for holder in (document, document.get("check")):
        host = holder.get("host") if isinstance(holder, Mapping) else None
        name = host.get("name") if isinstance(host, Mapping) else None
        if isinstance(name, str) and name.strip():
            return name.strip()
    return None


def _finish(result: NodeResult, text: str, what: str) -> NodeResult:
    """Fill `result` from the node's stdout and exit status."""
    document, problem = document_from_text(text, what)
    if document is not None and result.exit_code not in (None, *DOCUMENT_EXIT_CODES[what]):
        problem = f"exit status {result.exit_code}"
    if document is None and result.exit_code not in (None, 0) and not problem.startswith("exit"):
        problem = f"exit status {result.exit_code}; {problem}"
    result.document = document if not problem else None
    result.problem = problem
    return result


# --------------------------------------------------------------------------- writing
def write_documents(results: Sequence[NodeResult], out_dir: str, what: str) -> None:
    """Write each collected document to OUT/<node>.json, atomically (a temporary file in
    the same folder, then os.replace): a reader never sees half a file, and a node that
    failed this time leaves last time's file as it was. Two nodes whose names clean up to
    the same file name get "-2", "-3" ... after the second."""
    taken: set[str] = set()
    suffix = FILE_SUFFIX[what]
    for result in results:
        if not result.ok:
            continue
        base = file_name_for(result.node)
        name, n = base, 1
        while name in taken:
            n += 1
            name = f"{base}-{n}"
        taken.add(name)
        path = os.path.join(out_dir, name + suffix)
        _write_atomically(path, json.dumps(result.document, indent=2) + "\n")
        result.path = path


def _write_atomically(path: str, text: str) -> None:
    folder = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(prefix=".fwdoctor-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# --------------------------------------------------------------------------- Slurm
# "  3: text" (srun --label pads the task number to the width of the largest one).
_LABEL = re.compile(r" *(\d+): ?(.*)\Z", re.S)
_LAUNCH = re.compile(r"srun: launching \S+ on host (\S+), \d+ tasks?: (\S+)\s*\Z")
_TASK_ERROR = re.compile(r"srun: error: (\S+): tasks? (\S+): (.*)\Z")
_EXIT_CODE = re.compile(r"Exited with exit code (\d+)")


def slurm_argv(fwdoctor: str, what: str, srun_options: Sequence[str], srun: str = "srun") -> list[str]:
    """srun's argv: our options first, the user's after them (srun takes the last of a
    repeated option, so theirs win), then `--` and the node command."""
    options = list(srun_options)
    if "--" in options:
        raise CollectError("srun options: a second '--' (everything after the first '--' is passed to srun as options)")
    for option in options:
        if "\x00" in option:
            raise CollectError(f"srun option {_shown(option)} holds a NUL character")
    return [srun, "--label", "--verbose", "--ntasks-per-node=1", "--kill-on-bad-exit=0", *options, "--", *node_argv(fwdoctor, what)]


def task_ids(text: str) -> list[int]:
    """Slurm's ranged task list ("0", "[0-3]", "[0,4-5]", "0-1") as task numbers."""
    ids: list[int] = []
    for part in text.strip("[]").split(","):
        low, _, high = part.partition("-")
        if low.isdigit() and (not high or high.isdigit()):
            ids.extend(range(int(low), int(high or low) + 1))
    return ids


class SlurmStderr:
    """srun's stderr read line by line as it comes (a 1,000-node run says more than any
    tail keeps): which node runs which task, which tasks failed and why, each task's last
    lines, and srun's own complaints. Memory stays bounded per task."""

    def __init__(self) -> None:
        self.node_of: dict[int, str] = {}
        self.errors: dict[int, str] = {}
        self.task_lines: dict[int, deque[str]] = {}
        self.srun_lines: deque[str] = deque(maxlen=STDERR_TAIL_LINES)

    def feed(self, line: str) -> None:
        launch, failed, labelled = _LAUNCH.match(line), _TASK_ERROR.match(line), _LABEL.match(line)
        if launch:
            for task in task_ids(launch.group(2)):
                self.node_of[task] = launch.group(1)
        elif failed:
            for task in task_ids(failed.group(2)):
                self.node_of.setdefault(task, failed.group(1))
                self.errors[task] = failed.group(3).strip()
        elif labelled and not line.startswith("srun:"):
            self.task_lines.setdefault(int(labelled.group(1)), deque(maxlen=STDERR_TAIL_LINES)).append(labelled.group(2))
        elif line.startswith(("srun: error:", "srun: fatal:")) or not line.startswith("srun:"):
            self.srun_lines.append(line)


def parse_slurm_output(stdout: str, stderr: "str | SlurmStderr", what: str) -> tuple[list[NodeResult], list[str]]:
    """Per-task results from srun's labelled output; also srun's own messages (a failure
    before any task started: no allocation, a bad option)."""
    if isinstance(stderr, str):
        parsed = SlurmStderr()
        for line in stderr.splitlines():
            parsed.feed(line)
    else:
        parsed = stderr
    pieces: dict[int, list[str]] = {}
    for line in stdout.split("\n"):
        match = _LABEL.match(line)
        if match:
            pieces.setdefault(int(match.group(1)), []).append(match.group(2))
    results: list[NodeResult] = []
    for task in sorted(set(pieces) | set(parsed.node_of) | set(parsed.task_lines) | set(parsed.errors)):
        error = parsed.errors.get(task, "")
        code_match = _EXIT_CODE.search(error)
        result = NodeResult(node=parsed.node_of.get(task, ""),
                            exit_code=int(code_match.group(1)) if code_match else (None if error else 0),
                            stderr_tail=list(parsed.task_lines.get(task, ())))
        _finish(result, "".join(pieces.get(task, [])), what)
        if error and not code_match:  # "Killed", "Terminated", ...: no exit status to show
            result.document = None
            result.problem = f"{error}; {result.problem}" if result.problem else error
        if not result.node:  # srun said nothing about the task's node (a --quiet in the options)
            result.node = (document_host(result.document) if result.document else None) or f"task-{task}"
        results.append(result)
    return results, list(parsed.srun_lines)


def collect_slurm(fwdoctor: str, what: str, srun_options: Sequence[str], timeout: float,
                  on_line: Callable[[str], None] | None = None, srun: str = "srun") -> tuple[list[NodeResult], str]:
    """Run srun once; per-node results and, when srun itself failed, why (else "")."""
    argv = slurm_argv(fwdoctor, what, srun_options, srun)
    stderr = SlurmStderr()

    def feed(line: str) -> None:
        stderr.feed(line)
        if on_line is not None:
            on_line(line)

    outcome = runner.stream(argv, timeout=timeout, on_stderr_line=feed)
    if outcome.error:
        return [], f"{argv[0]}: {outcome.error}"
    results, srun_lines = parse_slurm_output(outcome.stdout, stderr, what)
    if outcome.timed_out:
        for result in results:
            if result.document is None and not result.problem.startswith("no answer"):
                result.problem = f"no answer within {timeout:g}s (srun killed); {result.problem}"
        return results, f"srun gave no answer within {timeout:g}s and was killed" + ("" if results else ": no task reported")
    if not results:
        tail = "; ".join(srun_lines[-STDERR_TAIL_LINES:]) or f"exit status {outcome.returncode}, no output"
        return [], f"srun started no task: {tail}"
    return results, ""


# --------------------------------------------------------------------------- pdsh / ssh
def remote_command(fwdoctor: str, what: str) -> str:
    """The command line a node's login shell runs. ssh and pdsh join their arguments into
    one string for the remote shell, so each word is quoted (fwdoctor.quoting)."""
    return quoting.shell_line(node_argv(fwdoctor, what), "--fwdoctor")


def ssh_base_options(connect_timeout: float) -> list[str]:
    # BatchMode: never a password or host-key prompt (there is nobody to answer it).
    return ["-o", "BatchMode=yes", "-o", f"ConnectTimeout={max(1, int(connect_timeout))}"]


def validate_ssh_options(options: Sequence[str]) -> list[str]:
    options = list(options)
    if "--" in options:
        raise CollectError("ssh options: a second '--' (everything after the first '--' is passed to ssh as options)")
    for option in options:
        if "\x00" in option or "\n" in option:
            raise CollectError(f"ssh option {_shown(option)} holds a NUL or newline character")
    return options


def ssh_argv(host: str, command: str, ssh_options: Sequence[str], connect_timeout: float, ssh: str = "ssh") -> list[str]:
    """One host's ssh argv; `--` before the host, so a host is never read as an option."""
    return [ssh, *ssh_base_options(connect_timeout), *validate_ssh_options(ssh_options), "--", validate_host(host), command]


def collect_ssh(hosts: Sequence[str], fwdoctor: str, what: str, ssh_options: Sequence[str], timeout: float,
                connect_timeout: float, fanout: int, on_done: Callable[[NodeResult], None] | None = None,
                ssh: str = "ssh") -> list[NodeResult]:
    """One ssh per host, at most `fanout` at a time; results in the hosts' order."""
    command = remote_command(fwdoctor, what)
    argvs = {host: ssh_argv(host, command, ssh_options, connect_timeout, ssh) for host in hosts}

    def one(host: str) -> NodeResult:
        outcome = runner.run(argvs[host], timeout=timeout)
        result = NodeResult(node=host_only(host), exit_code=outcome.returncode,
                            stderr_tail=outcome.stderr.strip().splitlines()[-STDERR_TAIL_LINES:])
        if outcome.error:
            result.problem = f"{argvs[host][0]}: {outcome.error}"
        elif outcome.timed_out:
            result.problem = f"no answer within {timeout:g}s (ssh killed)"
        elif outcome.returncode == 255:  # ssh's own failure: connection, authentication
            result.problem = "ssh could not run the command (exit status 255)"
        else:
            _finish(result, outcome.stdout.replace("\n", ""), what)
        return result

    done: dict[str, NodeResult] = {}
    with ThreadPoolExecutor(max_workers=max(1, min(fanout, len(hosts)))) as pool:
        futures = {pool.submit(one, host): host for host in hosts}
        for future in as_completed(futures):
            result = future.result()
            done[futures[future]] = result
            if on_done is not None:
                on_done(result)
    return [done[host] for host in hosts]


_PDSH_ERROR = re.compile(r"pdsh@\S+: (\S+): (.*)\Z")


def pdsh_argv(hosts: Sequence[str], command: str, fanout: int, hosts_file: str | None, pdsh: str = "pdsh") -> list[str]:
    """pdsh's argv. The hosts without a user are read from `hosts_file` (`-w ^FILE`, one a
    line; write_pdsh_hosts): one `-w h1,h2,...` argument over the kernel's per-argument
    limit (128 KiB, a few thousand long names) is refused before pdsh starts ("Argument
    list too long"). pdsh takes a file's lines as bare host names ("user@^FILE" is no
    syntax, a "user@h" line is a host of that name: seen with pdsh 2.34), so a host given
    with a user gets its own `-w user@host` (pdsh adds up its -w options)."""
    targets: list[str] = ["-w", f"^{hosts_file}"] if hosts_file is not None else []
    for host in hosts:
        if "@" in validate_host(host):
            targets += ["-w", host]
    # -R ssh: pdsh's default transport is rsh. -S: exit with the largest remote status.
    return [pdsh, "-R", "ssh", "-S", "-f", str(max(1, fanout)), *targets, "--", command]


def write_pdsh_hosts(hosts: Sequence[str], folder: str | None = None) -> str | None:
    """A temporary file of the hosts given without a user, one a line (the caller removes
    it), or None when every host names its user."""
    plain = [validate_host(h) for h in hosts if "@" not in h]
    if not plain:
        return None
    text = "".join(f"{h}\n" for h in plain)
    fd, path = tempfile.mkstemp(prefix="fwdoctor-pdsh-hosts-", suffix=".txt", dir=folder)
    if "," in path:  # pdsh would split "-w ^/a,b/f" at the comma
        os.close(fd)
        os.unlink(path)
        raise CollectError(f"the temporary folder {os.path.dirname(path)!r} holds a ',' (pdsh would split the hosts file's name there); set TMPDIR")
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(text)
    return path


def pdsh_env(ssh_options: Sequence[str], connect_timeout: float) -> dict[str, str]:
    """pdsh's ssh module appends PDSH_SSH_ARGS_APPEND to every ssh it starts. pdsh splits
    that string at white space (no shell), so an option holding white space is refused."""
    options = [*ssh_base_options(connect_timeout), *validate_ssh_options(ssh_options)]
    for option in options:
        if any(ch.isspace() for ch in option):
            raise CollectError(f"ssh option {_shown(option)} holds white space, which pdsh cannot pass on (use --via ssh)")
    return {"PDSH_SSH_ARGS_APPEND": " ".join(options)}


def pdsh_labels(hosts: Sequence[str]) -> dict[str, str]:
    """The prefix pdsh prints for each host -> the host's name. pdsh shortens a DNS name
    to its first label when it prints ("nosuchhost.invalid" -> "nosuchhost: ...", seen
    with pdsh 2.34), an IPv4 address never; both forms are taken when unambiguous."""
    names = [host_only(h) for h in hosts]
    labels = {name: name for name in names}
    shorts: dict[str, list[str]] = {}
    for name in names:
        if "." in name and not re.fullmatch(r"[0-9.]+", name):
            shorts.setdefault(name.split(".", 1)[0], []).append(name)
    for short, owners in shorts.items():
        if len(owners) == 1 and short not in labels:
            labels[short] = owners[0]
    return labels


class PdshStderr:
    """pdsh's stderr read line by line: each host's remote stderr ("host: text") and pdsh's
    own verdicts ("pdsh@here: host: ssh exited with exit code 255"), bounded per host."""

    def __init__(self, hosts: Sequence[str]) -> None:
        self.labels = pdsh_labels(hosts)
        self.tails: dict[str, deque[str]] = {host_only(h): deque(maxlen=STDERR_TAIL_LINES) for h in hosts}
        self.codes: dict[str, int] = {}

    def feed(self, line: str) -> None:
        own = _PDSH_ERROR.match(line)
        if own and own.group(1) in self.labels:
            name = self.labels[own.group(1)]
            self.tails[name].append(own.group(2))
            code = re.search(r"exit(?:ed with exit)? code (\d+)", own.group(2))
            if code:
                self.codes[name] = int(code.group(1))
            return
        label, sep, text = line.partition(": ")
        if sep and label in self.labels:
            self.tails[self.labels[label]].append(text)


def parse_pdsh_output(stdout: str, stderr: "str | PdshStderr", hosts: Sequence[str], what: str) -> list[NodeResult]:
    """Per-host results from pdsh's "host: text" lines (stdout: the document)."""
    if isinstance(stderr, str):
        parsed = PdshStderr(hosts)
        for line in stderr.splitlines():
            parsed.feed(line)
    else:
        parsed = stderr
    names = [host_only(h) for h in hosts]
    labels = pdsh_labels(hosts)
    pieces: dict[str, list[str]] = {name: [] for name in names}
    for line in stdout.split("\n"):
        label, sep, text = line.partition(": ")
        if sep and label in labels:
            pieces[labels[label]].append(text)
    results = []
    for name in names:
        result = NodeResult(node=name, exit_code=parsed.codes.get(name, 0), stderr_tail=list(parsed.tails[name]))
        if result.exit_code == 255:
            result.problem = "ssh could not run the command (exit status 255)"
        else:
            _finish(result, "".join(pieces[name]), what)
        results.append(result)
    return results


def collect_pdsh(hosts: Sequence[str], fwdoctor: str, what: str, ssh_options: Sequence[str], timeout: float,
                 connect_timeout: float, fanout: int, pdsh: str = "pdsh") -> tuple[list[NodeResult], str]:
    command, env = remote_command(fwdoctor, what), {**os.environ, **pdsh_env(ssh_options, connect_timeout)}
    hosts_file = write_pdsh_hosts(hosts)
    try:
        argv = pdsh_argv(hosts, command, fanout, hosts_file, pdsh)
        stderr = PdshStderr(hosts)
        outcome = runner.stream(argv, timeout=timeout, env=env, on_stderr_line=stderr.feed)
    finally:
        if hosts_file is not None:
            os.unlink(hosts_file)
    if outcome.error:
        return [], f"{argv[0]}: {outcome.error}"
    results = parse_pdsh_output(outcome.stdout, stderr, hosts, what)
    if outcome.timed_out:
        for result in results:
            if result.document is None:
                result.problem = f"no answer within {timeout:g}s (pdsh killed); {result.problem}"
        return results, f"pdsh gave no answer within {timeout:g}s and was killed"
    return results, ""


# --------------------------------------------------------------------------- one node
def local_document(fwdoctor: str, what: str, timeout: float, node_name: str | None) -> tuple[dict[str, Any] | None, str]:
    """This node's document (the child `fwdoctor facts`/`smoke all --json`), for a
    collector that reads one JSON line per node (`fleet emit k8s`). `node_name` (the
    Kubernetes node, from the downward API) replaces `host.name`: in a pod the host name
    is the pod's, which says nothing about the node."""
    outcome = runner.run(node_argv(fwdoctor, what), timeout=timeout)
    if outcome.error or outcome.timed_out:
        return None, outcome.describe_failure()
    result = _finish(NodeResult(node=node_name or "", exit_code=outcome.returncode), outcome.stdout, what)
    if result.document is None:
        tail = outcome.stderr.strip().splitlines()[-1:]
        return None, result.problem + (f": {tail[0][:200]}" if tail else "")
    document = result.document
    if node_name:
        for holder in (document, document.get("check")):
            if isinstance(holder, dict) and "host" in holder:
                own = holder["host"].get("name") if isinstance(holder["host"], dict) else None
                holder["host"] = {"name": node_name,
                                  "source": f"--node-name (the Kubernetes node); the pod's own host name: {own}"}
    return document, ""


def json_line(document: Mapping[str, Any]) -> str:
    """One compact JSON line (ASCII: no line separator can hide in it)."""
    return json.dumps(document, separators=(",", ":"), ensure_ascii=True)


def failures(results: Iterable[NodeResult]) -> list[NodeResult]:
    return [r for r in results if not r.ok]
