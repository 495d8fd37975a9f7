"""Nothing a script writes outlives its grading, and no grading reaches another's (SPEC §5
"Containment", `full`): written as the attacks.

- a folder first on the scripts' `PATH` that anyone may write (as `/go/bin`) where a hostile
  patch's build plants `grep`, after which the next grading of an empty patch passes; a
  toolchain folder the runner owns (as `CARGO_HOME`) where a build writes;
- two gradings at once whose `TMP`/`TEMP`/`TMPDIR` name the parent of their scratch folders:
  one plants `usercustomize.py` in the other's HOME;
- a System V shared memory segment and keys in the runner's user keyring and persistent
  keyring made by one grading's build, looked for by the next grading's.

End to end with the `ssegrade` command on real tasks, as root (scripts as the runner account).
"""

from __future__ import annotations

import os
import platform
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from interpreters.real.files import remove_tree
from interpreters.real.runner import probe, resolve_runner
from tests.support.realtask import RealTask, evaluating, git, log_of, make_task

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        os.geteuid() != 0 or not probe().namespaces, reason="needs root and full containment"
    ),
]

RUN = """#!/bin/sh
test -f out.txt || { echo "no build output" >&2; exit 3; }
grep -q fixed out.txt || { echo "the PoC triggered the bug" >&2; exit 1; }
"""
INTENT = """diff --git a/tests/intent.sh b/tests/intent.sh
new file mode 100644
--- /dev/null
+++ b/tests/intent.sh
@@ -0,0 +1 @@
+grep -q VALUE=fixed lib.sh
"""


@pytest.fixture
def root() -> Iterator[Path]:
    """A folder of this test's own (the parent of its gradings' scratch folders, for some)."""
    folder = Path(tempfile.mkdtemp(prefix="ssegrade-persist-"))
    folder.chmod(0o755)
    yield folder
    remove_tree(folder)


def task(folder: Path, build: str, *, run: str = RUN, test: str | None = None) -> RealTask:
    """The shell task with these scripts; its hidden test greps."""
    made = make_task(folder, pocs=2, intent_diff=INTENT)
    made.script("build.sh", build)
    made.script("run.sh", run)
    if test is not None:
        made.script("test.sh", test)
    return made


def agent_adds(made: RealTask, name: str, text: str) -> None:
    """What the agent does: a new file in the tree, committed."""
    (made.source / name).write_text(text)
    git(made.source, "add", name)
    git(made.source, "commit", "-qm", f"add {name}")


