"""Checks in copy-on-write views of the patched grading repo (`interpreters.real.files.views`):
what a check writes, deletes, renames or chmods reaches neither the grading repo nor another
check's view, the PoCs see what the build left, no script reaches a layer by any path, the
build's outputs are what the guard scans, gradings sharing one repo stay apart, and where a
view would differ from a copy (owners, special files) or cannot be had (weak containment)
fresh copies are made; every log says which.

End to end with the `ssegrade` command on real tasks, as root (scripts as the runner account,
in full containment); the probe's refusals on real trees.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from interpreters.real.files import remove_tree
from interpreters.real.files.views import probe as probe_views
from interpreters.real.runner import probe, resolve_runner
from tests.support.guardkit import fake_elf
from tests.support.realtask import RealTask, evaluating, git, log_of, make_task

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        os.geteuid() != 0 or not probe().namespaces, reason="needs root and full containment"
    ),
]

VIEW = "workspace: a copy-on-write view of the patched grading repo"

BUILD = """#!/bin/sh
set -e
. ./lib.sh
echo "$VALUE" > out.txt
echo "# built" >> lib.sh
chmod 600 lib.sh
rm tests/exists.sh
mkdir made && echo made > made/file
mv tests tests-moved
here=$(pwd)
layers=$(grep " $here " /proc/self/mountinfo \\
  | grep -o '\\(lowerdir\\|upperdir\\|workdir\\)=[^,]*' | sed 's/^[a-z]*=//' \\
  | tr ':' '\\n' | sort -u)
echo "layers named: $(echo $layers | wc -w)"
guessed=""
for n in 0 1 2 3 4 5 6 7; do
  for stem in patch upper work repo trial; do
    guessed="$guessed $here/../layers/$stem-$n ../layers/$stem-$n"
  done
done
for p in $layers $guessed "$here/../layers" "../layers" "$REPO" "$REPO/sub"; do
  for q in "$p" "/proc/self/root$p" "/proc/1/root$p" "/proc/self/cwd/$p"; do
    ls "$q" >/dev/null 2>&1 && case "$p" in "$REPO"*) ;; *) echo "REACHED list $q";; esac
    touch "$q/planted" 2>/dev/null && echo "REACHED write $q"
    echo planted 2>/dev/null > "$q/lib.sh" && echo "REACHED overwrite $q"
  done
  echo "tried $p"
done
"""
RUN = """#!/bin/sh
fail() { echo "$1" >&2; exit 1; }
grep -q fixed out.txt || fail "no build output"
tail -n 1 lib.sh | grep -q "# built" || fail "lib.sh lost the build's line"
[ "$(stat -c %a lib.sh)" = 600 ] || fail "lib.sh lost the build's mode"
[ -f made/file ] || fail "made/file is gone"
[ ! -e tests ] && [ ! -e tests-moved/exists.sh ] || fail "tests came back"
echo "$1" >> poc-seen
"""
TEST = """#!/bin/sh
fail() { echo "$1" >&2; exit 1; }
[ "$(cat lib.sh)" = VALUE=fixed ] || fail "lib.sh is not the patched one: $(cat lib.sh)"
[ "$(stat -c %a lib.sh)" = 644 ] || fail "lib.sh has the mode $(stat -c %a lib.sh)"
[ "$(stat -c %u .)" = "$(id -u)" ] || fail "the top folder is not the runner's"
for leftover in out.txt made tests-moved poc-seen scribbled; do
  [ ! -e "$leftover" ] || fail "$leftover is left from another check"
