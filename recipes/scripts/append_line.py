import sys
path, line = sys.argv[1:3]
with open(path, "a", encoding="utf-8") as handle:
    handle.write("\n# added by fwdoctor (remove this and the next line to undo)\n" + line + "\n")
