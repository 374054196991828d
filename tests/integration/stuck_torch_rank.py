"""stuck_rank.py inside PyTorch 2.x's worker_main, which serves the rank's stacks on the Unix
socket TORCH_WORKER_SERVER_SOCKET names (python_stacks_test.cc).

    stuck_torch_rank.py MODE      as stuck_rank.py MODE
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import stuck_rank  # noqa: E402
from torch.distributed.elastic.control_plane import worker_main  # noqa: E402

if __name__ == "__main__":
    with worker_main():
        stuck_rank.main(sys.argv[1])
