"""pip's resolver saying a JAX/TensorFlow/Paddle release's own requirement is not met
(framework-requirement-conflict), read from a report.

pip prints, after an install that left the environment inconsistent, "tensorflow 2.15.0.post1
requires keras<2.16,>=2.15.0, but you have keras 3.0.3 which is incompatible." (pip's
_warn_about_conflicts; "you'll" from the legacy resolver). The errors.yaml row
pip-framework-requirement-conflict reads it where the requirer is one of the frameworks; the
version is checked against the specifier here (packaging), so a line pip printed for a version
it could not parse ("0+untagged...") is judged only as far as the text allows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from fwdoctor.model import Facts, FixRef
from fwdoctor.rules.base import Hit, Rule, report_errors, report_line, rule, sh

if TYPE_CHECKING:
    from fwdoctor.kb import KB

KINDS = frozenset({"pip-framework-requirement-conflict"})


def _outside(spec: str, have: str) -> bool | None:
    """Whether `have` is outside `spec` (pip's own judgement, re-checked); None: not parseable."""
    try:
        return not SpecifierSet(spec).contains(Version(have), prereleases=True)
    except (InvalidSpecifier, InvalidVersion):
        return None


@rule("framework-requirement-conflict", needs=("report.errors",))
def framework_requirement_conflict(facts: Facts, kb: KB) -> Hit | None:
    """What it does
        Reads pip's resolver line "tensorflow 2.15.0.post1 requires keras<2.16,>=2.15.0, but you
        have keras 3.0.3 which is incompatible." where the package whose requirement is broken
        is JAX, jaxlib, a JAX CUDA plugin, TensorFlow (and tf-keras, keras) or PaddlePaddle.

    Why is this bad?
        The framework was built and tested against the range it declares; a later
        `pip install` of another package (keras-nlp pulling Keras 3 over TensorFlow 2.15's
        Keras 2.15, tensorflow/tensorflow#62825) replaced it, and pip only warns. The framework
        may then fail at import or at first use (`tf.keras` with Keras 3 under TensorFlow 2.15;
        jax with a jaxlib outside its range). pip's check is by declared metadata: some lines
        are harmless, so this is a warning.

    Example
        tensorflow 2.15.0.post1 with keras 3.0.3 (it requires keras<2.16,>=2.15.0): invalid.
        tensorflow 2.16.1 with keras 3.0.3: valid (TensorFlow 2.16 takes Keras 3).

    Fix
        Reinstall the package at a version inside the framework's requirement, or upgrade the
        framework to a release that declares the installed one:

            python -m pip install "keras<2.16,>=2.15.0"
            python -m pip check
    """
    said = [e for e in report_errors(facts, *KINDS) if _outside(str(e.get("spec", "")), str(e.get("have", ""))) is not False]
    if not said:
        return None
    first = said[0]
    wanted = f"{first['package']}{first['spec']}"
    return Hit(
        f"pip says {first['requirer']} {first['requirer_version']} requires {wanted}, but {first['package']} {first['have']} is installed: "
        f"the framework may fail at import or first use: {report_line(first)}",
        evidence={"report.errors": said},
        fix=FixRef(commands=(f"python -m pip install {sh(wanted)}   # back inside {first['requirer']}'s own requirement",
                             "python -m pip check   # every requirement still broken"),
                   note=f"or upgrade {first['requirer']} to a release that declares {first['package']} {first['have']}"),
    )


RULES: tuple[Rule, ...] = (framework_requirement_conflict,)
