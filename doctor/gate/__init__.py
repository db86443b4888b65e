"""`fwdoctor gate`: may jobs land on this node now? One run within a time budget (facts,
every check rule plus the node-type rules, an optional smoke), a verdict by a small policy
(policy.py), and, for Slurm, a drain or resume through scontrol that touches only the
drains fwdoctor wrote (slurm.py). report.py renders it for people, CI and monitors."""
