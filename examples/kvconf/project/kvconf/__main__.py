"""`python -m kvconf FILE`: print the settings of FILE, one `key=value` a line.

Exit 0 when the file is valid, 2 when it is rejected with a message.
"""

from __future__ import annotations

import sys

from kvconf.parser import ConfigError, load


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: kvconf FILE", file=sys.stderr)
        return 2
    try:
        values = load(argv[0])
    except ConfigError as exc:
        print(f"kvconf: {exc}", file=sys.stderr)
        return 2
    for key, value in sorted(values.items()):
        print(f"{key}={value}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
