"""Helpers shared by the kvconf proofs of concept (imported from beside them).

`check(files, entry)` writes the config files into a scratch folder and loads `entry` with
the built kvconf. Loading must either succeed or raise ConfigError; any other exception (a
RecursionError from unbounded include nesting, say) is the crash the PoC looks for: exit 1.
"""

from __future__ import annotations

import os
import sys
import tempfile
import traceback


def check(files: dict[str, str], entry: str) -> None:
    """Exit 0 when kvconf handles `entry` (parsed or rejected), 1 when it crashes."""
    from kvconf import ConfigError, load

    folder = tempfile.mkdtemp(prefix="kvconf-poc-")
    for name, text in files.items():
        with open(os.path.join(folder, name), "w", encoding="utf-8") as handle:
            handle.write(text)
    sys.setrecursionlimit(400)
    try:
        load(os.path.join(folder, entry))
    except ConfigError as exc:
        print(f"poc: rejected cleanly: {exc}")
        sys.exit(0)
    except BaseException:
        traceback.print_exc(limit=3)
        print("poc: CRASH: kvconf raised an unexpected exception", file=sys.stderr)
        sys.exit(1)
    print("poc: parsed")
    sys.exit(0)
