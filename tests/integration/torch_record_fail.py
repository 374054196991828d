# A PyTorch entry point under torch's @record: rank 1 raises, so torch writes the rank's
# TORCHELASTIC_ERROR_FILE and the launcher's root-cause line can name the exception and its frame.
import os
import sys

from torch.distributed.elastic.multiprocessing.errors import record


def load_batch(step):
    if os.environ["RANK"] == "1" and step == 3:
        raise RuntimeError(f"batch {step} is corrupt")
    return step


@record
def main():
    for step in range(5):
        load_batch(step)
    print(f"rank {os.environ['RANK']} done", flush=True)


if __name__ == "__main__":
    sys.exit(main())
