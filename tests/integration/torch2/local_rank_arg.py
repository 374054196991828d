"""A program from torch.distributed.launch's days reads its local rank from --local_rank (here
filled in by torchrun's ${local_rank} macro) and checks it against LOCAL_RANK."""
import argparse
import os
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", "--local-rank", type=int, required=True)
    args = parser.parse_args()
    if args.local_rank != int(os.environ["LOCAL_RANK"]):
        print(f"--local_rank={args.local_rank} but LOCAL_RANK={os.environ['LOCAL_RANK']}",
              file=sys.stderr)
        return 1
    print(f"local_rank_arg: rank {os.environ['RANK']} ok", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
