"""Fleets: many hosts' facts and smoke reports read together, and the drift between them.

`fwdoctor fleet report` reads the documents that `fwdoctor facts`, `check --json` and
`smoke all --report` write on each node (collected by the cluster's own tools: `fleet
collect --slurm`, `--hosts`, or the manifest `fleet emit k8s` writes) and says which nodes
differ from the rest.
"""
