"""The options of `ssegrade batch --engine podman|docker`: the bundle, each container's limits,
the image budget, and whether the containers run as Ray tasks (SPEC §14, Engines).

Interpreter layer (command line). Without `--bundle`, this ssegrade's bundle is built once
under a cache folder (`interpreters.engine.bundle`); a bundle that cannot be built is one
line and exit 2.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:  # what builds and runs containers loads only when a batch uses them
    from interpreters.engine.containers import ContainerSettings
    from ssegrade.batch import EngineProgram, Limits

__all__ = [
    "BUNDLES",
    "MEMORY",
    "PIDS",
    "TMP_SIZE",
    "container_options",
    "container_settings",
    "on_ray",
]

F = TypeVar("F", bound=Callable[..., Any])

BUNDLES = Path("/var/cache/ssegrade/bundles")
"""Where root keeps its bundles (others: `~/.cache/ssegrade/bundles`)."""
MEMORY, PIDS, TMP_SIZE = 4 << 30, 4096, 2 << 30
"""Each container's limits unless given (`ssegrade.batch.Limits`' defaults): copied
here so that `--help` loads no batch module (a test holds them equal)."""


def _size(_ctx: click.Context, _param: click.Parameter, value: str | None) -> int | None:
    """`2G`, `512M`, `100000`: a number of bytes."""
    if value is None:
        return None
    text = value.strip().upper()
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}.get(text[-1:], 1)
    digits = text[:-1] if scale > 1 else text
    if not digits.isdigit() or int(digits) <= 0:
        raise click.BadParameter(f"{value!r} is not a number of bytes (e.g. 2G, 512M)")
    return int(digits) * scale


def container_options(command: F) -> F:
    """`--cluster`, `--bundle`, `--container-memory`, `--container-pids`,
    `--container-tmp-size`, `--image-budget`."""
    options = [
        click.option(
            "--cluster",
            type=click.Choice(["ray"]),
            help="With --engine podman or docker: run each job's container as a Ray task on "
            "the node Ray picks (the cluster at --ray-address, which implies it, or a local "
            "Ray started for the batch).",
        ),
        click.option(
            "--bundle",
            type=click.Path(path_type=Path, file_okay=False, exists=True),
            help="The ssegrade bundle mounted into each container (`ssegrade bundle`; default: "
            "this ssegrade's, built once under a cache folder).",
        ),
        click.option(
            "--container-memory",
            default=str(MEMORY),
            callback=_size,
            metavar="BYTES",
            help="Memory of each container (K/M/G suffixes; default 4G).",
        ),
        click.option(
            "--container-pids",
            default=PIDS,
            show_default=True,
            type=click.IntRange(min=16),
            help="Processes each container may hold.",
        ),
        click.option(
            "--container-tmp-size",
            default=str(TMP_SIZE),
            callback=_size,
            metavar="BYTES",
            help="Size of each container's /tmp, a tmpfs (default 2G).",
        ),
        click.option(
            "--image-budget",
            callback=_size,
            metavar="BYTES",
            help="Remove images the batch pulled, loaded or built itself, once their jobs are "
            "done, while they take more than this (default: keep them).",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def container_settings(
    engine: EngineProgram, bundle: Path | None, limits: Limits, image_budget: int | None
) -> ContainerSettings:
    """The settings of a batch's containers; the bundle built when none is given
    (`InputError` when it cannot be)."""
    from interpreters.app.setup import InputError  # noqa: PLC0415
    from interpreters.engine.bundle import BundleError, build  # noqa: PLC0415
    from interpreters.engine.containers import ContainerSettings  # noqa: PLC0415

    if bundle is None:
        cache = BUNDLES if os.geteuid() == 0 else Path.home() / ".cache" / "ssegrade" / "bundles"
        try:
            bundle = build(cache)
        except (BundleError, OSError) as exc:
            raise InputError(
                f"--engine {engine}: the ssegrade bundle cannot be built: {exc}"
            ) from None
    return ContainerSettings(engine, bundle.absolute(), limits, image_budget=image_budget)


def on_ray(engine: str, cluster: str | None, address: str | None) -> bool:
    """Whether the containers of `--engine` `engine` run as Ray tasks: with `--cluster ray`,
    or a `--ray-address` given with a container engine. `click.UsageError` (one line) for
    `--cluster` without a container engine, or `--ray-address` with local workers."""
    containers = engine in ("podman", "docker")
    if cluster is not None and not containers:
        raise click.UsageError(
            f"--cluster {cluster} runs containers on Ray: give it with --engine podman or "
            "docker (--engine ray grades on Ray without containers)"
        )
    if address is not None and engine == "local":
        raise click.UsageError(
            "--ray-address needs --engine ray, or --engine podman|docker (containers on Ray)"
        )
    return containers and (cluster == "ray" or address is not None)
