"""dlaunch.inprocess.sync_state with real processes and a real Gloo process group: three ranks,
one of which kept its model and optimizer state (step 7) and two started anew (step 0). After
sync_state every rank holds the same parameters and optimizer state, returns 7, and its next
step gives the same parameters as the keeper's. The ranks run without NumPy (a stand-in that
cannot be imported comes first on their path), as in a bare `pip install torch`: the state must
not go by dist.broadcast_object_list, which needs it. Needs PyTorch; skipped without it."""

import os
import socket
import subprocess
import sys
import tempfile
import textwrap
import unittest

RANK_SCRIPT = textwrap.dedent("""
    import hashlib, os, sys
    import torch, torch.distributed as dist, torch.nn as nn
    import dlaunch.inprocess

    def digest(model, opt):
        h = hashlib.sha256()
        for p in model.parameters():
            h.update(bytes(p.detach().contiguous().view(-1).view(torch.uint8).tolist()))
        for i, s in sorted(opt.state_dict()["state"].items()):
            for k, v in sorted(s.items()):
                h.update(f"{i}{k}".encode())
                t = v if torch.is_tensor(v) else torch.tensor(v)
                h.update(bytes(t.detach().contiguous().view(-1).view(torch.uint8).tolist()))
        return h.hexdigest()

    kind = sys.argv[1]
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(100 + rank)  # every rank starts from different parameters
    model = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.Linear(16, 3))
    opt = (torch.optim.AdamW(model.parameters(), lr=0.01) if kind == "adamw" else
           torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9))
    g = torch.Generator().manual_seed(5)
    data = [(torch.randn(4, 8, generator=g), torch.randint(0, 3, (4,), generator=g))
            for _ in range(8)]
    step = 0
    if rank == 1:  # the keeper: seven steps of its own
        for x, y in data[:7]:
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
        step = 7
    got = dlaunch.inprocess.sync_state(model, opt, step)
    before = digest(model, opt)
    x, y = data[7]
    opt.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
    print(f"step {got} before {before} after {digest(model, opt)}", flush=True)
    dist.barrier()  # Gloo in torch 2.11 can abort a rank destroying its group while peers work
    dist.destroy_process_group()
""")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@unittest.skipUnless(subprocess.run([sys.executable, "-c", "import torch.distributed"],
                                    capture_output=True).returncode == 0,
                     "needs PyTorch (scripts/torch-venv.sh)")
class SyncStateTest(unittest.TestCase):
    def run_ranks(self, kind, world=3):
        with tempfile.TemporaryDirectory() as tmp:
            stub = os.path.join(tmp, "numpy")
            os.mkdir(stub)
            with open(os.path.join(stub, "__init__.py"), "w") as f:
                f.write('raise ModuleNotFoundError("No module named \'numpy\'", name="numpy")\n')
            script = os.path.join(tmp, "rank.py")
            with open(script, "w") as f:
                f.write(RANK_SCRIPT)
            package = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                   "src")
            port = str(_free_port())
            procs = []
            for rank in range(world):
                env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world),
                           MASTER_ADDR="127.0.0.1", MASTER_PORT=port,
                           PYTHONPATH=os.pathsep.join([tmp, package]),
                           PYTHONWARNINGS="ignore", OMP_NUM_THREADS="1")
                env.pop("DLAUNCH_REPORT_SOCKET", None)
                procs.append(subprocess.Popen([sys.executable, script, kind], env=env,
                                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                              text=True))
            outs = []
            try:
                for p in procs:
                    out, err = p.communicate(timeout=120)
                    self.assertEqual(p.returncode, 0, err[-3000:])
                    outs.append(out.strip().splitlines()[-1].split())
            finally:
                for p in procs:
                    if p.poll() is None:
                        p.kill()
                    p.communicate()
            return outs

    def check(self, kind):
        outs = self.run_ranks(kind)
        for out in outs:
            self.assertEqual(out[:2], ["step", "7"], out)
        self.assertEqual(len({o[3] for o in outs}), 1, f"state after sync differs: {outs}")
        self.assertEqual(len({o[5] for o in outs}), 1, f"the next step differs: {outs}")

    def test_sgd_momentum_goes_from_the_keeper_to_ranks_started_anew(self):
        self.check("sgd")

    def test_adamw_state_and_its_step_counts_go_too(self):
        self.check("adamw")


if __name__ == "__main__":
    unittest.main()
