"""`fwdoctor fleet baseline`: each node type's normal, learned from the fleet's own facts and
smoke results (fwdoctor.fleet.baseline); the output is what `gate --baseline` reads."""

from __future__ import annotations

import click

from fwdoctor.cli.common import fail
from fwdoctor.cli.output import note


@click.command("baseline")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--out", "out_file", type=click.Path(dir_okay=False), help="Write the baseline here (default: stdout).")
def fleet_baseline(paths: tuple[str, ...], out_file: str | None) -> None:
    """Learn each node type's median (GPUs, PCIe width and generation, NVLinks, GEMM).

    \b
    Examples:
      fwdoctor fleet baseline facts/ smoke/ > baseline.yaml
      fwdoctor gate --baseline baseline.yaml --smoke kernel
    """
    from fwdoctor.fleet.baseline import learn, render

    doc = learn(list(paths))
    for bad in doc["bad"]:
        note(f"fwdoctor: fleet baseline: {bad['file']}: {bad['reason']}")
    if not doc["types"]:
        fail("fleet baseline: no node with facts naming its GPUs in " + ", ".join(paths))
    text = render(doc)
    if out_file is None:
        click.echo(text, nl=False)
        return
    try:
        with open(out_file, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        fail(f"--out {out_file}: {exc.strerror or exc}")
