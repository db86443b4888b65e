"""One Report, many renderers: everything that turns the core's results into bytes for a
reader, escaped for where those bytes go.

  report      check's text / JSON / markdown, and the bug-report comment
  summary     the versions at a glance at the top of check's text
  prometheus  the node-exporter textfile
  explain     `fwdoctor explain ID` and docs/findings.md (`python -m fwdoctor.render.explain`)
  testreport  JUnit XML and CTRF JSON (gate, smoke)
  textfit     fitting lines to the terminal's width
  escape      one escaping layer per output target (terminal, GitHub markdown, YAML)

The renderers read the core (model, findings, engine's Report); nothing in the core below
them (probes, rules, KB) imports them (tests/test_import_graph.py). Nothing is imported
here, so each command pays only for the renderers it uses.
"""
