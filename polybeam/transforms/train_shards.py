"""Per-key training by shards: the keys hashed into shards, each shard's keys trained one after the other
in one DoFn, each key with all its passes (no Beam element per key; memory and time follow the data, not
the number of keys times ``2**bits``)."""

from __future__ import annotations

import apache_beam as beam
from apache_beam.metrics import Metrics

from polybeam.learners.config import LearnerConfig
from polybeam.learners.fitting import train_passes
from polybeam.learners.model_shards import shard_of
from polybeam.learners.polynomial import make_learner
from polybeam.transforms.holdout_passes import report_selection, without_record
from polybeam.transforms.key_shards import KeyShard, SplitByShard, feature_names, key_segments
from polybeam.transforms.keyed_files import key_text
from polybeam.transforms.keys import KeyFn
from polybeam.transforms.passes import continue_from


class TrainKeyShards(beam.PTransform):
    """``KeyShard`` of every key: examples (the input batches) grouped by a hash of their key into
    ``shards`` shards (joined to the ``initial`` learners' shards in a warm start), each shard's keys
    trained in turn (:class:`TrainShard`)."""

    def __init__(self, key: KeyFn, config: LearnerConfig, metadata: dict | None, shards: int, initial=None):
        super().__init__()
        self.key, self.config, self.metadata, self.shards, self.initial = key, config, metadata, shards, initial

    def expand(self, batches):
        shards = self.shards
        grouped = {"batches": batches | "SplitByShard" >> beam.ParDo(SplitByShard(self.key, shards))}
        if self.initial is not None:
            grouped["initial"] = (
                self.initial
                | "ForgetPasses" >> beam.Map(without_record, True)
                | "InitialShards" >> beam.Map(lambda pair: (shard_of(key_text(pair[0]), shards), pair))
            )
        return (
            grouped
            | "GroupShards" >> beam.CoGroupByKey()
            | "TrainShards" >> beam.ParDo(TrainShard(self.config, self.metadata, shards))
        )


class TrainShard(beam.DoFn):
    """Trains every key of a shard, one after the other, each key's learner with a state of the slots it
    touches: all passes at once (a key's examples are all here), with the holdout judging each pass as
    ``Train`` does (:func:`polybeam.learners.fitting.train_passes`). A key of the initial learners
    goes on from its learner; a key without examples keeps nothing. Emits a :class:`KeyShard` of the
    shard's models."""

    def __init__(self, config: LearnerConfig, metadata: dict | None, shards: int):
        self.config = config
        self.metadata = metadata
        self.shards = shards

    def setup(self):
        self._stopped = Metrics.counter("polybeam.train", "learners_stopped_early")
        self._keys = Metrics.counter("polybeam.train", "keys_trained")

    def process(self, element):
        shard, grouped = element
        config = self.config
        initial = dict(grouped.get("initial", ()))
        # Apple spaces its epochs over what a key's learner will learn when Train would count it.
        expect = config.expand == "apple" and (config.passes > 1 or config.examples_per_pass is not None)
        models = []
        batches = list(grouped["batches"])
        for key, examples in key_segments(batches):
            origin = initial.get(key)
            learner = make_learner(config, sparse=True) if origin is None else continue_from(origin)
            # (a key's small holdout is released, as in its streamed passes: not cross-validated per key)
            train_passes(learner, [examples], config.passes, expect=expect and origin is None, cross_validate=False)
            report_selection(learner.selection_, self._stopped)
            self._keys.inc()
            models.append((key, learner.to_model(self.metadata)))
        if models:
            yield KeyShard(shard, self.shards, models, names=feature_names(batches))
