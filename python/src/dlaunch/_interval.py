"""ProgressInterval: what the framework callbacks gather between two reports."""

import time

import dlaunch


class ProgressInterval:
    """Samples and losses since the previous report, sent at most every `min_interval_s`.

    Losses are summed as the framework gives them (tensors stay on their device), so a report
    costs one device synchronisation per interval, not one per step."""

    def __init__(self, min_interval_s=1.0, clock=time.monotonic):
        self.min_interval_s = min_interval_s
        self._clock = clock
        self._begun = clock()
        self._samples = 0
        self._loss_sum = None
        self._losses = 0

    def add(self, samples, loss=None):
        self._samples += int(samples or 0)
        if loss is not None:
            detach = getattr(loss, "detach", None)
            value = detach() if detach is not None else float(loss)
            self._loss_sum = value if self._loss_sum is None else self._loss_sum + value
            self._losses += 1

    def due(self):
        return self._clock() - self._begun >= self.min_interval_s

    def flush(self, step, **extra):
        """Reports the interval (if it holds any step) and starts a new one."""
        now = self._clock()
        if self._samples or self._losses:
            loss = extra.pop("loss", None)  # the framework's own, where it keeps the loss
            if self._losses:
                loss = self._loss_sum / self._losses
            dlaunch.report(step=step, samples=self._samples, loss=loss,
                           interval_s=now - self._begun, **extra)
        self._begun = now
        self._samples = 0
        self._loss_sum = None
        self._losses = 0
