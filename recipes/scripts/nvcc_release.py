import re, subprocess, sys
nvcc, want = sys.argv[1:3]
try:
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True,
                         timeout=60).stdout
except (OSError, subprocess.TimeoutExpired) as exc:
    print(f"{nvcc}: {exc}")
    sys.exit(1)
m = re.search(r"release (\d+\.\d+)", out)
print(out.strip().splitlines()[-1] if out.strip() else f"{nvcc}: no output")
sys.exit(0 if m and m.group(1) == want else 1)
