"""tlvdump: print a TLV file as a tree.

Exit status: 0 printed, 2 rejected (malformed input or unreadable file).
"""

from __future__ import annotations

import sys

from tlvparse.parser import BLOB, GROUP, TEXT, UINT, Record, TLVError, parse

NAMES = {TEXT: "text", UINT: "uint", BLOB: "blob", GROUP: "group"}


def render(records: tuple[Record, ...], depth: int = 0) -> list[str]:
    lines = []
    for record in records:
        name = NAMES.get(record.type, f"type-0x{record.type:02x}")
        prefix = f"{'  ' * depth}{name} @{record.offset}"
        if isinstance(record.value, tuple):
            lines.append(f"{prefix} ({len(record.value)} records)")
            lines.extend(render(record.value, depth + 1))
        elif isinstance(record.value, bytes):
            lines.append(f"{prefix}: {record.value.hex()}")
        else:
            lines.append(f"{prefix}: {record.value!r}")
    return lines


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: tlvdump FILE", file=sys.stderr)
        return 2
    try:
        with open(args[0], "rb") as handle:
            data = handle.read()
        records = parse(data)
    except (OSError, TLVError) as exc:
        print(f"tlvdump: {args[0]}: {exc}", file=sys.stderr)
        return 2
    print("\n".join(render(records)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
