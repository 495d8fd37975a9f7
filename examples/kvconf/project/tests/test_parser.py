"""Functional tests of kvconf (run by the task's test.sh against the build)."""

from __future__ import annotations

import os
import tempfile
import unittest

from kvconf import ConfigError, load


class ParserTest(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.mkdtemp()

    def write(self, name: str, text: str) -> str:
        path = os.path.join(self.dir, name)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        return path

    def test_pairs_and_comments(self) -> None:
        path = self.write("a.conf", "# settings\nname = demo  # inline\nport=8080\n\n")
        self.assertEqual(load(path), {"name": "demo", "port": "8080"})

    def test_include_reads_the_other_file_in_place(self) -> None:
        self.write("base.conf", "port = 1\nhost = h\n")
        path = self.write("main.conf", "include base.conf\nport = 2\n")
        self.assertEqual(load(path), {"port": "2", "host": "h"})

    def test_the_same_file_may_be_included_twice(self) -> None:
        self.write("common.conf", "x = 1\n")
        path = self.write("main.conf", "include common.conf\ninclude common.conf\n")
        self.assertEqual(load(path), {"x": "1"})

    def test_a_line_without_equals_is_rejected(self) -> None:
        path = self.write("bad.conf", "just words\n")
        with self.assertRaises(ConfigError):
            load(path)


if __name__ == "__main__":
    unittest.main()
