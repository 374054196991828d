"""A TorchX component for bench/launcher: TorchX's own dist.ddp, with torchrun told --no_python.

dist.ddp runs `torchrun ... SCRIPT` and so always starts the script with Python; the launcher
benchmark's worker is a shell script (stamp_worker.sh), run directly by every other launcher.
This component builds dist.ddp's AppDef unchanged and adds torchrun's --no_python in front of the
script, so that TorchX starts the same worker as the rest. Run it with the venv's torchx:
  torchx run -s local_cwd bench/launcher/torchx_component.py:ddp_no_python -j NxM --rdzv_port P --script W
"""

from torchx import specs
from torchx.components import dist


def ddp_no_python(
    *script_args: str,
    script: str,
    j: str = "1x1",
    rdzv_port: int = 29500,
    tee: int = 3,
) -> specs.AppDef:
    """dist.ddp with torchrun's --no_python: runs a script or binary, not a Python file.

    Args:
        script_args: arguments to the script
        script: script or binary every worker runs
        j: {nnodes}x{nproc_per_node}
        rdzv_port: the port of the c10d store on the first replica's host (multi-node only)
        tee: tees the workers' std streams to console + file (0: none, 3: both)
    """
    app = dist.ddp(*script_args, script=script, j=j, rdzv_port=rdzv_port, tee=tee)
    role = app.roles[0]
    shell_cmd = role.args[-1]
    head, sep, tail = shell_cmd.rpartition(" " + script)
    if not sep:
        raise ValueError(f"script {script!r} not found in dist.ddp's command {shell_cmd!r}")
    role.args[-1] = f"{head} --no_python{sep}{tail}"
    return app
