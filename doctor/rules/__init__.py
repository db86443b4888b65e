"""Every rule, in report order. Explicit, so grep finds them all."""

from __future__ import annotations

from fwdoctor.rules import driver, libs, python, runtime, toolkit, torch
from fwdoctor.rules.base import Rule

RULES: tuple[Rule, ...] = (
    *driver.RULES,
    *toolkit.RULES,
    *libs.RULES,
    *python.RULES,
    *torch.RULES,
    *runtime.RULES,
)
