"""`shardbudget topo`: a system profile from a node's own topology."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from .app import app
from .args import CatalogOpt, ForceOpt, JsonOpt, NameOpt, OutOpt
from .command_io import load_catalogs, print_json


def _print_template(value: bool) -> None:
    if value:
        from ..fabric.topo_profile import GPU_SPEC_TEMPLATE

        sys.stdout.write(GPU_SPEC_TEMPLATE)
        raise typer.Exit()


@app.command()
def topo(
    *,
    files: Annotated[
        list[Path],
        typer.Argument(
            help="`nvidia-smi topo -m` output; optionally `nvidia-smi topo -p2p r` output and an NCCL topology XML (NCCL_TOPO_DUMP_FILE), in the same file or more files."
        ),
    ],
    name: NameOpt,
    out: OutOpt = None,
    gpu: Annotated[
        Optional[str],
        typer.Option(
            "--gpu", help="Catalog GPU; needed when the input does not name it (the topo -m header never does)."
        ),
    ] = None,
    gpu_spec: Annotated[
        Optional[Path],
        typer.Option(
            "--gpu-spec",
            help="A GPU the catalog lacks: a TOML file with one [gpus.NAME] table (--gpu-spec-template prints one); written into the profile.",
        ),
    ] = None,
    gpu_spec_template: Annotated[
        bool,
        typer.Option(
            "--gpu-spec-template",
            is_eager=True,
            callback=_print_template,
            help="Print the --gpu-spec template and exit.",
        ),
    ] = False,
    cpu: Annotated[
        Optional[str],
        typer.Option("--cpu", help="Catalog CPU, where the input does not say (lscpu or the NCCL XML do)."),
    ] = None,
    nic_fabric: Annotated[
        Optional[str],
        typer.Option("--nic-fabric", help="Catalog NIC fabric, e.g. ib-ndr, where the input gives no NIC speed."),
    ] = None,
    force: ForceOpt = False,
    catalog: CatalogOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """A system profile from a node's own topology, usable with --catalog in allreduce, plan, deploy and report (printed without --out)."""
    from ..fabric.topo_profile import check_topo_path, topo_profile, write_topo_profile
    from ..quoting import terminal

    if out:  # before reading: a refused --out must not cost the user the run
        check_topo_path(out, force=force)
    profile = topo_profile(
        files, name=name, gpu=gpu, cpu=cpu, nic_fabric=nic_fabric, catalog=load_catalogs(catalog), gpu_spec=gpu_spec
    )
    for warning in profile.warnings:
        typer.echo(terminal(f"warning: {warning}"), err=True)
    if out:
        write_topo_profile(profile, out, force=force)
    if json_out:
        print_json(profile.to_dict())
    elif out:
        print(terminal("\n".join(f"# {note}" for note in profile.notes)))
    else:
        sys.stdout.write(profile.toml())
    if out:
        typer.echo(terminal(f"wrote {out}: use it with --catalog {out} --system {name}"), err=True)
