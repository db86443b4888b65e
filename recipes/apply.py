"""Runs a Plan: the only code in fwdoctor that changes the host.

    from fwdoctor.recipes.apply import apply_plan
    result = apply_plan(plan, confirm=ask_user, log_path="/tmp/fix.log", progress=print)
    if not result.ok:
        print(result.summary())          # what was done, what failed, how to undo it

`confirm(plan) -> bool` is called once, before anything happens (None: no question, the
caller already decided, e.g. `--yes`). `progress(line)` receives one human-readable line
per event. Every command, its exit status and its whole output go to `log_path` (default:
a new file under $XDG_STATE_HOME/fwdoctor/logs).

Order: refused plans stop at once; then `plan.files` are written atomically (temporary file
+ rename; an existing different file is backed up first), then the steps run in order, each
through fwdoctor.runner.run with the plan's env and its own timeout. A step whose `skip_if`
command exits 0 is skipped, so a second apply on a fixed host changes nothing. The first
failing step stops the plan; the result lists what was done and how to undo each part.
Ctrl-C or SIGTERM stops it the same way (status "interrupted"). Then `plan.verify` runs.
"""

from __future__ import annotations

import datetime as _dt
import os
import shlex
import tempfile
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, TextIO

from fwdoctor import runner
from fwdoctor.recipes import netcheck
from fwdoctor.recipes.plan import FileWrite, Plan, Step

ConfirmFn = Callable[[Plan], bool]
ProgressFn = Callable[[str], None]
# waiting(label, func, *args, **kwargs) runs func and may show progress meanwhile (the CLI's
# fwdoctor.cli.output.waiting: a bar on a terminal while a pip step runs).
WaitFn = Callable[..., Any]

SKIP_CHECK_TIMEOUT_S = 120.0
BACKUP_SUFFIX = ".fwdoctor-backup"

# ApplyResult.status values
APPLIED = "applied"  # something changed and verification passed
UNCHANGED = "unchanged"  # everything was already in place (all skipped), verification passed
DECLINED = "declined"  # the user said no; nothing happened
REFUSED = "refused"  # the recipe refuses this plan (plan.refused); nothing happened
FAILED = "failed"  # a step failed; the ones before it stay done
INTERRUPTED = "interrupted"  # Ctrl-C / SIGTERM; the steps before stay done
VERIFY_FAILED = "verify-failed"  # every step ran, but the verification did not pass


@dataclass
class StepOutcome:
    """What happened to one file write, step or verification."""

    what: str  # the quoted command line, or "write PATH"
    status: str  # "done", "skipped", "failed", "interrupted"
    returncode: int | None = None
    output_tail: str = ""  # the last lines of output, for the failure message
    undo: str = ""


@dataclass
class ApplyResult:
    plan: Plan
    status: str
    log_path: str
    outcomes: list[StepOutcome] = field(default_factory=list)
    verify: list[StepOutcome] = field(default_factory=list)
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.status in (APPLIED, UNCHANGED)

    @property
    def done(self) -> list[StepOutcome]:
        return [o for o in self.outcomes if o.status == "done"]

    def undo_commands(self) -> list[str]:
        """How to revert what was done, most recent first."""
        return [o.undo for o in reversed(self.done) if o.undo]

    def summary(self) -> str:
        """Lines for a human: the outcome, what was done, what failed, how to undo."""
        lines = [f"{self.plan.recipe}: {self.status}" + (f": {self.message}" if self.message else "")]
        for o in self.outcomes:
            lines.append(f"  [{o.status}] {o.what}")
            if o.status in ("failed", "interrupted") and o.output_tail:
                lines += [f"      | {line}" for line in o.output_tail.splitlines()]
        for o in self.verify:
            lines.append(f"  [verify {o.status}] {o.what}")
            if o.status == "failed" and o.output_tail:
                lines += [f"      | {line}" for line in o.output_tail.splitlines()]
        if self.status in (FAILED, INTERRUPTED):
            undo = self.undo_commands()
            if self.done:
                lines.append("  done before stopping (kept): " + str(len(self.done)) + " item(s)")
            if undo:
                lines.append("  to undo, run in this order:")
                lines += [f"    {u}" for u in undo]
            elif self.done:
                lines.append("  nothing recorded to undo; a re-run resumes (finished steps are skipped)")
        lines.append(f"  log: {self.log_path}")
        return "\n".join(lines)


def default_log_path(recipe: str, now: _dt.datetime | None = None) -> str:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    stamp = (now or _dt.datetime.now()).strftime("%Y%m%d-%H%M%S")
    return os.path.join(base, "fwdoctor", "logs", f"{recipe}-{stamp}-{os.getpid()}.log")


def quote_argv(argv: tuple[str, ...] | list[str]) -> str:
    return " ".join(shlex.quote(a) for a in argv)


