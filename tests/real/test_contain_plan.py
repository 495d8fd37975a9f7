"""What a script reaches in `full` containment (SPEC §5): the plan of its mount namespace
(`reach.plan`) never gives back the gradings' scratch folders' folder nor another grading's
scratch folder, whatever the environment names, and gives a copy-on-write layer only for
what the runner can write; in a real run the host is read-only but for the script's own
folders, and devices stay usable; weak containment says what it leaves open.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from interpreters.real.files import remove_tree
from interpreters.real.files.mounts import private_namespace
from interpreters.real.runner import ContainmentPolicy, Runner, probe, resolve_runner, run_script
from interpreters.real.runner.guardian import owner_tag
from interpreters.real.runner.reach import Place, Reach, plan
from tests.support.processes import TEST_RUNNER, write_script
from tests.support.realtask import evaluating, log_of, make_task

RUNNER = (54321, 54321)
"""A runner's uid and gid (no account is needed to plan)."""


@pytest.fixture(scope="module")
def tree() -> Iterator[dict[str, Path]]:
    """Folders as a host has them: the gradings' scratch folders' folder with this grading's
    scratch folder and another's, a task, a folder anyone may write, one the runner owns."""
    top = Path(tempfile.mkdtemp(prefix="ssegrade-plan-"))
    parent = top / "scratch"
    made = {
        "top": top,
        "parent": parent,
        "own": parent / "ssegrade-4026531836-100-200-abcd1234" / "work",
        "other": parent / "ssegrade-git-4026531836-300-400-efgh5678" / "work",
        "task": top / "task" / "scripts",
        "anyone": top / "go" / "bin",
        "runner's": top / "cargo",
        "root's": top / "usr" / "bin",
    }
    for name in ("own", "other"):
        (made[name] / "session-1" / "home").mkdir(parents=True)
        (made[name] / "copy-1").mkdir()
    for name in ("task", "anyone", "runner's", "root's"):
        made[name].mkdir(parents=True)
    made["anyone"].chmod(0o1777)
    os.chown(made["runner's"], *RUNNER)
    yield made
    remove_tree(top)


def _named(tree: dict[str, Path]) -> list[Path]:
    """Folders an environment may name: all of the tree's and some above and below."""
    return [
        *tree.values(),
        tree["parent"].parent,
        tree["own"].parent,
        tree["other"] / "session-1" / "home",
        tree["own"] / "session-1" / "home",
        tree["anyone"].parent,
        Path("/tmp"),
        Path("/usr/bin"),
        Path("/"),
    ]


def _inside(path: str, folder: Path) -> bool:
    return path == os.fspath(folder) or path.startswith(f"{folder}/")


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_no_plan_gives_back_the_scratch_folders_or_another_gradings(
    tree: dict[str, Path], data: st.DataObject
) -> None:
    named = _named(tree)
    toolchain = data.draw(st.lists(st.sampled_from(named), unique=True))
    readable = [tree["task"], tree["own"] / "copy-1"]
    own_home, own_copy = tree["own"] / "session-1" / "home", tree["own"] / "copy-1"
    with tempfile.TemporaryDirectory() as layers:
        reach = plan(
            writable=[own_copy, own_home],
            readable=readable,
            toolchain={os.fspath(path): ["VAR"] for path in toolchain},
            parent=os.fspath(tree["parent"]),
            tmp_options=b"size=1m",
            runner=RUNNER,
            layers=lambda: Path(layers),
        )
    assert len([line for line in reach.lines if line.startswith("folder named by")]) == len(
        toolchain
    )
    assert "/tmp" in reach.hidden
    depths = [place.path.count("/") for place in reach.places]
    assert depths == sorted(depths)  # outer first: an inner place is mounted over its outer one
    for place in reach.places:
        assert not _inside(os.fspath(tree["parent"]), Path(place.path)), place
        assert not _inside(place.path, tree["other"]), place
        if _inside(place.path, tree["own"]):
            assert place.kind == "writable" or _inside(place.path, own_copy), place
        if place.kind == "copy-on-write":
            assert place.path in (os.fspath(tree["anyone"]), os.fspath(tree["runner's"]))
        if place.kind == "writable":
            assert place.path in (os.fspath(own_copy), os.fspath(own_home))


