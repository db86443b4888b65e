"""`python -m fwdoctor ...` is `fwdoctor ...`."""

from fwdoctor.launch import run

run()
