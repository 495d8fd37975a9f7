"""Real task-script runs: exit codes, logs, limits, leftovers, output bounds, the runner account.

Real subprocesses and real files. As root the scripts run as the `sse-runner` account (created
when missing: that is the behaviour under test); tests that need root skip otherwise, and the
one that needs an ordinary user skips as root.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import secrets
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from interpreters.real.files import remove_tree
from interpreters.real.runner import (
    OWNER_VAR,
    RUN_VAR,
    SESSION_VAR,
    ContainmentPolicy,
    EnvPolicy,
    LogWriteError,
    Runner,
    kill_session,
    new_session,
    resolve_runner,
    run_script,
)
from interpreters.real.runner.output import KEPT_HEAD, KEPT_TAIL, LOG_HEAD, LOG_TAIL
from ssegrade.internal.effects import ScriptResult
from tests.support.processes import TEST_RUNNER, live_with, unique, write_script

ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="needs root (accounts, running as another uid)")
needs_user = pytest.mark.skipif(ROOT, reason="as root, scripts run as the runner account")

pytestmark = pytest.mark.slow

WEAK = ContainmentPolicy(mode="weak")


@pytest.fixture(scope="module")
def runner() -> Runner:
    """The runner for these tests (as root: a dedicated account, created if missing)."""
    return resolve_runner(None, default=TEST_RUNNER).unwrap()


@pytest.fixture(params=["contained", "weaker"])
def contain(request: pytest.FixtureRequest) -> bool:
    """Each test that takes it runs with the best containment and with the weaker one."""
    return bool(request.param == "contained")


@pytest.fixture
def work(tmp_path: Path) -> Iterator[Path]:
    """A folder the runner can enter and read (pytest's tmp folders are private to root)."""
    if not ROOT:
        folder = tmp_path / "work"
        folder.mkdir()
        yield folder
        return
    folder = Path(tempfile.mkdtemp(prefix="ssegrade-test-"))
    folder.chmod(0o755)
    yield folder
    remove_tree(folder)


def run(
    runner: Runner,
    work: Path,
    logs: Path,
    body: str,
    *,
    limit: float = 20,
    mode: int = 0o755,
    label: str = "build",
    contain: bool = True,
) -> ScriptResult:
    script = write_script(work, body, mode=mode)
    return run_script(
        runner,
        [str(script)],
        work,
        home=work / "home",
        limit=limit,
        log_path=logs / "logs" / f"{label}.log",
        label=label,
        spool=logs,
        containment=None if contain else WEAK,
    )


def zombie_children(zombies_only: bool = True) -> set[int]:
    """This process's children that have ended and not been reaped (all its children, live
    or not, with `zombies_only` false)."""
    me = str(os.getpid()).encode()
    found = set()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            fields = Path(f"/proc/{name}/stat").read_bytes().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me and (fields[0] == b"Z" or not zombies_only):
            found.add(int(name))
    return found


# ---------------------------------------------------------------------------- exit codes, logs


def test_passing_script(runner: Runner, work: Path, tmp_path: Path) -> None:
    result = run(runner, work, tmp_path, "#!/bin/sh\necho out\necho err >&2\n")
    assert (result.code, result.passed, result.killed) == (0, True, False)
    assert result.stdout == "out\n"
    assert result.stderr == "err\n"
    assert 0 <= result.seconds < 10


def test_failing_script_and_its_log(runner: Runner, work: Path, tmp_path: Path) -> None:
    result = run(
        runner, work, tmp_path, "#!/bin/sh\necho building\necho broken >&2\nexit 3\n", label="b1"
    )
    assert (result.code, result.passed, result.killed) == (3, False, False)
    assert result.log_file == str(tmp_path / "logs" / "b1.log")
    log = Path(result.log_file).read_text()
    assert f"command: {work / 's.sh'}" in log
    assert "label: b1" in log
    assert "exit code: 3" in log
    assert "duration: " in log
    assert "killed: no" in log
    assert "--- stdout (9 bytes) ---\nbuilding\n--- stderr (7 bytes) ---\nbroken\n" in log
    assert Path(result.log_file).stat().st_mode & 0o777 == 0o644


def test_a_signal_death_reads_as_a_shell_would(
    runner: Runner, work: Path, tmp_path: Path, contain: bool
) -> None:
    result = run(runner, work, tmp_path, "#!/bin/sh\nkill -SEGV $$\n", contain=contain)
    assert result.code == 128 + signal.SIGSEGV
    assert not result.killed
    assert "killed by signal SIGSEGV" in Path(str(result.log_file)).read_text()


def test_invalid_utf8_output_is_replaced_not_raised(
    runner: Runner, work: Path, tmp_path: Path
) -> None:
    result = run(runner, work, tmp_path, "#!/bin/sh\nprintf 'a\\377b\\n'\n")
    assert result.stdout == "a\ufffdb\n"


# ---------------------------------------------------------------------------- environment


def test_stdin_is_dev_null(runner: Runner, work: Path, tmp_path: Path) -> None:
    result = run(runner, work, tmp_path, "#!/bin/sh\nreadlink /proc/self/fd/0\ncat\necho done\n")
    assert result.stdout == "/dev/null\ndone\n"


def test_clean_environment(
    runner: Runner, work: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in list(os.environ):
        if name.startswith("LC_") or name == "LANGUAGE":
            monkeypatch.delenv(name)
    monkeypatch.setenv("LANG", "C.UTF-8")
    monkeypatch.setenv("SSE_ADMIN_SOCKET", "/run/admin.sock")  # never passed on
    monkeypatch.setenv("GOFLAGS", "-mod=vendor")  # not in a clean environment
    result = run_script(
        runner,
        ["/usr/bin/env"],
        work,
        home=work / "home",
        limit=10,
        log_path=tmp_path / "env.log",
        label="env",
        session="s1",
        path="/usr/bin:/bin",
        env=EnvPolicy(clean=True, extra=(("EXTRA", "a=b"),)),
    )
    env = dict(line.split("=", 1) for line in result.stdout.splitlines())
    caches = {"XDG_CACHE_HOME", "GOCACHE", "CCACHE_DIR"}
    markers = {SESSION_VAR, RUN_VAR, OWNER_VAR}
    assert set(env) == {"PATH", "HOME", "TMPDIR", "TMP", "TEMP", "LANG", "EXTRA", *markers} | caches
    assert env["PATH"] == "/usr/bin:/bin"
    assert env["HOME"] == env["TMPDIR"] == env["TMP"] == env["TEMP"] == str(work / "home")
    assert all(env[name].startswith(str(work / "home") + "/") for name in caches)
    assert (env["LANG"], env["EXTRA"], env[SESSION_VAR]) == ("C.UTF-8", "a=b", "s1")
    assert (work / "home").is_dir()
    assert (work / "home").stat().st_uid == runner.uid
    log = Path(str(result.log_file)).read_text()
    assert f"environment: CCACHE_DIR EXTRA GOCACHE HOME LANG PATH {OWNER_VAR} {RUN_VAR}" in log
    assert "a=b" not in log.split("--- stdout")[0]  # names, never values


def test_own_session_and_process_group(runner: Runner, work: Path, tmp_path: Path) -> None:
    result = run(
        runner, work, tmp_path, "#!/bin/sh\ncut -d' ' -f1,5,6 /proc/$$/stat\n", contain=False
    )
    pid, pgid, sid = result.stdout.split()
    assert pid == pgid == sid
    assert int(pgid) != os.getpgid(0)


# ---------------------------------------------------------------------------- limits


def test_time_limit_kills_the_script(
    runner: Runner, work: Path, tmp_path: Path, contain: bool
) -> None:
    token = unique()
    start = time.monotonic()
    result = run(
        runner,
        work,
        tmp_path,
        f"#!/bin/sh\necho started\nprintf partial >&2\nsleep 300 0.{token} &\nsleep 100\n",
        limit=1,
        label="slow",
        contain=contain,
    )
    assert time.monotonic() - start < 8
    assert (result.code, result.killed, result.passed) == (-1, True, False)
    assert 0.9 <= result.seconds < 8
    assert result.stdout == "started\n"
    assert result.stderr == "partial\nssegrade: killed after 1 s (the script's time limit)\n"
    log = Path(str(result.log_file)).read_text()
    assert "killed: yes, after 1 s (time limit)" in log
    assert "exit code: -1" in log
    assert not live_with(token)


def test_a_fractional_limit_is_said_as_given(runner: Runner, work: Path, tmp_path: Path) -> None:
    result = run(runner, work, tmp_path, "#!/bin/sh\nsleep 50\n", limit=0.3)
    assert result.killed
    assert result.stderr == "ssegrade: killed after 0.3 s (the script's time limit)\n"


# ---------------------------------------------------------------------------- leftovers


LEFTOVERS = """#!/bin/sh
sleep 301 0.{t} &
nohup sleep 302 0.{t} >/dev/null 2>&1 &
setsid sh -c 'sleep 303 0.{t} & sleep 304 0.{t} &' &
setsid env -i /bin/sleep 305 0.{t} &
sh -c 'trap "" HUP TERM; exec sleep 306 0.{t}' &
for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do
    [ "$(pgrep -f 0.{t} | wc -l)" -ge 6 ] && break
    sleep 0.1
done
echo started "$(pgrep -f 0.{t} | wc -l)"
{last}
"""


@pytest.mark.parametrize("last", ["exit 0", "exit 1", "sleep 100"], ids=["pass", "fail", "killed"])
@pytest.mark.parametrize("who", ["runner", "us"])
def test_nothing_the_script_started_survives(
    runner: Runner, work: Path, tmp_path: Path, last: str, who: str, contain: bool
) -> None:
    # "us": no isolation, so the uid sweep is off and the markers, process groups, sessions and
    # handed-back orphans must find everything (as root this runs the script as root).
    if who == "us":
        runner = Runner(None, os.getuid(), os.getgid(), isolated=False)
    token = unique()
    bystander = subprocess.Popen(["sleep", "60"])  # ours, not the script's: must survive
    # Children this worker had before (an earlier test's, still running) may end meanwhile:
    # only a child the run started counts.
    before = zombie_children(zombies_only=False)
    try:
        body = LEFTOVERS.format(t=token, last=last)
        result = run(runner, work, tmp_path, body, limit=2, contain=contain)
        assert result.stdout == "started 6\n"  # all six were running
        assert not live_with(token)
        assert zombie_children() <= before, "left zombies behind"
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


def test_every_run_starts_clean(runner: Runner, work: Path, tmp_path: Path, contain: bool) -> None:
    token = unique()
    first = run(runner, work, tmp_path, f"#!/bin/sh\nsleep 307 0.{token} &\n", contain=contain)
    second = run(
        runner, work, tmp_path, f"#!/bin/sh\npgrep -f {token} || echo none\n", contain=contain
    )
    assert first.passed
    assert second.stdout == "none\n"


def test_kill_session(runner: Runner) -> None:
    session, other = new_session(), new_session()
    env = {"PATH": "/usr/bin:/bin", SESSION_VAR: session}
    mine = subprocess.Popen(["sleep", "60"], env=env, start_new_session=True)
    theirs = subprocess.Popen(
        ["sleep", "60"], env={**env, SESSION_VAR: other}, start_new_session=True
    )
    try:
        assert kill_session(Runner(None, os.getuid(), os.getgid(), isolated=False), session) == 1
        assert mine.wait(timeout=5) == -signal.SIGKILL
        assert theirs.poll() is None
        assert kill_session(Runner(None, os.getuid(), os.getgid(), isolated=False), session) == 0
    finally:
        theirs.kill()
        theirs.wait()


# ---------------------------------------------------------------------------- output


def test_huge_output_is_bounded_in_memory_and_in_the_log(
    runner: Runner, work: Path, tmp_path: Path
) -> None:
    size, noise = 50_000_000, 3_000_000
    spool = tmp_path / "spool"
    spool.mkdir()
    result = run_script(
        runner,
        [
            str(
                write_script(
                    work,
                    f"#!/bin/sh\nyes 0123456789abcde | head -c {size}\n"
                    f"head -c {noise} /dev/zero >&2\n",
                )
            )
        ],
        work,
        home=work / "home",
        limit=60,
        log_path=tmp_path / "logs" / "loud.log",
        label="loud",
        spool=spool,
    )
    assert result.passed
    head, cut, tail = result.stdout.partition(
        f"[... {size - KEPT_HEAD - KEPT_TAIL} bytes cut ...]\n"
    )
    assert cut, result.stdout[KEPT_HEAD - 100 : KEPT_HEAD + 100]
    assert len(head) == KEPT_HEAD  # whole lines of 16 bytes: no newline added
    assert head.startswith("0123456789abcde\n")
    assert len(tail) == KEPT_TAIL
    assert tail.endswith("0123456789abcde\n")
    assert f"[... {noise - KEPT_HEAD - KEPT_TAIL} bytes cut ...]" in result.stderr
    log = Path(str(result.log_file))
    assert LOG_HEAD + LOG_TAIL < log.stat().st_size < 2 * (LOG_HEAD + LOG_TAIL) + 10_000
    text = log.read_bytes()
    assert f"--- stdout ({size} bytes) ---\n0123456789abcde\n".encode() in text
    assert f"[... {size - LOG_HEAD - LOG_TAIL} bytes cut ...]\n".encode() in text
    assert f"first {LOG_HEAD} and the last {LOG_TAIL} bytes".encode() in text
    assert [p.name for p in (tmp_path / "logs").iterdir()] == ["loud.log"]


def test_a_cut_never_splits_a_character_and_counts_every_byte(
    runner: Runner, work: Path, tmp_path: Path
) -> None:
    # 3-byte characters: neither cut point falls on a character boundary.
    count = (KEPT_HEAD + KEPT_TAIL) // 3 + 1000
    result = run(runner, work, tmp_path, f"#!/bin/sh\nyes € | tr -d '\\n' | head -c {count * 3}\n")
    head, _line, tail = result.stdout.partition("[... ")
    number = int(tail.split(" ", 1)[0])
    kept = tail.split(" bytes cut ...]\n", 1)[1]
    assert "\ufffd" not in result.stdout
    assert set(head.rstrip("\n")) == set(kept) == {"€"}
    assert len(head.rstrip("\n").encode()) + number + len(kept.encode()) == count * 3


def test_a_log_that_cannot_be_written_raises(runner: Runner, work: Path, tmp_path: Path) -> None:
    (tmp_path / "full").write_text("not a folder")
    with pytest.raises(LogWriteError, match=r"cannot write the log .*full/logs/x\.log"):
        run_script(
            runner,
            ["/bin/true"],
            work,
            home=work / "home",
            limit=10,
            log_path=tmp_path / "full" / "logs" / "x.log",
            label="x",
            spool=tmp_path,
        )
    assert issubclass(LogWriteError, OSError)


def test_a_link_planted_where_the_log_goes_is_never_followed(
    runner: Runner, work: Path, tmp_path: Path
) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    victim.chmod(0o600)
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "x.log").symlink_to(victim)
    with pytest.raises(LogWriteError, match="cannot write the log"):
        run_script(
            runner,
            ["/bin/echo", "written by the script"],
            work,
            home=work / "home",
            limit=10,
            log_path=logs / "x.log",
            label="x",
            spool=tmp_path,
        )
    assert victim.read_text() == "precious\n"
    assert victim.stat().st_mode & 0o777 == 0o600
    assert (logs / "x.log").is_symlink()


@needs_root
def test_a_full_results_disk_never_reaches_the_script(
    runner: Runner, work: Path, tmp_path: Path
) -> None:
    results = tmp_path / "results"
    results.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(results)], check=True)
    try:
        (results / "filler").write_bytes(b"x" * 60_000)
        with contextlib.suppress(OSError):
            (results / "more").write_bytes(b"x" * 8192)
        script = write_script(work, "#!/bin/sh\nhead -c 500000 /dev/zero\necho done >&2\n")
        with pytest.raises(LogWriteError, match="No space left"):
            run_script(
                runner,
                [str(script)],
                work,
                home=work / "home",
                limit=30,
                log_path=results / "logs" / "build.log",
                label="build",
                spool=tmp_path,
            )
        assert not (results / "logs" / "build.log").exists()
    finally:
        subprocess.run(["umount", "-l", str(results)], check=False)


