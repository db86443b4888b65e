#!/bin/sh
# fwdoctor plan: env: consistent CUDA environment for /usr/local/cuda-12.8
set -eu

# then run: . /srv/it's a "test" dir/fw env.sh

# the environment to source; no shell rc file is touched
mkdir -p '/srv/it'"'"'s a "test" dir'
cat > '/srv/it'"'"'s a "test" dir/fw env.sh' <<'FWDOCTOR_EOF'
# written by fwdoctor (recipe env). Source it: . THIS_FILE
export CUDA_HOME=/usr/local/cuda-12.8
export CUDA_PATH=/usr/local/cuda-12.8
export PATH='/srv/it'"'"'s a "test" dir/venv/bin:/usr/local/cuda-12.8/bin:/usr/local/bin:/usr/bin:/bin'
export LD_LIBRARY_PATH=/usr/local/cuda-12.8/lib64:/opt/other/lib
export LD_PRELOAD=/usr/lib/libjemalloc.so.2
FWDOCTOR_EOF
chmod 644 '/srv/it'"'"'s a "test" dir/fw env.sh'

# uninstall nvidia-cudnn-cu11: built for CUDA 11, torch uses CUDA 12.8 and does not require it
'/srv/it'"'"'s a "test" dir/venv/bin/python' -c 'import importlib.metadata as md, sys
try:
    md.version(sys.argv[1])
except md.PackageNotFoundError:
    sys.exit(0)
sys.exit(1)
' nvidia-cudnn-cu11 >/dev/null 2>&1 || '/srv/it'"'"'s a "test" dir/venv/bin/python' -m pip uninstall -y -- nvidia-cudnn-cu11

# source /srv/it's a "test" dir/fw env.sh from /srv/it's a "test" dir/venv/bin/activate
grep -qxF '. '"'"'/srv/it'"'"'"'"'"'"'"'"'s a "test" dir/fw env.sh'"'"'' '/srv/it'"'"'s a "test" dir/venv/bin/activate' >/dev/null 2>&1 || '/srv/it'"'"'s a "test" dir/venv/bin/python' -c 'import sys
path, line = sys.argv[1:3]
with open(path, "a", encoding="utf-8") as handle:
    handle.write("\n# added by fwdoctor (remove this and the next line to undo)\n" + line + "\n")
' '/srv/it'"'"'s a "test" dir/venv/bin/activate' '. '"'"'/srv/it'"'"'"'"'"'"'"'"'s a "test" dir/fw env.sh'"'"''
