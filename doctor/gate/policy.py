"""The gate's policy: which findings drain a node, which only warn, what an unfinished check
means, and what the node type should have. A small YAML file; `DEFAULT` is used without one
and `fwdoctor gate --show-policy` prints it.

Precedence, most specific first: `ignore` by id, `drain` by id, `warn` by id, then `drain`
by severity, `warn` by severity; anything else is recorded but changes nothing. A
`probe-failed` finding (a probe that could not finish: a hung NVML) and a step the budget
ended are "unknown", and `unknown` says what they do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fwdoctor.findings import BY_ID

SEVERITIES = ("error", "warning", "info")
VERDICTS = ("drain", "warn", "ignore")

DEFAULT = """\
# fwdoctor gate policy (this is the default; `fwdoctor gate --policy FILE` reads another).
# An entry is a finding id (`fwdoctor list`) or a severity: error, warning, info.
# Ids win over severities; ignore wins over drain, drain over warn.
drain:
  - error                         # anything that fails jobs: driver/torch/CUDA mismatches, NVLink down, lost GPUs
  - gpu-memory-repair-pending     # even a pending remap: jobs crash until the GPU is reset
  - gpu-ecc-uncorrected           # counted at or above thresholds.ecc_uncorrected_volatile
warn:
  - warning                       # slow or fragile: a degraded PCIe link, IOMMU translation, ACS, throttling
ignore:
  - torch-not-installed           # the gate judges the node, not one user's environment
  - toolkit-missing
  - multiple-toolkits
  - gpu-persistence-off
# What a check that did not finish means (the budget ran out, a probe hung): drain | warn | ignore.
unknown: drain
thresholds:
  ecc_uncorrected_volatile: 1     # uncorrectable ECC errors since the driver loaded that drain
  gemm_below_baseline_pct: 10     # with --baseline and --smoke kernel: a GEMM this far below the type's median
expect:
  gpus: null                      # the node type's GPU count; null: from --baseline, else not judged
"""


class PolicyError(ValueError):
    """The policy file is not a valid policy; the message names the key."""


@dataclass(frozen=True)
class Policy:
    drain: tuple[str, ...]
    warn: tuple[str, ...]
    ignore: tuple[str, ...] = ()
    unknown: str = "drain"
    thresholds: dict[str, int] = field(default_factory=dict)
    expect: dict[str, Any] = field(default_factory=dict)
    source: str = "the default policy"

    def verdict(self, finding_id: str, severity: str) -> str | None:
        """"drain", "warn", or None (recorded only) for one finding."""
        if finding_id in self.ignore:
            return None
        if finding_id in self.drain:
            return "drain"
        if finding_id in self.warn:
            return "warn"
        if severity in self.drain:
            return "drain"
        if severity in self.warn:
            return "warn"
        return None

    def for_unknown(self) -> str | None:
        return None if self.unknown == "ignore" else self.unknown


def _entries(data: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    values = data.get(key) or []
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise PolicyError(f"{where}: {key} must be a list of finding ids or severities")
    for value in values:
        if value not in SEVERITIES and value not in BY_ID:
            raise PolicyError(f"{where}: {key}: {value!r} is neither a severity ({', '.join(SEVERITIES)}) nor a finding id (see `fwdoctor list`)")
    return tuple(values)


def parse(data: Any, where: str = "policy") -> Policy:
    if not isinstance(data, dict):
        raise PolicyError(f"{where}: must be a mapping with drain, warn, ignore, unknown, thresholds, expect")
    unknown_keys = set(data) - {"drain", "warn", "ignore", "unknown", "thresholds", "expect"}
    if unknown_keys:
        raise PolicyError(f"{where}: unknown keys {sorted(unknown_keys)}")
    unknown = data.get("unknown", "drain")
    if unknown not in VERDICTS:
        raise PolicyError(f"{where}: unknown must be one of {', '.join(VERDICTS)}, not {unknown!r}")
    thresholds = data.get("thresholds") or {}
    if not isinstance(thresholds, dict) or set(thresholds) - {"ecc_uncorrected_volatile", "gemm_below_baseline_pct"} or \
            not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in thresholds.values()):
        raise PolicyError(f"{where}: thresholds knows ecc_uncorrected_volatile and gemm_below_baseline_pct (integers >= 1)")
    expect = data.get("expect") or {}
    gpus = expect.get("gpus") if isinstance(expect, dict) else "bad"
    if not isinstance(expect, dict) or set(expect) - {"gpus"} or not (gpus is None or (isinstance(gpus, int) and not isinstance(gpus, bool) and gpus >= 0)):
        raise PolicyError(f"{where}: expect knows gpus (an integer >= 0, or null)")
    return Policy(drain=_entries(data, "drain", where), warn=_entries(data, "warn", where), ignore=_entries(data, "ignore", where),
                  unknown=unknown, thresholds=dict(thresholds), expect=dict(expect), source=where)


def load(path: str | None) -> Policy:
    """The policy in `path`, or the default. Raises PolicyError naming the file."""
    import yaml

    from fwdoctor.sources import SourceError, read_regular_file

    if path is None:
        return parse(yaml.safe_load(DEFAULT), "the default policy")
    try:
        text = read_regular_file(path, 1024 * 1024, "--policy").decode("utf-8")
        data = yaml.safe_load(text)
    except (SourceError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise PolicyError(f"--policy {path}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    return parse(data, f"--policy {path}")