# ---------------------------------------------------------------------------- cannot start


def test_no_exec_bit_with_shebang_runs_with_a_warning(
    runner: Runner, work: Path, tmp_path: Path
) -> None:
    result = run(runner, work, tmp_path, '#!/bin/sh -e\necho ran "$0"\n', mode=0o644)
    assert result.passed
    assert result.stdout == f"ran {work / 's.sh'}\n"
    log = Path(str(result.log_file)).read_text()
    assert "warning:" in log
    assert "not executable" in log
    assert f"command: /bin/sh -e {work / 's.sh'}" in log


def test_no_exec_bit_without_shebang_is_a_clear_failure(
    runner: Runner, work: Path, tmp_path: Path
) -> None:
    result = run(runner, work, tmp_path, "echo never\n", mode=0o644)
    assert (result.code, result.killed, result.stdout) == (-1, False, "")
    assert "cannot start" in result.stderr
    assert "no exec bit" in result.stderr
    assert result.stderr in Path(str(result.log_file)).read_text()


def test_missing_script_and_missing_folder(runner: Runner, work: Path, tmp_path: Path) -> None:
    missing = run_script(
        runner,
        [str(work / "nope.sh")],
        work,
        home=work / "home",
        limit=5,
        log_path=tmp_path / "nope.log",
        label="nope",
    )
    assert missing.code == -1
    assert "No such file or directory" in missing.stderr
    elsewhere = run_script(
        runner,
        ["/bin/true"],
        work / "gone",
        home=work / "home",
        limit=5,
        log_path=tmp_path / "gone.log",
        label="gone",
    )
    assert elsewhere.code == -1
    assert str(work / "gone") in elsewhere.stderr


