# Prints a small facts document, as `fwdoctor facts` would (recording fixture for pdsh).
import json, socket
print(json.dumps({"schema_version": 1, "kind": "facts", "host": {"name": socket.gethostname(), "source": "gethostname()"},
                  "facts": {"pad": {"value": "y" * 1500, "source": "test"}}}, indent=2))
