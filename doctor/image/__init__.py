"""Docker images read without running them: `check --image TAG` (the local engine) and
`check --image-archive FILE|DIR` (a `docker save` tarball or an OCI layout).

One job per module; imports point down this list, and nothing here imports back up:

  local_engine  an image from the local Docker engine: one export stream (or a skeleton on disk)
  archive       an image from a saved archive, layers applied in order, every reader budgeted
  inspected     what both return (Inspected: tree, ENV, config) and ImageError
  unpack        a tar stream unpacked defensively to a folder (for --root)
  stream        a forward-only byte stream tarfile can read
  host          ImageHost: a Host answering from the in-memory tree
  tree          the in-memory tree, built from tar streams (whiteouts, budgets)
  members       which tar members are refused, and the image path a member names
  keep          which files keep content: the probes' declared reads (fwdoctor.probes.READS)

The probes only declare what they read (plain `Read` rows); this package reads those
declarations, and no probe imports it (tests/test_import_graph.py). Nothing is imported
here, so `import fwdoctor.image.tree` costs only the tree.
"""
