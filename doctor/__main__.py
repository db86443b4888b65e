"""`python -m fwdoctor ...` is `fwdoctor ...`."""

from fwdoctor.cli import main

main(prog_name="fwdoctor")