def apply_plan(
    plan: Plan,
    confirm: ConfirmFn | None = None,
    log_path: str | None = None,
    progress: ProgressFn | None = None,
    env: Mapping[str, str] | None = None,
    waiting: WaitFn | None = None,
) -> ApplyResult:
    """Execute `plan` (see the module docstring). Never raises for a failing step.

    `env` is the base environment of every command (default: this process's); the plan's
    `env` and each step's `env` are layered on top. Nothing changes our own os.environ.
    """
    log_path = log_path or default_log_path(plan.recipe)
    say = progress or (lambda line: None)
    wait = waiting or _no_progress
    if plan.refused:
        return ApplyResult(plan, REFUSED, log_path, message=plan.refused)
    if confirm is not None and not confirm(plan):
        return ApplyResult(plan, DECLINED, log_path, message="nothing was changed")
    os.makedirs(os.path.dirname(os.path.abspath(log_path)), exist_ok=True)
    base_env = dict(os.environ if env is None else env)
    base_env.update(plan.env)
    result = ApplyResult(plan, APPLIED, log_path)
    # SIGTERM and SIGHUP stop the plan like Ctrl-C (cleanly, with a summary), ending the
    # running step's whole tree; under the CLI its handler is already in place.
    with open(log_path, "a", encoding="utf-8") as log, runner.ending_tree_on_signals():
        _log(log, f"# fwdoctor apply: {plan.recipe}: {plan.title}\n# started {_dt.datetime.now().isoformat(timespec='seconds')}\n")
        for key, value in plan.env.items():
            _log(log, f"# env {key}={shlex.quote(value)}\n")
        current: StepOutcome | None = None
        try:
            for item in plan.files:
                current = StepOutcome(f"write {item.path}", "interrupted")
                say(f"write {item.path}")
                current = _write_file(item, log)
                result.outcomes.append(current)
                current = None
            total = len(plan.steps)
            for index, step in enumerate(plan.steps, start=1):
                current = StepOutcome(quote_argv(step.argv), "interrupted", undo=step.undo)
                outcome = _run_step(step, base_env, log, say, f"[{index}/{total}]", wait=wait)
                result.outcomes.append(outcome)
                current = None
                if outcome.status == "failed":
                    result.status = FAILED
                    result.message = f"step {index} of {total} failed: {outcome.what}"
                    break
        except KeyboardInterrupt:
            if current is not None:
                result.outcomes.append(current)
            result.status = INTERRUPTED
            result.message = "stopped by the user (Ctrl-C or SIGTERM)"
            _log(log, "# INTERRUPTED\n")
        if result.status == APPLIED:
            if all(o.status == "skipped" for o in result.outcomes):
                result.status = UNCHANGED
            try:
                for step in plan.verify:
                    outcome = _run_step(step, base_env, log, say, "[verify]", verifying=True, wait=wait)
                    result.verify.append(outcome)
                    if outcome.status == "failed":
                        result.status = VERIFY_FAILED
                        result.message = f"verification failed: {outcome.what}"
                        break
            except KeyboardInterrupt:
                result.status = INTERRUPTED
                result.message = "stopped by the user during verification"
        _log(log, f"# finished: {result.status}\n")
    return result


