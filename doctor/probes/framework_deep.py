"""--deep for JAX, TensorFlow and PaddlePaddle: import each installed framework in the
inspected interpreter (one child process each, with a timeout, so one crash costs only its
own answer) and record what it sees: its devices, the first GPU op's error verbatim, the
CUDA libraries the process mapped, and the library-loading lines it logged on stderr
("Could not load dynamic library 'libcudnn.so.8'", "Loaded runtime CuDNN library: ...").

The child script is doctor/probes/framework_child.py, passed as `python -c SOURCE NAME` from `/`.
Shell equivalent:
    python -c 'import jax; print(jax.devices())'
    python -c 'import tensorflow as tf; print(tf.config.list_physical_devices("GPU"))'
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable

from fwdoctor import runner
from fwdoctor.host import Host
from fwdoctor.model import Fact, Facts, ProbeFailure
from fwdoctor.probes.base import probe
from fwdoctor.probes.torch_deep import parse_child_output

CHILD = Path(__file__).with_name("framework_child.py")
# Importing TensorFlow reads ~1 GB of shared objects (measured: ~6 s warm here, no GPU).
MIN_TIMEOUT_S = 90.0
# stderr lines worth keeping: the frameworks say why the GPU is unused only there.
_LOG = re.compile(
    r"Could not load dynamic library|Cannot dlopen|Loaded runtime CuDNN|compiled with|CUDA_ERROR|"
    r"ptxas|[Dd]river|libcudnn|libnccl|No GPU|Unable to register|failed call to cuInit|version mismatch",
)


@probe("framework_deep", provides=("frameworks.deep",), deep=True)
def framework_deep(host: Host, facts: Facts) -> Iterable[Fact | ProbeFailure]:
    if not host.live:
        yield Fact.unknown("frameworks.deep", "--deep runs nothing inside a root folder")
        return
    python = facts.get("python.executable")
    if not python:
        yield Fact.unknown("frameworks.deep", f"no interpreter to run ({facts.why('python.executable')})")
        return
    if not facts.known("frameworks.installed"):
        yield Fact.unknown("frameworks.deep", f"frameworks unknown ({facts.why('frameworks.installed')})")
        return
    names = [str(item.get("framework")) for item in facts["frameworks.installed"] or [] if isinstance(item, dict)]
    try:
        source = CHILD.read_text(encoding="utf-8")
    except OSError as exc:
        yield ProbeFailure("framework_deep", f"cannot read {CHILD}: {exc.strerror or exc}")
        return
    timeout = max(MIN_TIMEOUT_S, host.command_timeout)
    env = dict(host.env)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "0")  # TensorFlow says why a GPU is unused only in its log
    deep: dict[str, Any] = {}
    for name in names:
        result = runner.run([python, "-c", source, name], timeout=timeout, env=env, cwd="/")
        data, problem = parse_child_output(result.stdout)
        if data is None:
            why = result.describe_failure() if not result.ok else problem
            yield ProbeFailure("framework_deep", f"{python} -c <framework_child.py> {name}: {why}")
            continue
        data["log"] = log_lines(result.stderr)
        deep[name] = data
        if data.get("import_error"):
            yield ProbeFailure("framework_deep", f"`import {name}` failed in {python}: {data['import_error']}")
    yield Fact("frameworks.deep", deep, source=f"{python} -c <doctor/probes/framework_child.py>")


def log_lines(stderr: str, limit: int = 12) -> list[str]:
    """The lines of a framework's log that explain library loading and devices, in order."""
    out: list[str] = []
    for line in stderr.splitlines():
        line = line.strip()
        if line and _LOG.search(line) and line not in out:
            out.append(line[:400])
    return out[:limit]


PROBES = (framework_deep,)
