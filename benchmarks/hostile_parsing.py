"""How long do triage and fleet collect take on hostile input? (issue 24, item 3)

Prints, for each adversarial line of tests/test_hostile_round2_parsing.py (READER_LINES:
runs of blanks, tabs, digits, dots, repeated literals of the readers' own patterns), the
time `triage()` takes on it at each size (65 KB is GitHub's largest issue body), each
reader's time with the line cap lifted (what the patterns themselves cost), and the time
to read a hosts file of 60,000 names with repeats.

    python benchmarks/hostile_parsing.py [--sizes 8192,65536] [--hosts 60000] [--give-up 20]

A size is skipped for a line once a smaller size took over --give-up seconds (a quadratic
pattern on 65 KB runs for minutes). To time an older checkout, put its package first:
`PYTHONPATH=/path/to/old python benchmarks/hostile_parsing.py` (the old tree's `doctor/`
folder named `fwdoctor`).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _lines() -> dict[str, str]:
    """READER_LINES from the test file, without importing pytest's conftest."""
    source = (ROOT / "tests" / "test_hostile_round2_parsing.py").read_text()
    start = source.index("READER_LINES = {")
    end = source.index("}\n", start) + 2
    scope: dict[str, object] = {}
    exec(source[start:end], scope)  # a dict literal of string expressions
    return scope["READER_LINES"]  # type: ignore[return-value]


def _fit(line: str, size: int) -> str:
    return line[: size - 40] + line[-40:] if len(line) > size else line


def time_triage(sizes: list[int], give_up: float) -> None:
    from fwdoctor.triage import PARSERS, triage
    from fwdoctor.triage import text as triage_text

    cap = getattr(triage_text, "MAX_PARSED_LINE", None)
    print(f"triage() per line (line cap: {cap if cap is not None else 'none'})")
    print(f"  {'line':14s}" + "".join(f"{size:>12d} B" for size in sizes) + "   slowest reader (cap lifted, largest size run)")
    for label, line in _lines().items():
        cells, slow = [], ""
        gave_up = False
        for size in sizes:
            if gave_up:
                cells.append(f"{'skipped':>14s}")
                continue
            text = _fit(line, size)
            start = time.perf_counter()
            triage(text)
            took = time.perf_counter() - start
            cells.append(f"{took:13.3f}s")
            gave_up = took > give_up
        # Each reader on the largest size that ran, without the cap.
        size = max(s for s, c in zip(sizes, cells) if "skipped" not in c)
        if cap is not None:
            triage_text.MAX_PARSED_LINE = 10**9
        try:
            from fwdoctor.triage.text import Lines

            lines = Lines.of(_fit(line, size))
            worst = (0.0, "")
            for parse in PARSERS:
                start = time.perf_counter()
                parse(lines)
                took = time.perf_counter() - start
                worst = max(worst, (took, parse.__module__.rsplit(".", 1)[-1]))
            slow = f"{worst[1]} {worst[0]:.3f}s at {size} B"
        finally:
            if cap is not None:
                triage_text.MAX_PARSED_LINE = cap
        print(f"  {label:14s}" + "".join(cells) + f"   {slow}", flush=True)


def time_hosts(count: int) -> None:
    from fwdoctor.fleet.collect import parse_hosts_file

    names = [f"gpu-{i:05d}.rack{i % 40}.cluster.example" for i in range(count)]
    text = "\n".join(names + names[::7]) + "\n"
    start = time.perf_counter()
    parse_hosts_file(text, "--hosts bench")
    print(f"hosts file: {count:,} names + {len(names[::7]):,} repeats read in {time.perf_counter() - start:.3f}s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="8192,65536", help="line sizes in bytes, comma-separated")
    parser.add_argument("--hosts", type=int, default=60000, help="names in the hosts file")
    parser.add_argument("--give-up", type=float, default=20.0, help="skip larger sizes of a line after this many seconds")
    args = parser.parse_args()
    spec = importlib.util.find_spec("fwdoctor")
    print(f"fwdoctor from {spec.origin if spec else '?'}; Python {sys.version.split()[0]}")
    time_triage([int(s) for s in args.sizes.split(",")], args.give_up)
    time_hosts(args.hosts)


if __name__ == "__main__":
    main()
