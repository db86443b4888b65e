"""`fwdoctor fleet`: many nodes at once (report, collect, emit).

The subcommands live in two modules, imported when they run: fleet_report (reading and
judging collected documents) and fleet_collect (gathering them with srun, pdsh/ssh, or a
Kubernetes manifest). fwdoctor never carries its own transport between hosts.
"""

from __future__ import annotations

import click

from fwdoctor.cli import TableGroup

# (subcommand, module under fwdoctor.cli, attribute)
SUBCOMMANDS: tuple[tuple[str, str, str], ...] = (
    ("report", "fleet_report", "fleet_report"),
    ("collect", "fleet_collect", "fleet_collect"),
    ("emit", "fleet_collect", "fleet_emit"),
    ("baseline", "fleet_baseline", "fleet_baseline"),
)


class _FleetGroup(TableGroup):
    table = SUBCOMMANDS


@click.group("fleet", cls=_FleetGroup)
def fleet_group() -> None:
    """Many nodes: gather each node's facts with the cluster's own tools, then see what differs.

    \b
    Examples:
      fwdoctor fleet collect --slurm --out facts/ -- -N 32 -p gpu
      fwdoctor fleet collect --hosts nodes.txt --out facts/
      fwdoctor fleet emit k8s > fwdoctor-facts.yaml
      fwdoctor fleet report facts/ --format html --out fleet.html
      fwdoctor fleet baseline facts/ smoke/ > baseline.yaml
    """
