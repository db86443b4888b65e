"""Node names folded into Slurm hostlist ranges: dgx-0055, dgx-0056, dgx-0057, dgx-0058 ->
dgx-[0055-0058], the form `scontrol show hostnames` expands and `scontrol update
nodename=...` takes, so a list on the fleet page can be pasted into scontrol.

The syntax is Slurm's (slurm/src/common/hostlist.c, `hostlist_ranged_string`): a prefix,
brackets holding comma-separated numbers and lo-hi ranges, an optional suffix; numbers keep
their zero padding, and only numbers of the same width share a range (0099 and 0100 do,
99 and 100 do too, 099 and 0100 do not). The last run of digits in a name is the one folded,
as Slurm does for single-dimension names. Names without digits are listed as they are.
"""

from __future__ import annotations

import re
from typing import Iterable

_LAST_NUMBER = re.compile(r"^(.*?)(\d+)(\D*)$")


def fold(names: Iterable[str]) -> str:
    """One hostlist expression for the names (duplicates dropped), groups in name order."""
    groups: dict[tuple[str, str, int], list[int]] = {}
    order: list[tuple[str, str, int] | str] = []
    unique = list(dict.fromkeys(names))
    matches = {name: _LAST_NUMBER.match(name) for name in unique}
    # Zero-padded widths per prefix/suffix: an unpadded number as wide joins them (gpu099, gpu100).
    padded = {(m.group(1), m.group(3), len(m.group(2))) for m in matches.values() if m and _is_padded(m.group(2))}
    for name in unique:
        m = matches[name]
        if not m or any(ch in name for ch in "[],"):
            order.append(name)
            continue
        digits = m.group(2)
        width = len(digits) if _is_padded(digits) or (m.group(1), m.group(3), len(digits)) in padded else 0
        key = (m.group(1), m.group(3), width)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(int(m.group(2)))
    parts = []
    for item in order:
        if isinstance(item, str):
            parts.append(item)
            continue
        prefix, suffix, width = item
        numbers = sorted(set(groups[item]))
        if len(numbers) == 1:
            parts.append(f"{prefix}{numbers[0]:0{width}d}{suffix}")
            continue
        parts.append(f"{prefix}[{','.join(_ranges(numbers, width))}]{suffix}")
    return ",".join(parts)


def _is_padded(digits: str) -> bool:
    return len(digits) > 1 and digits.startswith("0")


def _ranges(numbers: list[int], width: int) -> list[str]:
    out = []
    start = prev = numbers[0]
    for number in numbers[1:] + [None]:  # type: ignore[list-item]
        if number is not None and number == prev + 1:
            prev = number
            continue
        out.append(f"{start:0{width}d}" if start == prev else f"{start:0{width}d}-{prev:0{width}d}")
        if number is not None:
            start = prev = number
    return out


def folded(names: list[str], limit: int) -> str:
    """`fold`, cut after `limit` groups with the count of the rest (the page's lists stay short)."""
    text = fold(names)
    pieces = _split_top(text)
    if len(pieces) <= limit:
        return text
    return ",".join(pieces[:limit]) + f" (+{len(pieces) - limit} more groups)"


def _split_top(text: str) -> list[str]:
    """The expression's top-level comma-separated pieces (commas inside brackets stay)."""
    pieces, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            pieces.append(text[start:i])
            start = i + 1
    pieces.append(text[start:])
    return [p for p in pieces if p]
