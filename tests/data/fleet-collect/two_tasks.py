import json, os, sys
rank = int(os.environ["SLURM_PROCID"])
if rank == 1:
    print("boom: no torch here", file=sys.stderr)
    sys.exit(2)
print(json.dumps({"schema_version": 1, "kind": "facts", "host": {"name": "vm", "source": "gethostname()"}, "facts": {"pad": {"value": "x" * 1500, "source": "test"}}}))
