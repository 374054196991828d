"""DlaunchCallback for PyTorch Lightning: step, samples, loss, evaluation and checkpoint phases.

    trainer = lightning.Trainer(callbacks=[dlaunch.lightning.DlaunchCallback()])

Works with the `lightning` package or the older `pytorch_lightning`; importing this module is
what needs one of them, `import dlaunch` does not. Without dlaunch the callback does nothing.
"""

import dlaunch
from dlaunch._interval import ProgressInterval

try:
    from lightning.pytorch.callbacks import Callback
except ImportError:  # the older package name
    from pytorch_lightning.callbacks import Callback


def _batch_size(batch):
    """The leading dimension of the batch's first tensor (0 when there is none)."""
    for _ in range(4):
        if hasattr(batch, "shape") and len(batch.shape) > 0:
            return int(batch.shape[0])
        if isinstance(batch, dict):
            batch = next(iter(batch.values()), None)
        elif isinstance(batch, (list, tuple)):
            batch = batch[0] if batch else None
        else:
            return 0
    return 0


def _loss(outputs):
    if isinstance(outputs, dict):
        return outputs.get("loss")
    return outputs if hasattr(outputs, "detach") else None


class DlaunchCallback(Callback):
    """Reports each rank's progress to its dlaunch agent, at most every `min_interval_s`."""

    def __init__(self, min_interval_s=1.0):
        super().__init__()
        self.min_interval_s = min_interval_s
        self._interval = ProgressInterval(min_interval_s)
        self._eval = None
        self._saving = None

    def on_fit_start(self, trainer, pl_module):
        if not dlaunch.is_active():
            return
        # Lightning has no hook after a checkpoint is written; its own save_checkpoint does the
        # writing, so this trainer's is wrapped in the checkpoint phase.
        save = trainer.save_checkpoint
        self._saving = save

        def save_checkpoint(*args, **kwargs):
            with dlaunch.phase("checkpoint"):
                result = save(*args, **kwargs)
            dlaunch.checkpoint_saved(trainer.global_step)
            return result

        trainer.save_checkpoint = save_checkpoint

    def on_fit_end(self, trainer, pl_module):
        if self._saving is not None:
            trainer.save_checkpoint = self._saving
            self._saving = None

    def on_train_start(self, trainer, pl_module):
        total = getattr(trainer, "estimated_stepping_batches", None)
        if total is not None and total != float("inf"):
            dlaunch.total_steps(int(total))
        self._interval = ProgressInterval(self.min_interval_s)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if not dlaunch.is_active():
            return
        self._interval.add(_batch_size(batch), _loss(outputs))
        if self._interval.due():
            self._interval.flush(trainer.global_step, epoch=trainer.current_epoch)

    def on_train_epoch_end(self, trainer, pl_module):
        self._interval.flush(trainer.global_step, epoch=trainer.current_epoch)

    def on_train_end(self, trainer, pl_module):
        self._interval.flush(trainer.global_step, epoch=trainer.current_epoch)

    def on_validation_start(self, trainer, pl_module):
        self._eval = dlaunch.phase("eval")

    def on_validation_end(self, trainer, pl_module):
        if self._eval is not None:
            self._eval.end()
            self._eval = None

    on_test_start = on_validation_start
    on_test_end = on_validation_end
