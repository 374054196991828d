"""DlaunchCallback for Hugging Face transformers' Trainer: step, samples, loss, evaluation and
checkpoint phases.

    trainer = transformers.Trainer(..., callbacks=[dlaunch.hf.DlaunchCallback()])

Importing this module needs transformers; `import dlaunch` does not. Without dlaunch the callback
does nothing.
"""

import dlaunch
from dlaunch._interval import ProgressInterval

from transformers import TrainerCallback


class DlaunchCallback(TrainerCallback):
    """Reports each rank's progress to its dlaunch agent, at most every `min_interval_s`.

    The Trainer computes the loss only at its logging steps; reports carry the latest one."""

    def __init__(self, min_interval_s=1.0):
        self.min_interval_s = min_interval_s
        self._interval = ProgressInterval(min_interval_s)
        self._loss = None
        self._eval = None
        self._save = None

    def on_train_begin(self, args, state, control, **kwargs):
        if state.max_steps and state.max_steps > 0:
            dlaunch.total_steps(state.max_steps)
        self._interval = ProgressInterval(self.min_interval_s)

    def on_step_end(self, args, state, control, **kwargs):
        if not dlaunch.is_active():
            return
        self._interval.add(args.per_device_train_batch_size * args.gradient_accumulation_steps)
        if self._interval.due():
            self._flush(state)
        # The Trainer evaluates and then saves right after this hook when these are set, and
        # has no hook before either: the phases begin here.
        if control.should_evaluate:
            self._begin_eval()
        elif control.should_save and self._save is None:
            self._save = dlaunch.phase("checkpoint")

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "loss" in logs:
            self._loss = logs["loss"]

    def on_prediction_step(self, args, state, control, **kwargs):
        self._begin_eval()  # an evaluate() of the script's own

    def on_evaluate(self, args, state, control, **kwargs):
        if self._eval is not None:
            self._eval.end()
            self._eval = None
        if control.should_save and self._save is None:
            self._save = dlaunch.phase("checkpoint")

    def on_save(self, args, state, control, **kwargs):
        if self._save is not None:
            self._save.end()
            self._save = None
        dlaunch.checkpoint_saved(state.global_step)

    def on_train_end(self, args, state, control, **kwargs):
        self._flush(state)

    def _begin_eval(self):
        if self._eval is None and dlaunch.is_active():
            self._eval = dlaunch.phase("eval")

    def _flush(self, state):
        extra = {}
        if self._loss is not None:
            extra["loss"] = self._loss
        epoch = state.epoch
        if epoch is not None:
            extra["epoch"] = int(epoch)
        self._interval.flush(state.global_step, **extra)