# ---------------------------------------------------------------------------- the runner account


@needs_user
def test_without_root_scripts_run_as_us() -> None:
    runner = resolve_runner("someone", default="sse-runner").unwrap()
    assert (runner.uid, runner.isolated, runner.created) == (os.getuid(), False, False)
    assert runner.note is not None
    assert "no isolation" in runner.note
    assert "'someone' is ignored" in runner.note


@needs_root
def test_as_root_scripts_run_as_the_runner_without_groups(
    runner: Runner, work: Path, tmp_path: Path
) -> None:
    assert runner.isolated
    assert runner.name == TEST_RUNNER
    entry = pwd.getpwnam(TEST_RUNNER)
    assert runner.uid == entry.pw_uid != 0
    result = run(runner, work, tmp_path, "#!/bin/sh\nid -u\nid -g\nid -G\n")
    assert result.stdout.split() == [str(runner.uid), str(runner.gid), str(runner.gid)]
    assert f"user: {TEST_RUNNER} (uid {runner.uid}" in Path(str(result.log_file)).read_text()


@needs_root
def test_as_root_the_default_runner_is_sse_runner() -> None:
    default = resolve_runner(None).unwrap()  # created if missing: that is the behaviour
    assert (default.name, default.isolated) == ("sse-runner", True)
    assert default.uid == pwd.getpwnam("sse-runner").pw_uid != 0


