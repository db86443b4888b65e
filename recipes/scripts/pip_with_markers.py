
import json, os, sys
from pip._vendor.packaging import markers
_target = json.loads(os.environ["FWDOCTOR_TARGET_MARKERS"])
_default = markers.default_environment
def _environment():
    env = _default()
    env.update(_target)
    return env
markers.default_environment = _environment
from pip._internal.cli.main import main
sys.exit(main(sys.argv[1:]))