# ----------------------------------------------------------------------------- pieces
def _no_progress(_label: str, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return func(*args, **kwargs)


def _run_step(step: Step, base_env: Mapping[str, str], log: TextIO, say: ProgressFn, label: str, verifying: bool = False,
              wait: WaitFn = _no_progress) -> StepOutcome:
    env = dict(base_env)
    env.update(step.env)
    what = quote_argv(step.argv)
    if step.skip_if and not verifying:
        check = runner.run(step.skip_if, timeout=SKIP_CHECK_TIMEOUT_S, env=env, cwd=step.cwd)
        _log(log, f"$ {quote_argv(step.skip_if)}   # skip check\n# exit {check.returncode}{' ' + check.error if check.error else ''}\n")
        if check.ok:
            say(f"{label} already done, skipped: {what}")
            _log(log, "# skipped: already done\n\n")
            return StepOutcome(what, "skipped")
    argv = list(step.argv)
    if step.needs_root and hasattr(os, "geteuid") and os.geteuid() != 0:
        # Non-interactive: we capture output, so sudo cannot prompt. A missing sudo
        # credential fails the step with sudo's own message.
        argv = ["sudo", "-n", "--", *argv]
    say(f"{label} {step.why.splitlines()[0] if step.why else what}")
    indexes, links = netcheck.pip_sources(step.argv)
    if indexes or links:
        # Where pip goes, said before it runs; one that does not answer fails the step now
        # with the reason, not after pip's retries with "No matching distribution".
        say(f"{label} pip asks: {', '.join(indexes + links)}")
        down = netcheck.probe_sources(indexes, links)
        if down:
            tail = "; ".join(f"{where} did not answer: {why}" for where, why in down) + " (pip was not run)"
            _log(log, f"# {tail}\n\n")
            say(f"{label} FAILED: {what}")
            return StepOutcome(what, "failed", None, tail)
    _log(log, f"$ {quote_argv(argv)}\n" + (f"# cwd {step.cwd}\n" if step.cwd else ""))
    res = wait(f"{label} running {os.path.basename(step.argv[0])}", runner.run, argv, timeout=step.timeout_s, env=env, cwd=step.cwd)
    _log(log, (res.stdout or "") + (res.stderr or ""))
    status = "done" if res.ok else "failed"
    reason = res.describe_failure() if not res.ok else ""
    _log(log, f"\n# exit {res.returncode}{' (' + reason + ')' if reason else ''}\n\n")
    tail = "\n".join(((res.stderr or "") + (res.stdout or "")).strip().splitlines()[-8:])
    if not res.ok:
        if res.timed_out:
            tail = f"no answer within {step.timeout_s:g}s (killed)\n{tail}".strip()
        elif res.error:
            tail = f"{argv[0]}: {res.error}"
        say(f"{label} FAILED: {what}")
    return StepOutcome(what, status, res.returncode, tail, undo=step.undo if res.ok else "")


def _write_file(item: FileWrite, log: TextIO) -> StepOutcome:
    path = item.path
    data = item.content.encode("utf-8")
    what = f"write {path}"
    try:
        if os.path.isfile(path):
            with open(path, "rb") as handle:
                same = handle.read() == data
            if same and (os.stat(path).st_mode & 0o7777) == item.mode:
                _log(log, f"# {what}: already up to date, skipped\n")
                return StepOutcome(what, "skipped")
        directory = os.path.dirname(os.path.abspath(path))
        os.makedirs(directory, exist_ok=True)
        undo = f"rm -f {shlex.quote(path)}"
        if os.path.lexists(path):
            backup = path + BACKUP_SUFFIX
            if not os.path.lexists(backup):  # keep the oldest original, never overwrite it
                os.replace(path, backup) if os.path.islink(path) else _copy(path, backup)
            undo = f"mv -f {shlex.quote(backup)} {shlex.quote(path)}"
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.chmod(tmp, item.mode)
            os.replace(tmp, path)
            tmp = ""
        finally:
            if tmp and os.path.exists(tmp):
                os.unlink(tmp)
    except OSError as exc:
        _log(log, f"# {what}: FAILED: {exc}\n")
        return StepOutcome(what, "failed", None, f"{path}: {exc.strerror or exc}")
    _log(log, f"# {what} ({len(data)} bytes, mode {item.mode:o})\n")
    return StepOutcome(what, "done", 0, undo=undo)


def _copy(src: str, dst: str) -> None:
    import shutil

    shutil.copy2(src, dst)


def _log(log: TextIO, text: str) -> None:
    log.write(text)
    log.flush()


# ----------------------------------------------------------------------------- file steps
# Plan.files are written before the steps. A file that must only appear once the steps
# succeeded (a toolkit's env snippet: nothing may be written before a download is
# verified) is written by a step instead, through this module, so printed plans stay
# runnable by hand:
#     python -m fwdoctor.recipes.apply write PATH MODE CONTENT   (atomic; backs up a different file)
#     python -m fwdoctor.recipes.apply same PATH SHA256          (exit 0 when PATH's digest is SHA256: a skip check)
def file_step(python: str, path: str, content: str, why: str = "", mode: int = 0o644) -> Step:
    """A Step writing `content` to `path` atomically, skipped when already there."""
    import hashlib

    digest = hashlib.sha256(content.encode("utf-8")).hexdigest()
    return Step(
        (python, "-m", "fwdoctor.recipes.apply", "write", path, f"{mode:o}", content),
        why=why or f"write {path}",
        skip_if=(python, "-m", "fwdoctor.recipes.apply", "same", path, digest),
        undo=f"rm -f {shlex.quote(path)}",
    )


def main(argv: list[str] | None = None) -> int:
    import sys

    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) == 4 and args[0] == "write":
        _, path, mode, content = args
        with open(os.devnull, "w", encoding="utf-8") as sink:
            outcome = _write_file(FileWrite(path, content, mode=int(mode, 8)), sink)
        if outcome.status == "failed":
            print(f"write: {outcome.output_tail}", file=sys.stderr)
            return 1
        print(f"{path}: {'written' if outcome.status == 'done' else 'already up to date'}")
        return 0
    if len(args) == 3 and args[0] == "same":
        import hashlib

        _, path, digest = args
        try:
            with open(path, "rb") as handle:
                return 0 if hashlib.sha256(handle.read()).hexdigest() == digest.lower() else 1
        except OSError:
            return 1
    print("usage: python -m fwdoctor.recipes.apply write PATH MODE CONTENT | same PATH SHA256", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
