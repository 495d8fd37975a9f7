"""The `ssegrade batch` command (SPEC §14).

Interpreter layer: options are parsed here, the work is `run_batch`. Bad input is one line per
problem on stderr and exit status 2; progress goes to stderr. What grades is imported in the
command's body: `--help` and a usage error load click alone. `ssegrade verify` is its sibling,
`interpreters.cli.verify`; what both share is `interpreters.cli.grading_options`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from interpreters.cli.container_options import container_options, container_settings, on_ray
from interpreters.cli.grading_options import (
    EngineName,
    bad_input,
    engine_options,
    scripts_of,
    show,
)
from interpreters.cli.options import positive

if TYPE_CHECKING:
    from ssegrade.internal.result import ErrorKind

__all__ = ["batch"]

ERROR_KINDS: tuple[ErrorKind, ...] = ("timeout", "task", "infrastructure", "grader")
"""`--retry-kinds`' choices: the kinds of an `error` grade
(`ssegrade.internal.result.ERROR_KINDS`)."""

RETRY_KINDS: frozenset[ErrorKind] = frozenset({"infrastructure", "grader"})
"""`--retry-kinds` unless given (`ssegrade.batch.RETRY_KINDS`)."""


def _kinds(ctx: click.Context, param: click.Parameter, value: str) -> frozenset[ErrorKind]:
    """`--retry-kinds`: a comma-separated set of error kinds (empty: none)."""
    del ctx, param
    kinds: set[ErrorKind] = set()
    for word in filter(None, (part.strip() for part in value.split(","))):
        kind = next((k for k in ERROR_KINDS if k == word), None)
        if kind is None:
            raise click.BadParameter(f"{word!r} is not one of {', '.join(ERROR_KINDS)}")
        kinds.add(kind)
    return frozenset(kinds)


@click.command()
@click.argument("jobs", type=click.Path(path_type=Path))
@click.option(
    "--results",
    required=True,
    type=click.Path(path_type=Path),
    help="Write each run to RESULTS/<task id>/<model…>/<agent>/<run id>/.",
)
@engine_options
@click.option("--no-cache", is_flag=True, help="Grade jobs whose digest was graded before.")
@click.option(
    "--force",
    is_flag=True,
    help="Grade every run again, also one graded before or holding another digest.",
)
@click.option(
    "--max-attempts",
    default=2,
    show_default=True,
    type=int,
    callback=positive,
    help="Grade a run graded `error` again on resume, up to this many attempts in all.",
)
@click.option("--no-retry", is_flag=True, help="Keep runs graded `error` as they are.")
@click.option(
    "--retry-kinds",
    default=",".join(sorted(RETRY_KINDS)),
    show_default=True,
    callback=_kinds,
    help=f"Kinds of `error` graded again on resume, comma-separated ({', '.join(ERROR_KINDS)}).",
)
@click.option("--label", help="A name for this batch, written in RESULTS/batch.json.")
@container_options
@click.option(
    "-v", "--verbose", is_flag=True, help="Also say each check of each grading, with its log."
)
@click.option("-q", "--quiet", is_flag=True, help="Say only the last line.")
def batch(
    jobs: Path,
    results: Path,
    workers: int | None,
    engine: EngineName,
    ray_address: str | None,
    timeout: int,
    script_timeout: int | None,
    runner_user: str | None,
    no_cache: bool,
    force: bool,
    max_attempts: int,
    no_retry: bool,
    retry_kinds: frozenset[ErrorKind],
    label: str | None,
    verbose: bool,
    quiet: bool,
    cluster: str | None,
    bundle: Path | None,
    container_memory: int,
    container_pids: int,
    container_tmp_size: int,
    image_budget: int | None,
    **options: Any,
) -> None:
    """Grade every recorded patch of the JSON Lines file JOBS, one job per line (`task` and
    `patch` required; `repo`, `model`, `agent`, `run_id`, `reference_run`, `agent_duration`,
    `agent_timeout`, `agent_exit_code`, `spend`, `started_at` optional; paths relative to
    JOBS; with --engine podman or docker each job names its `image`, and `task`, `repo` are
    paths in it), resuming what an earlier run did (and grading again what errored), reusing grades
    of identical jobs. Says one line per finished job (a live bar on a terminal) and a last
    line; RESULTS/batch.json says what the batch did.

    Exits 0 when every job was graded, 1 when one could not be (its error is in its
    result.json), 2 for bad input, 130 when interrupted.

    \b
    Examples:
      ssegrade batch jobs.jsonl --results results --workers 4
      ssegrade batch jobs.jsonl --results results --engine ray --ray-address head:6379
      ssegrade batch image-jobs.jsonl --results results --engine podman --workers 2
      ssegrade batch image-jobs.jsonl --results results --engine podman --ray-address head:6379
    """
    from interpreters.batch.progress import make_reporter  # noqa: PLC0415
    from interpreters.batch.run import run_batch  # noqa: PLC0415

    ray = on_ray(engine, cluster, ray_address)
    scripts = scripts_of(engine, options)
    containers = None
    if engine in ("podman", "docker"):
        from ssegrade.batch import Limits  # noqa: PLC0415

        limits = Limits(container_memory, container_pids, container_tmp_size)
        containers = container_settings(engine, bundle, limits, image_budget)
    if verbose and quiet:
        raise click.UsageError("-v and -q cannot be used together")
    show(quiet=quiet, verbose=verbose)
    with bad_input():
        report = run_batch(
            jobs,
            results,
            workers=workers,
            engine=engine,
            ray_address=ray_address,
            cache=not no_cache,
            force=force,
            retry=not no_retry,
            max_attempts=max_attempts,
            retry_kinds=retry_kinds,
            label=label,
            timeout=timeout,
            script_timeout=script_timeout,
            runner_user=runner_user,
            scripts=scripts,
            reporter=make_reporter(quiet=quiet),
            checks=verbose,
            containers=containers,
            on_ray=ray,
        )
    raise click.exceptions.Exit(report.exit_code)
