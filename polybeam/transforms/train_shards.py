"""Per-key training by shards: the keys hashed into shards, each shard's keys trained in one DoFn, each key
with all its passes (no Beam element per key; memory and time follow the data, not the number of keys
times ``2**bits``): the keys of few rows together as one table (:mod:`polybeam.learners.key_table`), the
others one after the other."""

from __future__ import annotations

import apache_beam as beam
import numpy as np
from apache_beam.metrics import Metrics

from polybeam.learners.config import LearnerConfig
from polybeam.learners.fitting import train_passes
from polybeam.learners.key_table import table_keys, train_table
from polybeam.learners.model_shards import shard_of
from polybeam.learners.polynomial import make_learner
from polybeam.transforms.holdout_passes import report_selection, without_record
from polybeam.transforms.key_shards import KeyShard, SplitByShard, feature_names, gathered_by_key
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
    """Trains every key of a shard, each key's learner with a state of the slots it touches: all passes at
    once (a key's examples are all here), with the holdout judging each pass as ``Train`` does
    (:func:`polybeam.learners.fitting.train_passes`). Keys of few rows, when the settings allow, learn
    together as a table (:func:`polybeam.learners.key_table.train_table`: each key's model the one its
    own learner would make, without Python per key); the others one after the other. A key of the
    initial learners goes on from its learner; a key without examples keeps nothing. Emits a
    :class:`KeyShard` of the shard's models."""

    def __init__(self, config: LearnerConfig, metadata: dict | None, shards: int):
        self.config = config
        self.metadata = metadata
        self.shards = shards

    def setup(self):
        self._stopped = Metrics.counter("polybeam.train", "learners_stopped_early")
        self._keys = Metrics.counter("polybeam.train", "keys_trained")
        self._table_keys = Metrics.counter("polybeam.train", "keys_trained_as_a_table")

    def process(self, element):
        shard, grouped = element
        config = self.config
        initial = dict(grouped.get("initial", ()))
        batches = list(grouped["batches"])
        keys, by_key, bounds = gathered_by_key(batches)
        counts = np.diff(bounds)
        tabled = table_keys(config, counts) & np.array([key not in initial for key in keys], dtype=bool)
        models, table = [], None
        if tabled.any():
            every = tabled.all()  # (then the gathered rows are the table's as they are)
            table = train_table(
                config,
                by_key if every else by_key.take(np.repeat(tabled, counts)),
                bounds if every else np.concatenate([[0], np.cumsum(counts[tabled])]),
                keys if every else [key for key, chosen in zip(keys, tabled) if chosen],
                self.metadata,
            )
            self._table_keys.inc(len(table))
            self._keys.inc(len(table))
        # Apple spaces its epochs over what a key's learner will learn when Train would count it.
        expect = config.expand == "apple" and (config.passes > 1 or config.examples_per_pass is not None)
        for position in np.flatnonzero(~tabled):
            key, examples = keys[position], by_key.rows_between(int(bounds[position]), int(bounds[position + 1]))
            origin = initial.get(key)
            learner = make_learner(config, sparse=True) if origin is None else continue_from(origin)
            # (a key's small holdout is released, as in its streamed passes: not cross-validated per key)
            train_passes(learner, [examples], config.passes, expect=expect and origin is None, cross_validate=False)
            report_selection(learner.selection_, self._stopped)
            self._keys.inc()
            models.append((key, learner.to_model(self.metadata)))
        if models or table is not None:
            yield KeyShard(shard, self.shards, models, names=feature_names(batches), table=table)
