"""Two files that include each other: the cycle must be rejected."""

from harness import check

check({"a.conf": "include b.conf\n", "b.conf": "x = 1\ninclude a.conf\n"}, "a.conf")
