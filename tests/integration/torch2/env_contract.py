"""Checks, in one rank, what a program written for torchrun 2.x reads from its environment:
every variable torchrun's agent gives a rank is there and consistent with the others, and the
launcher's own environment passed through. Touches <dir>/<RANK> when all holds, so the test can
see that every rank ran it; exits 1 naming what is wrong otherwise."""
import os
import sys
from pathlib import Path

TORCHRUN_VARIABLES = [
    "LOCAL_RANK", "RANK", "GROUP_RANK", "ROLE_RANK", "ROLE_NAME", "LOCAL_WORLD_SIZE",
    "WORLD_SIZE", "GROUP_WORLD_SIZE", "ROLE_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
    "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_RUN_ID",
    "TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_ERROR_FILE", "TORCHELASTIC_SIGNALS_TO_HANDLE",
    "TORCH_NCCL_ASYNC_ERROR_HANDLING", "OMP_NUM_THREADS",
]


def problems(env, sentinel):
    missing = [v for v in TORCHRUN_VARIABLES if v not in env]
    if missing:
        return [f"missing {', '.join(missing)}"]
    n = {v: int(env[v]) for v in ("RANK", "LOCAL_RANK", "GROUP_RANK", "LOCAL_WORLD_SIZE",
                                  "WORLD_SIZE", "GROUP_WORLD_SIZE", "ROLE_RANK", "ROLE_WORLD_SIZE")}
    found = []
    if n["RANK"] != n["GROUP_RANK"] * n["LOCAL_WORLD_SIZE"] + n["LOCAL_RANK"]:
        found.append("RANK is not GROUP_RANK * LOCAL_WORLD_SIZE + LOCAL_RANK")
    if n["WORLD_SIZE"] != n["GROUP_WORLD_SIZE"] * n["LOCAL_WORLD_SIZE"]:
        found.append("WORLD_SIZE is not GROUP_WORLD_SIZE * LOCAL_WORLD_SIZE")
    if (n["ROLE_RANK"], n["ROLE_WORLD_SIZE"]) != (n["RANK"], n["WORLD_SIZE"]):
        found.append("one role: ROLE_RANK and ROLE_WORLD_SIZE are RANK and WORLD_SIZE")
    if env["ROLE_NAME"] != "default":
        found.append(f"ROLE_NAME={env['ROLE_NAME']!r}, torchrun's default role is 'default'")
    if env["TORCHELASTIC_USE_AGENT_STORE"] not in ("True", "False"):
        found.append(f"TORCHELASTIC_USE_AGENT_STORE={env['TORCHELASTIC_USE_AGENT_STORE']!r}")
    if not env["TORCHELASTIC_RUN_ID"] or not env["TORCHELASTIC_ERROR_FILE"]:
        found.append("an empty TORCHELASTIC_RUN_ID or TORCHELASTIC_ERROR_FILE")
    if env.get("TEST_SENTINEL_PARENT") != sentinel:
        found.append("the launcher's environment (TEST_SENTINEL_PARENT) did not pass through")
    return found


def main():
    touch_dir, sentinel = sys.argv[1], sys.argv[2]
    found = problems(os.environ, sentinel)
    for p in found:
        print(f"rank {os.environ.get('RANK')}: {p}", file=sys.stderr)
    if found:
        return 1
    Path(touch_dir, os.environ["RANK"]).touch()
    print(f"env_contract: rank {os.environ['RANK']} ok", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