def test_each_folder_the_environment_names_gets_one_line(tree: dict[str, Path]) -> None:
    toolchain = {
        os.fspath(tree["anyone"]): ["PATH"],
        os.fspath(tree["runner's"]): ["CARGO_HOME"],
        os.fspath(tree["root's"]): ["PATH"],
        os.fspath(tree["parent"]): ["TMP", "TEMP"],
        os.fspath(tree["other"] / "session-1" / "home"): ["PYTHONUSERBASE"],
    }
    with tempfile.TemporaryDirectory() as layers:
        reach = plan(
            writable=[],
            readable=[],
            toolchain=toolchain,
            parent=os.fspath(tree["parent"]),
            tmp_options=b"size=1m",
            runner=RUNNER,
            layers=lambda: Path(layers),
        )
        layer = [place for place in reach.places if place.kind == "copy-on-write"]
        assert {place.path for place in layer} == {
            os.fspath(tree["anyone"]),
            os.fspath(tree["runner's"]),
        }
        for place in layer:  # the upper layer: the folder's owner and mode, root-only above
            upper = Path(place.options.split("upperdir=")[1].split(",")[0])
            assert upper.is_relative_to(layers)
            host, own = os.stat(place.path), os.stat(upper)
            assert (own.st_uid, own.st_gid, own.st_mode) == (
                host.st_uid,
                host.st_gid,
                host.st_mode,
            )
            assert os.stat(upper.parent).st_mode & 0o777 == 0o700
    said = {line.split(": ", 2)[1]: line.split(": ", 2)[2] for line in reach.lines}
    assert said[os.fspath(tree["anyone"])].startswith("a copy-on-write layer")
    assert said[os.fspath(tree["runner's"])].startswith("a copy-on-write layer")
    assert said[os.fspath(tree["root's"])] == "read-only"
    assert said[os.fspath(tree["parent"])].startswith("not given")
    assert said[os.fspath(tree["other"] / "session-1" / "home")].startswith("not given")
    assert "folder named by TEMP TMP: " in "\n".join(reach.lines)


# ---------------------------------------------------------------------------- real runs

CONTAINED = os.geteuid() == 0 and probe().namespaces


@pytest.fixture
def work() -> Iterator[Path]:
    """A folder the runner can enter, under /tmp."""
    folder = Path(tempfile.mkdtemp(prefix="ssegrade-plan-run-"))
    folder.chmod(0o755)
    yield folder
    remove_tree(folder)


@pytest.fixture
def open_folder() -> Iterator[Path]:
    """A folder anyone may write, outside /tmp, /var/tmp and /dev/shm, named by nothing."""
    folder = Path(tempfile.mkdtemp(prefix="ssegrade-plan-", dir="/var/cache"))
    folder.chmod(0o777)
    yield folder
    remove_tree(folder)


def _runner() -> Runner:
    return resolve_runner(None, default=TEST_RUNNER).unwrap()


HOST_WRITES = """#!/bin/sh
try() { if sh -c "echo x > $1" 2>/dev/null; then echo "wrote $1"; else echo "refused $1"; fi; }
try {outside}/planted
try ./out.txt
try "$HOME/file"
try /tmp/file
try /dev/shm/file
try /dev/null
"""


@pytest.mark.slow
@pytest.mark.skipif(not CONTAINED, reason="needs root and full containment")
def test_the_host_is_read_only_but_for_the_scripts_own_folders(
    work: Path, open_folder: Path
) -> None:
    script = write_script(work, HOST_WRITES.replace("{outside}", os.fspath(open_folder)))
    runner = _runner()
    os.chown(work, runner.uid, runner.gid)  # its working folder, as a copy is
    result = run_script(
        runner,
        [str(script)],
        work,
        home=work / "home",
        limit=30,
        log_path=work / "logs" / "run.log",
        label="run",
        spool=work,
    )
    assert result.code == 0, result.stderr
    assert f"refused {open_folder}/planted" in result.stdout
    for path in ("./out.txt", "$HOME/file", "/tmp/file", "/dev/shm/file", "/dev/null"):
        assert f"wrote {path}" in result.stdout.replace(f"{work}/home", "$HOME")
    assert os.listdir(open_folder) == []
    assert "the host read-only" in (work / "logs" / "run.log").read_text()


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root: scripts as the runner account")
def test_weak_containment_says_what_it_leaves_open(work: Path) -> None:
    script = write_script(work, "#!/bin/sh\ntrue\n")
    run_script(
        _runner(),
        [str(script)],
        work,
        home=work / "home",
        limit=30,
        log_path=work / "logs" / "run.log",
        label="run",
        spool=work,
        containment=ContainmentPolicy(mode="weak"),
    )
    log = (work / "logs" / "run.log").read_text()
    assert "not prevented (weak containment):" in log
    assert "keyrings" in log