@needs_root
def test_a_runner_process_outside_the_script_is_never_signalled(
    runner: Runner, work: Path, tmp_path: Path, contain: bool
) -> None:
    # Same uid as the script, started outside it: another grading's process, say.
    outside = subprocess.Popen(
        ["sleep", "60"],
        user=runner.uid,
        group=runner.gid,
        extra_groups=[],
        env={"PATH": "/usr/bin:/bin"},
        start_new_session=True,
        stderr=subprocess.DEVNULL,
    )
    token = unique()
    script = f"#!/bin/sh\nsetsid sleep 60 0.{token} >/dev/null 2>&1 &\n"
    try:
        done = run(runner, work, tmp_path, script, contain=contain)
        assert done.passed
        assert not live_with(token)
        assert outside.poll() is None
    finally:
        outside.kill()
        outside.wait()


def _throwaway_name() -> str:
    return f"sset{secrets.token_hex(3)}"


def _userdel(name: str) -> None:
    subprocess.run(["userdel", name], check=False, capture_output=True)
    subprocess.run(["groupdel", name], check=False, capture_output=True)


@needs_root
def test_a_missing_default_account_is_created() -> None:
    name = _throwaway_name()
    try:
        made = resolve_runner(None, default=name).unwrap()
        assert (made.name, made.isolated, made.created) == (name, True, True)
        assert made.note is not None
        assert "created" in made.note
        entry = pwd.getpwnam(name)
        assert (entry.pw_uid, entry.pw_gid) == (made.uid, made.gid)
        assert entry.pw_uid != 0
        assert entry.pw_gid != 0
        assert entry.pw_shell.endswith(("nologin", "false"))
        assert not Path(entry.pw_dir).exists()
        groups = subprocess.run(["id", "-G", name], capture_output=True, text=True, check=True)
        assert groups.stdout.split() == [str(made.gid)]
        again = resolve_runner(None, default=name).unwrap()
        assert (again.uid, again.created, again.note) == (made.uid, False, None)
    finally:
        _userdel(name)


@needs_root
def test_refused_runners() -> None:
    missing = _throwaway_name()
    error = resolve_runner(missing).failure()
    assert "does not exist" in error.message
    assert missing in error.message
    with pytest.raises(KeyError):
        pwd.getpwnam(missing)  # a requested account is never created
    assert "root" in resolve_runner("root").failure().message
    assert "not a valid account name" in resolve_runner(None, default="-rf").failure().message


@needs_root
def test_refused_runner_in_roots_group() -> None:
    name = _throwaway_name()
    subprocess.run(
        ["useradd", "--system", "--no-create-home", "--gid", "0", name],
        check=True,
        capture_output=True,
    )
    try:
        assert "gid 0" in resolve_runner(name).failure().message
    finally:
        _userdel(name)