def evaluate(made: RealTask, env: dict[str, str]) -> str:
    """`ssegrade evaluate` of `made` with these variables set; its verdict line."""
    done = subprocess.run(
        evaluating(made),
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


# ------------------------------------------------------------------- toolchain folders

HOOKED = """#!/bin/sh
. ./lib.sh
if [ -f hook.sh ]; then sh hook.sh || exit 1; fi
echo "$VALUE" > out.txt
"""
PLANT_GREP = """first=${PATH%%:*}
printf '#!/bin/sh\\nexit 0\\n' > "$first/grep" && chmod 755 "$first/grep" &&
  echo "planted $first/grep"
exit 0
"""


def test_a_grep_planted_in_a_folder_on_path_is_gone_for_the_next_grading(root: Path) -> None:
    gobin = root / "go" / "bin"
    gobin.mkdir(parents=True)
    for folder in (gobin.parent, gobin):
        folder.chmod(0o1777)  # as in Go's images: /go 1777, /go/bin first on PATH
    env = {"PATH": f"{gobin}:/usr/local/bin:/usr/bin:/bin"}
    hostile = task(root / "hostile", HOOKED)
    agent_adds(hostile, "hook.sh", PLANT_GREP)
    evaluate(hostile, env)
    log = log_of(hostile.results, "build")
    assert f"planted {gobin}/grep" in log, log  # the build wrote there, and went on
    assert not (gobin / "grep").exists()
    empty = task(root / "empty", HOOKED)
    assert evaluate(empty, env).startswith("failed")
    assert f"{gobin}: a copy-on-write layer" in log


CARGO_BUILD = """#!/bin/sh
. ./lib.sh
if [ -e "$CARGO_HOME/registry.lock" ]; then echo "left by an earlier grading" >&2; exit 1; fi
echo "$VALUE" > "$CARGO_HOME/registry.lock" || exit 1
echo "$VALUE" > out.txt
"""


def test_a_toolchain_folder_the_runner_writes_keeps_nothing_for_the_next_grading(
    root: Path,
) -> None:
    runner = resolve_runner(None).unwrap()
    cargo = root / "cargo"
    cargo.mkdir()
    os.chown(cargo, runner.uid, runner.gid)  # as CARGO_HOME in Rust's images
    env = {"CARGO_HOME": str(cargo)}
    for index in range(2):
        made = task(root / f"grading-{index}", CARGO_BUILD)
        made.set_value("fixed")
        git(made.source, "commit", "-qam", "fix")
        assert evaluate(made, env) == "passed\n"
        assert os.listdir(cargo) == []
        assert f"{cargo}: a copy-on-write layer" in log_of(made.results, "build")


# ------------------------------------------------------------------- the scratch parent

PLANTER = """#!/bin/sh
. ./lib.sh
echo "$VALUE" > out.txt
own=$(cd "$HOME" && pwd -P)
planted=0
end=$(( $(date +%s) + 15 ))
while [ "$(date +%s)" -lt "$end" ]; do
  for home in "$TMP"/ssegrade-*/work/session-1/home "$TEMP"/ssegrade-*/work/session-1/home; do
    [ -d "$home" ] || continue  # the names are known: no folder need be listed
    [ "$(cd "$home" && pwd -P)" = "$own" ] && continue
    site=$(HOME="$home" python3 -c 'import site; print(site.getusersitepackages())')
    if [ ! -f "$site/usercustomize.py" ] && mkdir -p "$site" 2>/dev/null \\
        && echo 'import os; os._exit(0)' > "$site/usercustomize.py"; then
      planted=$((planted + 1))
    fi
  done
  sleep 0.05
done
echo "planted $planted"
"""
SLOW_BUILD = """#!/bin/sh
. ./lib.sh
sleep 4
echo "$VALUE" > out.txt
"""
PYTHON_RUN = """#!/bin/sh
exec python3 -c 'import sys; sys.exit(open("out.txt").read().strip() != "fixed")'
"""
PYTHON_TEST = """#!/bin/sh
exec python3 -c '
import glob, subprocess, sys
sys.exit(max(subprocess.call(["sh", t]) for t in sorted(glob.glob("tests/*.sh"))))
'
"""


def test_a_grading_cannot_plant_in_another_gradings_home_through_tmp(root: Path) -> None:
    scratch = root / "scratch"
    scratch.mkdir(mode=0o755)
    env = {"TMPDIR": str(scratch), "TMP": str(scratch), "TEMP": str(scratch)}
    planter = task(root / "planter", PLANTER)
    victim = task(root / "victim", SLOW_BUILD, run=PYTHON_RUN, test=PYTHON_TEST)
    procs = []
    for made in (planter, victim):
        procs.append(
            subprocess.Popen(
                evaluating(made),
                env={**os.environ, **env},
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    outs = [proc.communicate(timeout=300) for proc in procs]
    for proc, (_, err) in zip(procs, outs, strict=True):
        assert proc.returncode == 0, err
    assert outs[1][0].startswith("failed"), log_of(planter.results, "build")
    assert "planted 0" in log_of(planter.results, "build")


# ------------------------------------------------------------------- IPC and keyring

_KEY_CALLS = {"x86_64": (248, 250), "aarch64": (217, 219)}
"""add_key and keyctl, by machine."""

IPC_BUILD = """#!/bin/sh
. ./lib.sh
echo "$VALUE" > out.txt
exec python3 - <<'PY'
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
ADD_KEY, KEYCTL = {calls}
shm = libc.shmget(ctypes.c_int({shm}), ctypes.c_size_t(0), ctypes.c_int(0))
print("segment", "found" if shm >= 0 else "absent")
desc = b"ssegrade-persist-{mark}"
found = libc.syscall(KEYCTL, 10, -4, b"user", desc, 0)  # KEYCTL_SEARCH, the user keyring
print("key", "found" if found >= 0 else "absent")
persistent = libc.syscall(KEYCTL, 22, -1, -3)  # KEYCTL_GET_PERSISTENT: the uid's, for days
kept = persistent >= 0 and libc.syscall(KEYCTL, 10, persistent, b"user", desc, 0) >= 0
print("persistent key", "found" if kept else "absent")
made = libc.shmget(ctypes.c_int({shm}), ctypes.c_size_t(1 << 20), ctypes.c_int(0o1666))
print("made segment", made >= 0)
key = libc.syscall(ADD_KEY, b"user", desc, b"left behind", 11, -4)
print("made key", key >= 0)
if persistent >= 0:
    print("made persistent key", libc.syscall(ADD_KEY, b"user", desc, b"kept", 4, persistent) >= 0)
PY
"""


def _shm_keys() -> str:
    return subprocess.run(["ipcs", "-m"], capture_output=True, text=True, check=True).stdout


def test_ipc_objects_and_keys_of_a_build_are_gone_for_the_next_grading(root: Path) -> None:
    if platform.machine() not in _KEY_CALLS:
        pytest.skip("no key system call numbers for this machine")
    shm = int.from_bytes(os.urandom(3), "big") + 0x5E000000
    mark = os.urandom(6).hex()
    build = IPC_BUILD.format(calls=_KEY_CALLS[platform.machine()], shm=shm, mark=mark)
    try:
        for index in range(2):
            made = task(root / f"grading-{index}", build)
            evaluate(made, {})
            log = log_of(made.results, "build")
            assert "made segment True" in log
            assert "made key True" in log
            assert "segment absent" in log
            assert "key absent" in log
            assert "persistent key found" not in log
            assert "made persistent key False" not in log
            assert f"0x{shm:08x}" not in _shm_keys()
        runner = resolve_runner(None).unwrap()
        search = (
            "import ctypes, sys\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            f"keyctl, desc = {_KEY_CALLS[platform.machine()][1]}, b'ssegrade-persist-{mark}'\n"
            "persistent = libc.syscall(keyctl, 22, -1, -1)\n"
            "rings = [-4, *([persistent] if persistent >= 0 else [])]\n"
            "sys.exit(any(libc.syscall(keyctl, 10, r, b'user', desc, 0) >= 0 for r in rings))\n"
        )
        done = subprocess.run(
            ["/usr/bin/python3", "-I", "-c", search],
            user=runner.uid,
            group=runner.gid,
            extra_groups=[],
            cwd="/",
            check=False,
        )
        assert done.returncode == 0, "a key is still in the runner's keyrings"
    finally:
        subprocess.run(["ipcrm", "-M", str(shm)], capture_output=True, check=False)
