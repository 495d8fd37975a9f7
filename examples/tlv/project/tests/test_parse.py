import io
import os
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

from tlvparse import BLOB, GROUP, MAGIC, TEXT, UINT, TLVError, encode, parse
from tlvparse.cli import main


class ParseTest(unittest.TestCase):
    def test_empty_file_has_no_records(self):
        self.assertEqual(parse(MAGIC), ())

    def test_scalar_values(self):
        data = MAGIC + encode(TEXT, "héllo".encode())
        data += encode(UINT, b"\x01\x00") + encode(BLOB, b"\x00\xff")
        self.assertEqual([r.value for r in parse(data)], ["héllo", 256, b"\x00\xff"])

    def test_offsets_point_at_headers(self):
        data = MAGIC + encode(TEXT, b"ab") + encode(TEXT, b"")
        self.assertEqual([r.offset for r in parse(data)], [4, 9])

    def test_nested_groups(self):
        inner = encode(GROUP, encode(UINT, b"\x07"))
        (outer,) = parse(MAGIC + encode(GROUP, encode(TEXT, b"x") + inner))
        self.assertEqual(outer.type, GROUP)
        self.assertEqual(outer.value[0].value, "x")
        self.assertEqual(outer.value[1].value[0].value, 7)

    def test_unknown_type_is_kept_as_bytes(self):
        (record,) = parse(MAGIC + encode(0x7F, b"new"))
        self.assertEqual((record.type, record.value), (0x7F, b"new"))

    def test_bad_magic(self):
        with self.assertRaises(TLVError):
            parse(b"TLV\x02")

    def test_truncated_header(self):
        with self.assertRaises(TLVError):
            parse(MAGIC + b"\x01\x00")

    def test_integer_sizes(self):
        for size in (0, 9):
            with self.subTest(size=size), self.assertRaises(TLVError):
                parse(MAGIC + encode(UINT, bytes(size)))

    def test_text_must_be_utf8(self):
        with self.assertRaises(TLVError):
            parse(MAGIC + encode(TEXT, b"\xff"))

    def test_encode_refuses_oversized_values(self):
        with self.assertRaises(TLVError):
            encode(BLOB, bytes(0x10000))


class CliTest(unittest.TestCase):
    def dump(self, data):
        with tempfile.NamedTemporaryFile(delete=False) as handle:
            handle.write(data)
        self.addCleanup(os.unlink, handle.name)
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = main([handle.name])
        return code, out.getvalue(), err.getvalue()

    def test_prints_a_tree(self):
        code, out, _ = self.dump(MAGIC + encode(GROUP, encode(TEXT, b"hi")))
        self.assertEqual(code, 0)
        self.assertEqual(out.splitlines(), ["group @4 (1 records)", "  text @7: 'hi'"])

    def test_rejects_malformed_input(self):
        code, _, err = self.dump(b"nope")
        self.assertEqual(code, 2)
        self.assertIn("bad magic", err)


if __name__ == "__main__":
    unittest.main()
