"""The public surface of the core: curated, documented, importable without the interpreters."""

from __future__ import annotations

import inspect
import subprocess
import sys

import ssegrade


def test_every_public_name_exists_and_is_documented() -> None:
    assert sorted(ssegrade.__all__) == sorted(set(ssegrade.__all__))
    for name in ssegrade.__all__:
        value = getattr(ssegrade, name)
        if inspect.isfunction(value) or inspect.isclass(value):
            assert inspect.getdoc(value), f"{name} has no docstring"


def test_core_imports_no_interpreter_or_io_library() -> None:
    code = (
        "import sys, ssegrade; "
        "banned = ('interpreters', 'sh', 'subprocess', 'httpx', 'click', 'rich', 'uvicorn'); "
        "print([m for m in banned if m in sys.modules])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
