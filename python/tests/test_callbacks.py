"""The Lightning and Hugging Face callbacks in real (tiny, CPU) training runs.

They need PyTorch, lightning and transformers: scripts/python-test-venv.sh adds the last two to
the PyTorch 2.x environment of scripts/torch-venv.sh. Without them these tests skip and say why.
"""

import importlib.util
import os
import tempfile
import unittest
import warnings

import dlaunch
from report_server import LineServer


def _missing(*modules):
    absent = [m for m in modules if importlib.util.find_spec(m) is None]
    if not absent:
        return None
    return ("needs " + ", ".join(absent) + " (scripts/torch-venv.sh, then "
            "scripts/python-test-venv.sh)")


class CallbackBase(unittest.TestCase):
    def setUp(self):
        warnings.simplefilter("ignore")
        self.srv = LineServer()
        self.assertTrue(dlaunch.init(socket_path=self.srv.path, rank=1))
        self.tmp = tempfile.mkdtemp(prefix="dlaunch-cb-")

    def tearDown(self):
        dlaunch.init(socket_path="")
        self.srv.close()

    def lines(self):
        return self.srv.wait_for(dlaunch.stats()["sent"])

    def phases(self, lines):
        return [(d["phase_name"], d["phase_event"], d.get("phase")) for d in lines
                if "phase_event" in d]


@unittest.skipIf(_missing("torch", "lightning"), _missing("torch", "lightning") or "")
class LightningTest(CallbackBase):
    def test_a_fit_reports_steps_samples_loss_and_its_phases(self):
        import torch
        import lightning as L
        from dlaunch.lightning import DlaunchCallback

        class Tiny(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.net = torch.nn.Linear(4, 1)

            def training_step(self, batch, _):
                x, y = batch
                return torch.nn.functional.mse_loss(self.net(x), y)

            def validation_step(self, batch, _):
                x, y = batch
                return torch.nn.functional.mse_loss(self.net(x), y)

            def configure_optimizers(self):
                return torch.optim.SGD(self.parameters(), lr=0.01)

        torch.manual_seed(0)
        data = torch.utils.data.TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
        loader = lambda: torch.utils.data.DataLoader(data, batch_size=8)  # noqa: E731
        trainer = L.Trainer(accelerator="cpu", devices=1, max_epochs=2, logger=False,
                            enable_progress_bar=False, enable_model_summary=False,
                            num_sanity_val_steps=0, default_root_dir=self.tmp,
                            callbacks=[DlaunchCallback(min_interval_s=0)])
        trainer.fit(Tiny(), loader(), loader())

        lines = self.lines()
        self.assertEqual(self.srv.raw_errors, [])
        self.assertTrue(all(d["rank"] == 1 for d in lines))
        self.assertIn(16, [d.get("total_steps") for d in lines if d["kind"] == "PHASE"])
        steps = [d for d in lines if d["kind"] == "STEP"]
        self.assertEqual(sum(d["samples"] for d in steps), 128)
        self.assertEqual(max(d["step"] for d in steps), 16)
        self.assertTrue(all(isinstance(d["loss"], float) for d in steps))
        phases = self.phases(lines)
        self.assertEqual(phases.count(("eval", "begin", "EVALUATING")), 2)
        self.assertEqual(phases.count(("eval", "end", "TRAINING")), 2)
        self.assertIn(("checkpoint", "begin", "CHECKPOINTING"), phases)
        self.assertIn(("checkpoint", "end", "TRAINING"), phases)
        saved = [d["checkpoint_step"] for d in lines if "checkpoint_step" in d]
        self.assertEqual(saved[-1], 16)


@unittest.skipIf(_missing("torch", "transformers", "accelerate"),
                 _missing("torch", "transformers", "accelerate") or "")
class HuggingFaceTest(CallbackBase):
    def test_a_trainer_reports_steps_samples_loss_and_its_phases(self):
        import torch
        import transformers
        from dlaunch.hf import DlaunchCallback

        class Tiny(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.net = torch.nn.Linear(4, 1)

            def forward(self, x, labels=None):
                out = self.net(x)
                loss = torch.nn.functional.mse_loss(out, labels)
                return {"loss": loss, "logits": out}

        torch.manual_seed(0)
        rows = [{"x": torch.randn(4), "labels": torch.randn(1)} for _ in range(64)]
        args = transformers.TrainingArguments(
            output_dir=self.tmp, per_device_train_batch_size=8, per_device_eval_batch_size=8,
            max_steps=8, logging_steps=2, eval_strategy="steps", eval_steps=4,
            save_strategy="steps", save_steps=4, report_to=[], use_cpu=True, disable_tqdm=True)
        trainer = transformers.Trainer(model=Tiny(), args=args, train_dataset=rows,
                                       eval_dataset=rows[:16],
                                       callbacks=[DlaunchCallback(min_interval_s=0)])
        trainer.train()

        lines = self.lines()
        self.assertEqual(self.srv.raw_errors, [])
        self.assertTrue(all(d["rank"] == 1 for d in lines))
        self.assertIn(8, [d.get("total_steps") for d in lines])
        steps = [d for d in lines if d["kind"] == "STEP"]
        self.assertEqual(sum(d["samples"] for d in steps), 64)
        self.assertEqual(max(d["step"] for d in steps), 8)
        self.assertTrue(any(isinstance(d.get("loss"), float) for d in steps))
        phases = self.phases(lines)
        self.assertEqual(phases.count(("eval", "begin", "EVALUATING")), 2)
        self.assertEqual(phases.count(("checkpoint", "begin", "CHECKPOINTING")), 2)
        self.assertEqual(phases.count(("checkpoint", "end", "TRAINING")), 2)
        saved = [d["checkpoint_step"] for d in lines if "checkpoint_step" in d]
        self.assertEqual(saved, [4, 8])


if __name__ == "__main__":
    unittest.main()
