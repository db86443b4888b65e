import importlib.metadata as md, sys
try:
    md.version(sys.argv[1])
except md.PackageNotFoundError:
    sys.exit(0)
sys.exit(1)
