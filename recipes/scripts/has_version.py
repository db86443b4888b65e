import importlib.metadata as md, sys
try:
    sys.exit(0 if md.version(sys.argv[1]) == sys.argv[2] else 1)
except md.PackageNotFoundError:
    sys.exit(1)