@pytest.mark.skipif(not CONTAINED, reason="needs root and mount namespaces")
def test_a_layer_overlayfs_refuses_leaves_its_folder_read_only_and_says_so(work: Path) -> None:
    folder = work / "toolchain"
    folder.mkdir()
    refused = f"lowerdir={work}/missing,upperdir={work}/missing-upper,workdir={work}/w"
    reach = Reach({}, [Place(os.fspath(folder), "copy-on-write", refused)])
    mounts = reach.mounts()

    def enter() -> None:
        private_namespace()
        mounts()

    done = subprocess.run(
        ["/bin/sh", "-c", f"echo x > {folder}/written"],
        preexec_fn=enter,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0
    assert "Read-only file system" in done.stderr
    assert f"ssegrade: {folder} is read-only: overlayfs refused" in done.stderr
    assert os.listdir(folder) == []


@pytest.mark.slow
@pytest.mark.skipif(not CONTAINED, reason="needs root and full containment")
def test_a_script_changes_a_support_folder_for_itself_alone(work: Path) -> None:
    support = Path(tempfile.mkdtemp(prefix="ssegrade-plan-support-"))
    try:
        support.chmod(0o777)  # anyone may write it: another grading's script would see it
        (support / "data.txt").write_text("pristine\n")
        script = write_script(
            work,
            f'#!/bin/sh\necho planted > "{support}/planted" && cat "{support}/planted"\n'
            f'cat "{support}/data.txt"\n',
        )
        result = run_script(
            _runner(),
            [str(script)],
            work,
            home=work / "home",
            limit=30,
            log_path=work / "logs" / "run.log",
            label="run",
            spool=work,
            keep=[support],
        )
        assert result.code == 0, result.stderr
        assert result.stdout == "planted\npristine\n"
        assert sorted(os.listdir(support)) == ["data.txt"]
        log = (work / "logs" / "run.log").read_text()
        assert f"support folder: {support}: a copy-on-write layer" in log
    finally:
        remove_tree(support)


@pytest.mark.slow
@pytest.mark.skipif(not CONTAINED, reason="needs root and full containment")
def test_the_scratch_folders_folder_is_hidden_also_outside_tmp(tmp_path: Path) -> None:
    parent = Path(tempfile.mkdtemp(prefix="ssegrade-plan-parent-", dir="/var/cache"))
    try:
        parent.chmod(0o755)
        # A live grading's HOME (this process's tag): readable by the runner on the host.
        scratch = f"ssegrade-{owner_tag()}-abcd1234"
        other = parent / scratch / "work" / "session-1" / "home"
        other.mkdir(parents=True)
        (other / "secret").write_text("another grading's\n")
        for folder in (other, *other.parents):
            if folder == parent:
                break
            folder.chmod(0o755)
        made = make_task(tmp_path / "t")
        made.script(
            "build.sh",
            f'#!/bin/sh\n. ./lib.sh\necho "$VALUE" > out.txt\ncat "{other}/secret"\n'
            f'ls -A "{parent}" | sed "s/^/listed /"\n',
        )
        done = subprocess.run(
            evaluating(made),
            env={**os.environ, "TMPDIR": str(parent)},
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        log = log_of(made.results, "build")
        assert "another grading's" not in log
        listed = [line for line in log.splitlines() if line.startswith("listed ")]
        assert len(listed) == 1, log  # its own scratch folder, and nothing else
        assert scratch not in listed[0]
    finally:
        remove_tree(parent)


MODULE_RUN = """#!/bin/sh
# A PoC that is a module, built where it lies (a Rust harness crate's target/, `go build -o`).
here="$(dirname "$1")"
mkdir -p "$here/target" && echo built > "$here/target/poc" || { echo "cannot build" >&2; exit 7; }
grep -q fixed out.txt || { echo "PoC $1 triggered the bug" >&2; exit 1; }
"""


@pytest.mark.slow
@pytest.mark.skipif(not CONTAINED, reason="needs root and full containment")
def test_a_poc_module_builds_where_it_is_staged(work: Path) -> None:
    """The staged PoC folder is the run's own: a run script that builds the PoC module beside
    it must work, or a correct fix is graded `failed` (`cannot build`)."""
    made = make_task(work / "t", pocs=1)
    made.script("run.sh", MODULE_RUN)
    made.set_value("fixed")
    done = subprocess.run(
        evaluating(made), capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    result = (made.results / "result.json").read_text()
    assert '"status":"passed"' in result, log_of(made.results, "poc", 1)
