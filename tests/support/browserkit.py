"""A report page opened in a real headless browser (Chromium), when one is installed."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.machinesetup import wait_for_machine_setup


def chromium() -> str | None:
    """The browser's path, or None when none is installed (once the machine's preparation, if
    one runs beside the tests, has ended)."""
    wait_for_machine_setup()
    return shutil.which("chromium") or shutil.which("chromium-browser")


def require_chromium() -> str:
    """The browser's path; the test is skipped when none is installed."""
    found = chromium()
    if found is None:
        pytest.skip("Chromium is not installed (Debian package `chromium`)")
    return found


FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)


def browse(
    tmp_path: Path, page: Path, *args: str, fragment: str = ""
) -> subprocess.CompletedProcess[str]:
    """Run Chromium on the page (at `#fragment`, if given) with a fresh profile; fail the test
    if it fails."""
    browser = require_chromium()
    profile = tmp_path / "profile"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)}
    done = subprocess.run(
        [
            browser,
            *FLAGS,
            f"--user-data-dir={profile}",
            *args,
            page.as_uri() + (f"#{fragment}" if fragment else ""),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done