done
[ -f tests/exists.sh ] || fail "tests/exists.sh is missing"
for t in tests/*.sh; do sh "$t" || fail "$t failed"; done
echo scribbled > scribbled && chmod 000 lib.sh && rm -r tests && mkdir -p deep/er
"""


def tree_digest(top: Path) -> str:
    """Every entry under `top`: its path, type, mode, owner, size and content (links as
    their targets)."""
    digest = hashlib.sha256()
    for folder, dirs, names in sorted(os.walk(top)):
        dirs.sort()
        for name in sorted([*dirs, *names]):
            path = Path(folder, name)
            info = path.lstat()
            digest.update(f"{path.relative_to(top)} {info.st_mode:o} {info.st_uid}:{info.st_gid} "
                          f"{info.st_size} {info.st_mtime_ns}\n".encode())  # fmt: skip
            if stat.S_ISREG(info.st_mode):
                digest.update(path.read_bytes())
            elif stat.S_ISLNK(info.st_mode):
                digest.update(os.readlink(path).encode())
    return digest.hexdigest()


@pytest.fixture(params=["tmp", "outside"])
def scratch(request: pytest.FixtureRequest) -> Iterator[Path]:
    """The evaluator's temporary folder: under /tmp (which a script sees as a private tmpfs),
    or on a folder the scripts share with the host, where only the layers' root-only folder
    keeps them out."""
    where = None if request.param == "tmp" else "/var/lib"
    folder = Path(tempfile.mkdtemp(prefix="ssegrade-views-", dir=where))
    folder.chmod(0o755)
    yield folder
    # The graders' scratch folders go in the background once their grades are written: let
    # their removers finish first.
    deadline = time.monotonic() + 30
    while any(folder.glob("ssegrade-*")) and time.monotonic() < deadline:
        time.sleep(0.05)
    remove_tree(folder)


def grading_repo(made: RealTask) -> Path:
    """The grading repo: the initial commit's tree, root's, with a folder and a link."""
    repo = made.root / "repo"
    archive = subprocess.run(
        ["git", "archive", "HEAD"], cwd=made.source, capture_output=True, check=True
    )
    repo.mkdir()
    subprocess.run(["tar", "-x", "-C", str(repo)], input=archive.stdout, check=True)
    (repo / "sub").mkdir()
    (repo / "sub" / "kept").write_text("kept\n")
    (repo / "link").symlink_to("lib.sh")
    return repo


def fixed(root: Path) -> tuple[RealTask, Path]:
    made = make_task(root, pocs=2)
    made.script("build.sh", BUILD)
    made.script("run.sh", RUN)
    made.script("test.sh", TEST)
    repo = grading_repo(made)
    made.set_value("fixed")
    return made, repo


def run_evaluate(made: RealTask, repo: Path, scratch: Path, *extra: str) -> str:
    done = subprocess.run(
        evaluating(made, "--repo", str(repo), *extra),
        env={**os.environ, "TMPDIR": str(scratch), "REPO": str(repo)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_each_check_starts_from_the_patched_tree_and_reaches_no_layer(scratch: Path) -> None:
    made, repo = fixed(scratch / "task")
    before = tree_digest(repo)
    verdict = run_evaluate(made, repo, scratch, "--script-env", "REPO")
    build = log_of(made.results, "build")
    assert verdict.strip() == "passed", (verdict, build)
    result = json.loads((made.results / "result.json").read_text())["patch_result"]
    assert (result["pov_total"], result["pov_passed"]) == (2, 2)
    assert result["func_test_success"] is True
    assert result["intent_test_success"] is True
    assert tree_digest(repo) == before
    for check in ("build", "poc", "function_test", "intent_test"):
        assert VIEW in log_of(made.results, check)
    named = int(build.split("layers named: ")[1].split()[0])
    assert named == 4  # the check's own layer, its work folder, the patch's, the repo's
    assert build.count("tried ") > named
    assert "REACHED" not in build
    assert not any(line.startswith(("upper", "patch")) for line in os.listdir(scratch))


def test_the_guard_scans_what_the_build_wrote_in_its_view(scratch: Path) -> None:
    made = make_task(scratch / "task", pocs=1, config={"sanitizer": "address"})
    carrying = base64.b64encode(fake_elf(b"main\0__asan_init_v5")).decode()
    made.script(
        "build.sh",
        '#!/bin/sh\n. ./lib.sh\necho "$VALUE" > out.txt\nmkdir obj\n'
        f"echo {carrying} | base64 -d > obj/prog\n",
    )
    repo = grading_repo(made)
    made.set_value("fixed")
    run_evaluate(made, repo, scratch)
    seen = json.loads((made.results / "guard.json").read_text())["observed"]["objects"]
    assert seen["carrying"] == {"address": "obj/prog"}
    assert VIEW in log_of(made.results, "build")


def test_gradings_sharing_one_repo_keep_their_own_views(scratch: Path) -> None:
    made = [make_task(scratch / f"task{n}", pocs=1) for n in range(3)]
    repo = grading_repo(made[0])
    before = tree_digest(repo)
    values = ["fixed", "buggy", "fixed"]
    for task, value in zip(made, values, strict=True):
        task.set_value(value)
    running = [
        subprocess.Popen(
            evaluating(task, "--repo", str(repo)),
            env={**os.environ, "TMPDIR": str(scratch)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for task in made
    ]
    verdicts = [proc.communicate(timeout=600)[0].split(":")[0].strip() for proc in running]
    assert verdicts == ["passed", "failed", "passed"]
    assert tree_digest(repo) == before
    for task in made:
        assert VIEW in log_of(task.results, "build")


def test_weak_containment_works_in_fresh_copies_and_says_why(scratch: Path) -> None:
    made, repo = fixed(scratch / "task")
    made.script("build.sh", '#!/bin/sh\n. ./lib.sh\necho "$VALUE" > out.txt\n')
    made.script("run.sh", "#!/bin/sh\ngrep -q fixed out.txt\n")
    made.script("test.sh", '#!/bin/sh\n[ "$(cat lib.sh)" = VALUE=fixed ]\n')
    verdict = run_evaluate(made, repo, scratch, "--containment", "weak")
    assert verdict.strip() == "passed"
    build = log_of(made.results, "build")
    assert "workspace: a fresh copy (no copy-on-write view: weak containment" in build


def test_a_repo_a_view_would_show_otherwise_than_a_copy_is_copied(scratch: Path) -> None:
    made, repo = fixed(scratch / "task")
    made.script("build.sh", '#!/bin/sh\n. ./lib.sh\necho "$VALUE" > out.txt\n')
    made.script("run.sh", "#!/bin/sh\ngrep -q fixed out.txt\n")
    made.script("test.sh", '#!/bin/sh\n[ "$(cat lib.sh)" = VALUE=fixed ]\n')
    runner = resolve_runner(None).unwrap()
    os.chown(repo / "sub" / "kept", runner.uid, runner.gid)
    verdict = run_evaluate(made, repo, scratch)
    assert verdict.strip() == "passed"
    build = log_of(made.results, "build")
    assert "workspace: a fresh copy (no copy-on-write view: the grading repo holds" in build
    assert f"{repo}/sub/kept" in build


@pytest.mark.parametrize("odd", ["owner", "group", "setuid", "setgid", "fifo", "socket"])
def test_the_probe_refuses_what_a_copy_would_change(tmp_path: Path, odd: str) -> None:
    repo = tmp_path / "repo"
    (repo / "a" / "b").mkdir(parents=True)
    path = repo / "a" / "b" / "odd"
    if odd == "fifo":
        os.mkfifo(path)
    elif odd == "socket":
        with socket.socket(socket.AF_UNIX) as listener:
            listener.bind(str(path))
    else:
        path.write_text("x")
        changes = {"owner": (1, -1), "group": (-1, 1)}
        if odd in changes:
            os.chown(path, *changes[odd])
        else:
            path.chmod(0o4755 if odd == "setuid" else 0o2755)
    runner = resolve_runner(None).unwrap()
    why = probe_views(repo, tmp_path / "layers", (runner.uid, runner.gid))
    assert isinstance(why, str)
    assert str(path) in why
    assert not (tmp_path / "layers").exists()


def test_the_probe_gives_layers_for_a_plain_repo(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "a").mkdir(parents=True)
    (repo / "a" / "f").write_text("x")
    (repo / "l").symlink_to("a/f")
    runner = resolve_runner(None).unwrap()
    layers = probe_views(repo, tmp_path / "layers", (runner.uid, runner.gid))
    assert not isinstance(layers, str), layers
    try:
        assert stat.S_IMODE((tmp_path / "layers").stat().st_mode) == 0o700
        assert os.listdir(tmp_path / "layers") == ["repo"]  # the trial left nothing
    finally:
        layers.close()


def test_no_mount_of_a_grading_is_left_in_the_host(scratch: Path) -> None:
    made, repo = fixed(scratch / "task")
    run_evaluate(made, repo, scratch, "--script-env", "REPO")
    mounts = Path("/proc/self/mountinfo").read_text()
    assert str(scratch) not in mounts
    git(made.source, "status")  # the agent's tree is untouched by grading, and still a repo


def test_the_probe_refuses_a_repo_with_a_mount_inside(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "mounted here").mkdir(parents=True)
    runner = resolve_runner(None).unwrap()
    code = (
        "import sys; from pathlib import Path; from interpreters.real.files.views import probe; "
        "print(probe(Path(sys.argv[1]), Path(sys.argv[2]), (int(sys.argv[3]), int(sys.argv[4]))))"
    )
    inside = f"mount -t tmpfs none '{repo}/mounted here' && exec \"$@\""
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", inside, "sh",
         sys.executable, "-c", code, str(repo), str(tmp_path / "layers"),
         str(runner.uid), str(runner.gid)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert done.stdout.strip() == f"{repo}/mounted here is mounted inside the grading repo"
