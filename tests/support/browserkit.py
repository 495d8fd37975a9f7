"""A report page opened in a real headless browser (Chromium), when one is installed."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


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
    assert CHROMIUM is not None
    profile = tmp_path / "profile"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)}
    done = subprocess.run(
        [
            CHROMIUM,
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
