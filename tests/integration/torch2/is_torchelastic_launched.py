"""torch.distributed.is_torchelastic_launched() must say True under a torchrun-compatible
launcher (torch decides from TORCHELASTIC_RUN_ID)."""
import os
import sys

import torch.distributed as dist


def main():
    if not dist.is_torchelastic_launched():
        print("torch.distributed.is_torchelastic_launched() is False", file=sys.stderr)
        return 1
    print(f"is_torchelastic_launched: rank {os.environ['RANK']} ok", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
