"""The runner's keyrings under Docker's default seccomp profile, without Docker: a child of
ssegrade under a seccomp filter that refuses the key system calls, as Docker's profile refuses
`add_key`, `request_key` and `keyctl` to every container.

Such a filter binds every process the child starts, the runner's scripts included, and is never
lifted: no script can make, find or read a key, so there is nothing to clear and full
containment goes on. A filter that leaves one of the three calls open still needs the clearing,
and its refusal still stops the script.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_CALLS = {"x86_64": (0xC000003E, (248, 249, 250)), "aarch64": (0xC00000B7, (217, 218, 219))}
"""The audit architecture and the numbers of add_key, request_key and keyctl."""

CHILD = """
import ctypes, struct, sys
from interpreters.real.runner import resolve_runner
from interpreters.real.runner.keyrings import clear_keyrings

arch, calls = {arch}, {calls}
# ld arch; jne arch -> allow; ld nr; jeq each call -> refuse; allow; refuse with EPERM.
code = [(0x20, 0, 0, 4), (0x15, 0, len(calls) + 1, arch), (0x20, 0, 0, 0)]
code += [(0x15, len(calls) - i, 0, nr) for i, nr in enumerate(calls)]
code += [(0x06, 0, 0, 0x7FFF0000), (0x06, 0, 0, 0x00050001)]
program = b"".join(struct.pack("HBBI", *op) for op in code)
buffer = ctypes.create_string_buffer(program)
fprog = struct.pack("HxxxxxxQ", len(code), ctypes.addressof(buffer))
libc = ctypes.CDLL(None, use_errno=True)
ulong = ctypes.c_ulong
libc.prctl.argtypes = [ctypes.c_int, ulong, ctypes.c_char_p, ulong, ulong]
assert libc.prctl(38, 1, None, 0, 0) == 0  # no new privileges
assert libc.prctl(22, 2, fprog, 0, 0) == 0, ctypes.get_errno()  # the filter
assert libc.syscall(calls[-1], -1) == -1 and ctypes.get_errno() == 1  # refused, as in Docker
runner = resolve_runner(None).unwrap()
print(clear_keyrings(runner, "/bin/true"))
"""


def _cleared_under(calls: tuple[int, ...]) -> str:
    arch = _CALLS[platform.machine()][0]
    done = subprocess.run(
        [sys.executable, "-c", CHILD.format(arch=arch, calls=calls)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture
def calls() -> tuple[int, ...]:
    if os.geteuid() != 0:
        pytest.skip("clearing the runner's keyrings needs root")
    if platform.machine() not in _CALLS:
        pytest.skip(f"no key system call numbers for {platform.machine()}")
    return _CALLS[platform.machine()][1]


def test_keys_out_of_every_scripts_reach_need_no_clearing(calls: tuple[int, ...]) -> None:
    # Docker's default profile: all three calls refused, to ssegrade and all it starts.
    assert _cleared_under(calls) == "None"


@pytest.mark.parametrize("open_call", [0, 1], ids=["add_key", "request_key"])
def test_a_key_call_left_open_still_needs_the_clearing(
    calls: tuple[int, ...], open_call: int
) -> None:
    # A script could still add or find a key: keyctl's refusal stops the script.
    refused = tuple(nr for index, nr in enumerate(calls) if index != open_call)
    said = _cleared_under(refused)
    assert said != "None", said
