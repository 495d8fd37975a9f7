"""Parse kvconf files: one `key = value` per line, `# comments`, and `include <file>` lines
that read another file (relative to the including one) in place."""

from __future__ import annotations

import os

from textkit import split_pair, strip_comment


class ConfigError(ValueError):
    """The file is not a valid kvconf file."""


def load(path: str) -> dict[str, str]:
    """Read the kvconf file at `path`, following its includes."""
    values: dict[str, str] = {}
    _read(path, values)
    return values


def _read(path: str, values: dict[str, str]) -> None:
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from exc
    for number, raw in enumerate(lines, 1):
        line = strip_comment(raw)
        if not line:
            continue
        if line.startswith("include "):
            target = line[len("include ") :].strip()
            _read(os.path.join(os.path.dirname(path), target), values)
            continue
        pair = split_pair(line)
        if pair is None:
            raise ConfigError(f"{path}:{number}: expected key = value")
        values[pair[0]] = pair[1]
