"""A file that includes itself: kvconf must reject the loop, not recurse until it crashes."""

from harness import check

check({"loop.conf": "a = 1\ninclude loop.conf\n"}, "loop.conf")
