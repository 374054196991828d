import json
import math
import unittest

from dlaunch import _wire


class Scalar:
    """Stands for a 0-d tensor or a NumPy scalar."""

    def __init__(self, v):
        self.v = v

    def item(self):
        return self.v


class EncodeTest(unittest.TestCase):
    def line(self, **fields):
        raw = _wire.encode(fields)
        self.assertTrue(raw.endswith(b"\n"))
        self.assertEqual(raw.count(b"\n"), 1)
        return json.loads(raw)  # strict JSON: no bare NaN

    def test_known_fields_take_their_types(self):
        d = self.line(step=10.0, samples="64", loss=Scalar(0.25), interval_s=1, rank=Scalar(3))
        self.assertEqual(d, {"step": 10, "samples": 64, "loss": 0.25, "interval_s": 1.0,
                             "rank": 3})
        self.assertIsInstance(d["step"], int)

    def test_non_finite_floats_are_written_as_protobuf_reads_them(self):
        d = self.line(loss=float("nan"), accuracy=math.inf, test_accuracy=-math.inf,
                      extra={"grad_norm": [float("nan"), 1.5]})
        self.assertEqual(d["loss"], "NaN")
        self.assertEqual(d["accuracy"], "Infinity")
        self.assertEqual(d["test_accuracy"], "-Infinity")
        self.assertEqual(d["extra"], {"grad_norm": ["NaN", 1.5]})

    def test_a_known_field_of_a_wrong_type_is_dropped_not_the_line(self):
        d = self.line(step="ten", samples=math.nan, loss=0.5, kind="SOMETHING")
        self.assertEqual(d["loss"], 0.5)
        self.assertNotIn("step", d)
        self.assertEqual(sorted(d["dropped_fields"]), ["kind", "samples", "step"])

    def test_camel_case_is_folded_so_no_field_appears_twice(self):
        d = self.line(totalSteps=100, checkpointStep=Scalar(7))
        self.assertEqual(d, {"total_steps": 100, "checkpoint_step": 7})

    def test_extras_of_any_type_become_plain_json(self):
        d = self.line(lr=Scalar(1e-3), tags=("a", 2), obj=object(), none=None, flag=True)
        self.assertEqual(d["lr"], 1e-3)
        self.assertEqual(d["tags"], ["a", 2])
        self.assertTrue(d["obj"].startswith("<object"))
        self.assertNotIn("none", d)
        self.assertIs(d["flag"], True)

    def test_phase_names_map_to_the_agents_enum(self):
        self.assertEqual(_wire.phase_enum("Eval"), "EVALUATING")
        self.assertEqual(_wire.phase_enum("validation"), "EVALUATING")
        self.assertEqual(_wire.phase_enum("checkpoint"), "CHECKPOINTING")
        self.assertEqual(_wire.phase_enum("data-loading"), "LOADING_DATA")
        self.assertEqual(_wire.phase_enum("train"), "TRAINING")
        self.assertIsNone(_wire.phase_enum("warmup"))
        self.assertEqual(self.line(phase="eval"), {"phase": "EVALUATING"})
        self.assertEqual(self.line(phase="CHECKPOINTING"), {"phase": "CHECKPOINTING"})
        # A name the agent has no enum for must not become an unknown enum value.
        self.assertEqual(self.line(phase="warmup"), {"phase_name": "warmup"})

    def test_timings_keep_only_the_agents_fields(self):
        d = self.line(timings={"data_ms": 1, "forward_ms": math.nan, "mine": 3})
        self.assertEqual(d["timings"], {"data_ms": 1.0, "forward_ms": "NaN"})


if __name__ == "__main__":
    unittest.main()
