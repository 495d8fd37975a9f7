"""textkit: small text helpers (vendored dependency of kvconf)."""


def strip_comment(line: str) -> str:
    """The line without a trailing `#` comment, and without surrounding blanks."""
    return line.split("#", 1)[0].strip()


def split_pair(line: str) -> tuple[str, str] | None:
    """`key = value` as a pair of stripped strings, or None when there is no `=`."""
    if "=" not in line:
        return None
    key, value = line.split("=", 1)
    return key.strip(), value.strip()
