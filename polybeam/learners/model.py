"""Model: a learner's configuration, its non-zero weights and what training saw.

A model file is one self-checking binary file::

    b"POLYBEAM-MODEL\\n"          signature
    uint32 little-endian          format version
    uint64 little-endian          length of the JSON header
    JSON header (UTF-8)           config, metadata, names, expansion, array dtypes and shapes
    array bytes                   slots (int64) then weights (float64; slots x classes for softmax),
                                  then (version 4) the products' factor table: monomial_slots,
                                  monomial_offsets, monomial_factors (int64), then (version 5,
                                  when the learner clipped its values) clip_low, clip_high (float64),
                                  then (version 7) fill_slots (int64), fill_values (float64),
                                  fill_indicated (int64: 1 where a missing value brings an indicator)
    32 bytes                      SHA-256 of everything above

Loading refuses, with a message that says what is wrong, a file that is not a
model, comes from a newer format version, is truncated or fails its checksum.
Version 1 files (array lengths instead of shapes), version 2 files (no
polynomial expansion), version 3 files (products' factors in the JSON
header) and version 4 files (no value ranges) still load. Version 6 is the
format of version 5 for shared per-key models (see
:mod:`polybeam.learners.multitask`), which older readers must refuse.
Version 7 adds the means a model fills missing values with (see
:mod:`polybeam.learners.missing`); older readers refuse it, as they cannot
score a missing value. A model trained on expanded features records
its expansion (for apple: the parent monomials) and the factors of its weighted
products, and expands its input the same way before predicting.

A learner with normalised adaptive steps predicts with each value clipped to
the range its feature had so far (``kernels.within_scale``); its model keeps
that range per weighted slot (``clip_low``, ``clip_high``) and predicts the
same way, so that a value far outside what training saw (a house ten times
larger, and apple's products of such values) cannot make a prediction that
training never made: on the suite's ames task one split's apple model
predicted 755,000 for a 79,000 house without it.

Examples
--------
>>> import numpy as np
>>> from polybeam.learners.config import LearnerConfig
>>> model = Model(LearnerConfig(loss="logistic"), np.array([0, 5]), np.array([0.5, -2.0]),
...               names={5: "word"})
>>> Model.from_bytes(model.to_bytes()).weights.tolist()
[0.5, -2.0]
>>> try:
...     Model.from_bytes(model.to_bytes()[:-3])
... except ModelFileError as error:
...     print(str(error).split(":")[0])
model file is truncated
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from polybeam.formats.formats import formats_where  # (the registry alone: it imports nothing of polybeam)
from polybeam.learners import container, kernels
from polybeam.learners.arrays import as_batch
from polybeam.learners.batch import ExampleBatch
from polybeam.learners.config import LearnerConfig
from polybeam.learners.expansion import Expansion
from polybeam.learners.hashing import BIAS_SLOT
from polybeam.learners.indicators import with_indicators
from polybeam.learners.loss_specs import MAX_LOG_MEAN, loss_spec
from polybeam.learners.monomials import FactorTable, Monomial
from polybeam.learners.multitask import SharedKeys, cross_batch, key_hashes
from polybeam.learners.softmax import predict_batch_softmax
from polybeam.learners.values import check_finite_weights

MAGIC = b"POLYBEAM-MODEL\n"
FORMAT_VERSION = 8
# Version 6 is version 5 written by a shared per-key model (its metadata's key_model: shared), so that a
# polybeam that cannot cross examples with their keys refuses it instead of predicting with hash noise.
SHARED_KEYS_VERSION = 6
PLAIN_VERSION = 5
# Version 7: a model (shared per key or not) that fills missing values with its features' means.
FILLS_VERSION = 7
# Version 8: a shared per-key model whose trained keys are an array after the header (8 bytes a key, read
# at once) rather than a JSON list in its metadata (a million keys: ~12 MB of text to parse).
TRAINED_KEYS_VERSION = 8
# The arrays after the header, in order (version 5; earlier versions have the first two or five).
_ARRAYS = (
    "slots",
    "weights",
    "monomial_slots",
    "monomial_offsets",
    "monomial_factors",
    "clip_low",
    "clip_high",
    "fill_slots",
    "fill_values",
    "fill_indicated",
    "trained_keys",
)

# A model (or learner-state) file that cannot be used, with the reason.
ModelFileError = container.FormatError


def softmax_probabilities(scores: np.ndarray) -> np.ndarray:
    """Row-wise softmax of an (n, K) score matrix, without overflow."""
    shifted = np.exp(scores - scores.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)


def finalize_predictions(loss: str, margins: np.ndarray, label_min, label_max) -> np.ndarray:
    """Turn margins into predictions in the label's units, by the loss's link (``loss_specs``). The label
    range is the model's (numbers), or each row's model's (arrays, one per row).

    Squared and quantile loss clamp to the range of training labels (as VW does),
    logistic gives the probability of the positive class, hinge the margin itself,
    softmax the probability of every class (n x K) and Poisson the mean, exp(margin).
    """
    spec = loss_spec(loss)
    if spec.clamps and (np.ndim(label_min) or np.ndim(label_max)):  # a range per row (many keys' models)
        margins = np.where(label_max > label_min, np.clip(margins, label_min, label_max), margins)
    elif spec.clamps and label_max > label_min:
        margins = np.clip(margins, label_min, label_max)
    if spec.link == "sigmoid":
        return 0.5 * (1.0 + np.tanh(0.5 * margins))  # the logistic sigmoid, without overflow
    if spec.link == "softmax":
        return softmax_probabilities(margins)
    if spec.link == "exp":
        return np.exp(np.minimum(margins, MAX_LOG_MEAN))
    return margins


@dataclass(frozen=True, eq=False)
class Model:
    """Configuration + sparse weights + metadata; see the module docstring.

    Parameters
    ----------
    config : LearnerConfig
    slots : int array
        Slots with a non-zero weight, ascending.
    weights : float array
        Their weights: one per slot, or one row of per-class weights per slot
        (shape slots x classes) for softmax.
    metadata : mapping
        What training saw (examples, progressive loss, label range, ...).
    names : mapping of slot -> feature name
        Names of weighted slots, when the input format knew them.
    expansion : Expansion or None
        How the input is expanded before the weights apply (polynomial models).
    monomials : mapping of slot -> factor slots
        The product each weighted product slot holds (for names and inspection).
    clip_low, clip_high : float arrays, optional
        Per slot (as ``slots``), the range its values are clipped to before the
        weights apply: the range the learner predicted with (see the module
        docstring). None: values are used as they are.
    fill_slots, fill_values, fill_indicated : int, float and bool arrays, optional
        The value a missing value (NaN) of each of these slots is predicted
        with: its mean over the training examples, and whether it also brings
        its indicator feature (see :mod:`polybeam.learners.missing`); other
        slots' missing values are 0. None: every missing value is 0 (a model
        that learned none).
    """

    config: LearnerConfig
    slots: np.ndarray
    weights: np.ndarray
    metadata: Mapping[str, Any] = field(default_factory=dict)
    names: Mapping[int, str] = field(default_factory=dict)
    expansion: Expansion | None = None
    monomials: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    clip_low: np.ndarray | None = None
    clip_high: np.ndarray | None = None
    fill_slots: np.ndarray | None = None
    fill_values: np.ndarray | None = None
    fill_indicated: np.ndarray | None = None

    def __post_init__(self) -> None:
        slots = np.asarray(self.slots, dtype=np.int64)
        weights = np.asarray(self.weights, dtype=np.float64)
        outputs = self.config.outputs
        expected = (len(slots),) if outputs == 1 else (len(slots), outputs)
        if slots.ndim != 1 or weights.shape != expected:
            raise ValueError(f"model has {slots.shape} slots for weights of shape {weights.shape}; expected {expected}")
        order = np.argsort(slots, kind="stable")
        object.__setattr__(self, "slots", slots[order])
        object.__setattr__(self, "weights", weights[order])
        if (self.clip_low is None) != (self.clip_high is None):
            raise ValueError("a model's value ranges need both clip_low and clip_high")
        if self.clip_low is not None:
            for name in ("clip_low", "clip_high"):
                bounds = np.asarray(getattr(self, name), dtype=np.float64)
                if bounds.shape != slots.shape:
                    raise ValueError(f"model has {len(slots)} slots but {bounds.shape} {name} bounds")
                object.__setattr__(self, name, bounds[order])
        if len(slots) and (slots[0] < 0 or slots[-1] >= 1 << self.config.bits):
            raise ValueError(f"model slots must lie in [0, 2**{self.config.bits})")
        if (self.fill_slots is None) != (self.fill_values is None):
            raise ValueError("a model's fills need both fill_slots and fill_values")
        if self.fill_slots is not None:
            fill_slots = np.asarray(self.fill_slots, dtype=np.int64)
            fill_values = np.asarray(self.fill_values, dtype=np.float64)
            if fill_slots.ndim != 1 or fill_values.shape != fill_slots.shape:
                raise ValueError(f"model has {fill_slots.shape} fill slots for {fill_values.shape} fill values")
            indicated = np.zeros(len(fill_slots), dtype=bool) if self.fill_indicated is None else self.fill_indicated
            indicated = np.asarray(indicated, dtype=bool)
            if indicated.shape != fill_slots.shape:
                raise ValueError(f"model has {fill_slots.shape} fill slots for {indicated.shape} indicator flags")
            order = np.argsort(fill_slots, kind="stable")
            object.__setattr__(self, "fill_slots", fill_slots[order])
            object.__setattr__(self, "fill_values", fill_values[order])
            object.__setattr__(self, "fill_indicated", indicated[order])
        object.__setattr__(self, "monomials", FactorTable.from_mapping(self.monomials))

    # -- prediction -----------------------------------------------------------

    @cached_property
    def dense_weights(self) -> np.ndarray:
        weights = np.zeros((1 << self.config.bits,) + self.weights.shape[1:])
        weights[self.slots] = self.weights
        return weights

    @cached_property
    def dense_ranges(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Every slot's value range (-inf, inf where a slot has none), or None when values are not clipped."""
        if self.clip_low is None:
            return None
        size = 1 << self.config.bits
        low, high = np.full(size, -np.inf), np.full(size, np.inf)
        low[self.slots], high[self.slots] = self.clip_low, self.clip_high
        return low, high

    @property
    def few_slots(self) -> bool:
        """Whether the model predicts from its own rows (see :meth:`_on_rows`): far fewer weights than slots."""
        return len(self.slots) * 64 < (1 << self.config.bits)

    @cached_property
    def _rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
        """``(slots, weights, low, high)`` by row: row 0 the bias, row 1 + i slot ``slots[i]``, a last row
        of zeros (and unbounded ranges) for slots the model lacks."""
        extra = (1,) + self.weights.shape[1:]
        bias = self.weights[:1] if len(self.slots) and self.slots[0] == 0 else np.zeros(extra)
        weights = np.concatenate([bias, self.weights, np.zeros(extra)])
        if self.clip_low is None:
            return self.slots, weights, None, None
        low = np.concatenate([[-np.inf], self.clip_low, [-np.inf]])
        high = np.concatenate([[np.inf], self.clip_high, [np.inf]])
        return self.slots, weights, low, high

    def _on_rows(self, batch: ExampleBatch) -> tuple[ExampleBatch, np.ndarray]:
        """``batch`` with its slots replaced by the model's rows (values clipped), and the weights by row."""
        slots, weights, low, high = self._rows
        position = np.minimum(np.searchsorted(slots, batch.indices), max(len(slots) - 1, 0))
        found = slots[position] == batch.indices if len(slots) else np.zeros(len(batch.indices), dtype=bool)
        rows = np.where(found, position + 1, len(slots) + 1)
        values = batch.values if low is None else np.clip(batch.values, low[rows], high[rows])
        return dataclasses.replace(batch, indices=rows.astype(batch.indices.dtype), values=values), weights

    def filled(self, batch: ExampleBatch) -> ExampleBatch:
        """``batch`` with each missing value (NaN) replaced by its slot's fill (0 for a slot without one),
        followed by its indicator where the slot has one, as the learner filled it (see
        :mod:`polybeam.learners.missing`); the batch itself when it has none.

        >>> from polybeam.learners.config import LearnerConfig
        >>> model = Model(LearnerConfig(), np.array([0, 3]), np.array([0.5, 2.0]),
        ...               fill_slots=np.array([3]), fill_values=np.array([1.5]))
        >>> nan = float("nan")
        >>> model.filled(ExampleBatch.from_rows([(0.0, {3: nan, 4: nan}), (0.0, {3: 1.0})])).values.tolist()
        [1.5, 0.0, 1.0]
        >>> model.predict(ExampleBatch.from_rows([(0.0, {3: nan})])).tolist()   # 0.5 + 2 x 1.5
        [3.5]
        """
        missing = np.isnan(batch.values)
        if not missing.any():
            return batch
        values = batch.values.copy()
        slots = batch.indices[missing]
        fills, indicated = np.zeros(len(slots)), np.zeros(len(slots), dtype=bool)
        if self.fill_slots is not None and len(self.fill_slots):
            position = np.minimum(np.searchsorted(self.fill_slots, slots), len(self.fill_slots) - 1)
            found = self.fill_slots[position] == slots
            fills[found] = self.fill_values[position[found]]
            indicated[found] = self.fill_indicated[position[found]]
        values[missing] = fills
        marks = np.zeros(len(values), dtype=bool)
        marks[missing] = indicated
        return with_indicators(dataclasses.replace(batch, values=values), marks)

    def within_ranges(self, batch: ExampleBatch) -> ExampleBatch:
        """``batch`` (expanded, when the model expands) with each value clipped to its slot's range."""
        if self.dense_ranges is None:
            return batch
        low, high = self.dense_ranges
        return dataclasses.replace(batch, values=np.clip(batch.values, low[batch.indices], high[batch.indices]))

    @cached_property
    def shared_keys(self) -> SharedKeys | None:
        """How a shared per-key model (``key_model: shared``) crosses examples with their keys, else None."""
        return SharedKeys.from_metadata(self.metadata)

    def crossed(self, batch: ExampleBatch, keys=None) -> ExampleBatch:
        """A shared per-key model's input: ``batch`` crossed with each example's key, ``keys`` (one str per
        example) or the batch's own (its key column, namespace, tag or file, as the model's key spec
        says); a key training never saw, or a batch without keys, gets the shared part alone. Other
        models' input: ``batch``."""
        shared = self.shared_keys
        if shared is None:
            return batch
        if keys is not None:
            hashes = key_hashes(keys, shared.seed)
            if len(hashes) != len(batch):
                raise ValueError(f"got {len(keys)} keys for {len(batch)} examples")
            return cross_batch(batch, hashes, offset_scale=shared.offset_scale, known=shared.trained)
        if shared.spec.read_by_parser and batch.key_codes is None:
            return cross_batch(batch, np.zeros(len(batch), dtype=np.int64), known=np.zeros(0, dtype=np.int64))
        return shared.cross(batch)

    def margins(self, batch: ExampleBatch, keys=None) -> np.ndarray:
        """Raw scores ``w . x + b`` (n x classes for softmax) of an ExampleBatch, or of a matrix of
        examples (NumPy, SciPy sparse, pandas; see :mod:`polybeam.learners.arrays`). ``keys``: each
        example's key, for a shared per-key model (see :meth:`crossed`)."""
        batch = as_batch(batch, bits=self.config.bits, seed=self.config.seed)
        if batch.bits != self.config.bits:
            raise ValueError(
                f"batch is hashed into {batch.bits} bits but the model uses {self.config.bits}; "
                "read the data with the model's bits and seed"
            )
        # Where the learner filled its input's missing values: after crossing with keys (a shared per-key
        # model is linear), before expanding (products of the filled values).
        batch = self.filled(self.crossed(batch, keys))
        if self.expansion is not None:
            batch = self.expansion.expand(batch)
        if self.few_slots:  # a per-key model: its rows, not 2**bits of mostly zeros
            batch, weights = self._on_rows(batch)
        else:
            batch, weights = self.within_ranges(batch), self.dense_weights
        arrays = (batch.indptr, batch.indices, batch.values, weights, self.config.bias)
        if self.config.outputs > 1:
            out = np.empty((len(batch), self.config.outputs))
            predict_batch_softmax(*arrays, out)
        else:
            out = np.empty(len(batch))
            kernels.predict_batch(*arrays, out)
        return out

    def predict_classes(self, batch: ExampleBatch) -> np.ndarray:
        """Softmax: the most probable class of each example, as ids 1..K."""
        if self.config.loss != "softmax":
            raise ValueError("predict_classes is for softmax models")
        return np.argmax(self.margins(batch), axis=1) + 1

    def class_name(self, class_id: int) -> str:
        """The name of class ``class_id`` (1..K), or the id itself when classes are unnamed."""
        names = self.config.class_names
        return names[class_id - 1] if names else str(class_id)

    def predict(self, batch: ExampleBatch, keys=None) -> np.ndarray:
        """Predictions: clamped values (squared, quantile), P(y = +1) (logistic), margins (hinge), class
        probabilities (softmax, n x K) or means (Poisson). ``keys``: see :meth:`margins`."""
        return finalize_predictions(
            self.config.loss,
            self.margins(batch, keys),
            float(self.metadata.get("label_min", 0.0)),
            float(self.metadata.get("label_max", 0.0)),
        )

    # -- inspection -------------------------------------------------------------

    @property
    def input(self) -> dict | None:
        """How the training examples were read (format, columns, delimiter, bits, seed, class names; see
        ``polybeam.formats.input_settings``), or None for a model that does not say (written before polybeam
        recorded it, or from Python without ``RecordOrigin``)."""
        return self.metadata.get("input")

    @property
    def provenance(self) -> dict | None:
        """Where the model came from: versions, input patterns, read counts, options, runner, start and end
        (see ``polybeam.transforms.provenance``), or None for a model that does not say."""
        return self.metadata.get("provenance")

    def origin_lines(self) -> list[str]:
        """The summary's lines on how the input was read and where the model came from (none if unknown)."""
        lines = []
        if self.input:
            shared = ("format", "bits", "seed", "classes", "class_names", "columns")
            settings = [
                f"{name}={value!r}"
                for name, value in self.input.items()
                if name not in shared and value not in (None, [], (), False)
            ]
            lines.append(
                f"input: {self.input.get('format')}" + (f", read with {', '.join(settings)}" if settings else "")
            )
        record = self.provenance
        if record:
            lines.append(
                f"trained by polybeam {record.get('polybeam')} (Apache Beam {record.get('apache_beam')}, "
                f"numba {record.get('numba')}, Python {record.get('python')}) on {record.get('runner')}, "
                f"from {record.get('started')} to {record.get('finished')}"
            )
            read = record.get("read")
            counts = (
                ""
                if not read
                else (
                    f": {read['records']} records = {read['examples']} examples + "
                    f"{read['dead_letters']} dead letters + {read['skipped']} skipped"
                )
            )
            lines.append(f"read {', '.join(record.get('inputs', []))}{counts}")
        return lines

    @property
    def nonzero(self) -> int:
        """Number of non-zero weights."""
        return int(np.count_nonzero(self.weights))

    def feature_name(self, slot: int) -> str | None:
        """The slot's feature name; for LIBSVM-style input, unnamed slots are the file's indices."""
        slot = int(slot)
        if slot in self.monomials:
            base = {factor: self._base_name(factor) for factor in set(self.monomials[slot])}
            return Monomial.of(self.monomials[slot]).name(base)
        return self._base_name(slot, unknown=None)

    def _base_name(self, slot: int, unknown: str | None = "") -> str | None:
        if slot == BIAS_SLOT and self.config.bias and slot not in self.names:
            return "(bias)"
        if slot in self.names:
            return self.names[slot]
        if self.metadata.get("input_format") in formats_where(indexed=True):
            # Indices below 2**bits are their own slots (larger ones are hashed).
            return f"index {slot}"
        return f"w{slot}" if unknown == "" else unknown

    def top_weights(self, top: int = 20) -> list[dict[str, Any]]:
        """The ``top`` largest weights by magnitude, with slot, name (None if unknown) and class (softmax)."""
        flat = self.weights.reshape(len(self.slots), -1)
        order = np.argsort(-np.abs(flat), axis=None, kind="stable")[:top]
        entries = []
        for position in order:
            row, column = divmod(int(position), flat.shape[1])
            slot = int(self.slots[row])
            entry = {
                "slot": slot,
                "name": self.feature_name(slot),
                "weight": float(flat[row, column]),
                "degree": len(self.monomials.get(slot, (slot,))),
            }
            if self.config.outputs > 1:
                entry["class"] = self.class_name(column + 1)
            entries.append(entry)
        return entries

    @property
    def kind(self) -> str:
        """What the model computes: ``"linear"``, ``"apple"`` (products over its parents),
        ``"quadratic"`` or ``"cubic"``. An apple model without parents (apple's guard kept the
        linear model, or apple never grew) is linear."""
        if self.expansion is None or self.expansion.kind == "none":
            return "linear"
        if self.expansion.kind == "apple" and not self.expansion.parents:
            return "linear"
        return self.expansion.kind

    def summary_dict(self, top: int = 20) -> dict[str, Any]:
        meta = dict(self.metadata)
        return {
            "kind": self.kind,
            "loss": self.config.loss,
            "step": self.config.step,
            "sparsity": self.config.sparsity,
            "classes": self.config.classes or None,
            "bits": self.config.bits,
            "nonzero_weights": self.nonzero,
            "slots": 1 << self.config.bits,
            "examples": meta.get("examples"),
            "progressive_loss": meta.get("progressive_loss"),
            "passes": len(meta.get("passes", [])) or self.config.passes,
            "apple_guard": meta.get("apple_guard"),
            "holdout": meta.get("holdout"),
            "input": self.input,
            "provenance": self.provenance,
            "top_weights": self.top_weights(top),
        }

    def summary(self, top: int = 20) -> str:
        """A human-readable summary: settings, sparsity, training figures, largest weights."""
        info = self.summary_dict(top)
        loss = info["progressive_loss"]
        config = self.config
        parameter = loss_spec(config.loss).parameter
        loss_name = (
            info["loss"] if parameter is None else f"{info['loss']} ({parameter.name} {config.loss_parameter:g})"
        )
        lines = [f"polybeam {info['kind']} model: loss={loss_name} step={info['step']} bits={info['bits']}"]
        if config.outputs > 1:
            named = f" ({', '.join(config.class_names)})" if config.class_names else ""
            lines.append(f"classes: {config.classes}{named}")
        if config.sparsity != "none":
            theta = "" if config.truncate_threshold is None else f", threshold {config.truncate_threshold:g}"
            lines.append(
                f"sparsity: {config.sparsity} (gravity {config.gravity:g}, every {config.truncate_every}{theta})"
            )
        if self.shared_keys is not None:
            lines.append(
                f"shared per-key model: --key {self.shared_keys.key}, offsets for "
                f"{len(self.shared_keys.trained)} keys (offset prior {config.offset_prior:g}); "
                "other keys get the shared weights"
            )
        if self.expansion is not None:
            parents = f", {len(self.expansion.parents)} parent monomials" if self.expansion.kind == "apple" else ""
            lines.append(f"expansion: {self.expansion.kind}{parents} (max degree {self.expansion.max_degree})")
        if info["apple_guard"]:
            lines.append(guard_line(info["apple_guard"]))
        if info["holdout"]:
            lines.append(holdout_line(info["holdout"]))
        if "greedy_step" in self.metadata:
            lines.append(f"mean greedy step (GSA): {self.metadata['greedy_step']:.6g}")
        lines += self.origin_lines()
        lines += [
            f"non-zero weights: {info['nonzero_weights']} of {info['slots'] * config.outputs} weights",
            f"trained on {info['examples']} examples, {info['passes']} pass(es); progressive loss {loss:.6g}"
            if isinstance(loss, float) and math.isfinite(loss)
            else f"trained on {info['examples']} examples, {info['passes']} pass(es)",
            f"top {len(info['top_weights'])} weights by magnitude:",
            f"  {'rank':>4}  {'slot':>10}  {'weight':>12}  name" + ("  (class)" if self.config.outputs > 1 else ""),
        ]
        for rank, entry in enumerate(info["top_weights"], 1):
            name = entry["name"] if entry["name"] is not None else "-"
            of_class = f"  ({entry['class']})" if "class" in entry else ""
            lines.append(f"  {rank:>4}  {entry['slot']:>10}  {entry['weight']:>12.6g}  {name}{of_class}")
        return "\n".join(lines)

    # -- serialisation ------------------------------------------------------------

    def to_bytes(self) -> bytes:
        """The model file's bytes; a model whose weights are not all finite is refused
        (:class:`~polybeam.learners.values.NonFiniteModel`): nothing that predicts NaN is written."""
        check_finite_weights(
            self.weights,
            label_range=(float(self.metadata.get("label_min", 0.0)), float(self.metadata.get("label_max", 0.0))),
        )
        arrays = {
            "slots": self.slots.astype("<i8"),
            "weights": self.weights.astype("<f8"),
            "monomial_slots": self.monomials.slots.astype("<i8"),
            "monomial_offsets": self.monomials.offsets.astype("<i8"),
            "monomial_factors": self.monomials.factors.astype("<i8"),
        }
        if self.clip_low is not None:
            arrays.update(clip_low=self.clip_low.astype("<f8"), clip_high=self.clip_high.astype("<f8"))
        if self.fill_slots is not None:
            arrays.update(fill_slots=self.fill_slots.astype("<i8"), fill_values=self.fill_values.astype("<f8"))
            arrays.update(fill_indicated=self.fill_indicated.astype("<i8"))
        metadata = self.metadata
        if self.shared_keys is not None:  # (its trained keys go after the header, as an array)
            metadata = {name: value for name, value in metadata.items() if name != "trained_keys"}
            arrays.update(trained_keys=self.shared_keys.trained.astype("<i8"))
        header = {
            "config": self.config.to_dict(),
            "metadata": _jsonable(metadata),
            "names": {str(k): v for k, v in self.names.items()},
            "expansion": None if self.expansion is None else self.expansion.to_dict(),
        }
        if self.shared_keys is not None:
            version = TRAINED_KEYS_VERSION
        else:
            version = FILLS_VERSION if self.fill_slots is not None else PLAIN_VERSION
        return container.pack(MAGIC, version, header, arrays)

    @classmethod
    def from_bytes(cls, data: bytes) -> Model:
        _, header, arrays = container.unpack(data, MAGIC, newest=FORMAT_VERSION, what="model file", names=_ARRAYS)
        # Version 1 recorded array lengths, version 2 array shapes; version 4 added the factor table.
        if "slots" not in arrays or "weights" not in arrays:
            raise ModelFileError("model file is corrupt: unreadable header (no slots and weights)")
        if "monomial_slots" in arrays:
            try:
                monomials = FactorTable(
                    arrays["monomial_slots"].astype(np.int64),
                    arrays["monomial_offsets"].astype(np.int64),
                    arrays["monomial_factors"].astype(np.int64),
                )
            except (KeyError, ValueError) as error:
                raise ModelFileError(f"model file is corrupt: bad factor table ({error})") from None
        else:  # version 3: in the header
            monomials = {int(k): tuple(v) for k, v in header.get("monomials", {}).items()}
        metadata = header.get("metadata")
        if "trained_keys" in arrays and isinstance(metadata, dict):
            metadata["trained_keys"] = arrays["trained_keys"].astype(np.int64).tolist()
        try:
            return cls(
                config=LearnerConfig.from_dict(header["config"]),
                slots=arrays["slots"].astype(np.int64),
                weights=arrays["weights"].astype(np.float64),
                metadata=metadata,
                names={int(k): v for k, v in header["names"].items()},
                expansion=Expansion.from_dict(header["expansion"]) if header.get("expansion") else None,
                monomials=monomials,
                clip_low=arrays["clip_low"].astype(np.float64) if "clip_low" in arrays else None,
                clip_high=arrays["clip_high"].astype(np.float64) if "clip_high" in arrays else None,
                fill_slots=arrays["fill_slots"].astype(np.int64) if "fill_slots" in arrays else None,
                fill_values=arrays["fill_values"].astype(np.float64) if "fill_values" in arrays else None,
                fill_indicated=arrays["fill_indicated"].astype(bool) if "fill_indicated" in arrays else None,
            )
        except (KeyError, TypeError) as error:
            raise ModelFileError(f"model file is corrupt: incomplete header ({error})") from None

    def save(self, path: str) -> None:
        """Write the model to a local file (see ``transforms.model_io`` for any Beam file system)."""
        with open(path, "wb") as handle:
            handle.write(self.to_bytes())

    @classmethod
    def load(cls, path: str) -> Model:
        """Read a model from a local file, refusing bad files with a clear message."""
        with open(path, "rb") as handle:
            data = handle.read()
        try:
            return cls.from_bytes(data)
        except ModelFileError as error:
            raise ModelFileError(f"{path}: {error}") from None

    def __repr__(self) -> str:
        return f"Model(loss={self.config.loss!r}, bits={self.config.bits}, nonzero={self.nonzero})"


def _jsonable(value: Any) -> Any:
    """Metadata as plain JSON (numpy scalars and arrays become numbers and lists)."""
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def guard_line(guard: Mapping[str, Any]) -> str:
    """One line on what apple's guard kept and why (a model's ``apple_guard`` metadata).

    >>> guard_line({"products_kept": False, "decided_on": "holdout", "pass": 2, "examples": 400.0,
    ...             "holdout_loss": 0.31, "linear_holdout_loss": 0.29})
    "apple guard: kept the linear model (apple's products did not pay): holdout loss after pass 2 0.31 with products, 0.29 without, over 400 held-out examples"
    """
    kept = "apple's products" if guard["products_kept"] else "the linear model (apple's products did not pay)"
    if guard.get("decided_on") == "holdout":
        return (
            f"apple guard: kept {kept}: holdout loss after pass {guard['pass']} {guard['holdout_loss']:.6g} with "
            f"products, {guard['linear_holdout_loss']:.6g} without, over {guard['examples']:g} held-out examples"
        )
    return (
        f"apple guard: kept {kept}: progressive loss since the last expansion {guard['progressive_loss']:.6g} "
        f"with products, {guard['linear_progressive_loss']:.6g} without, over {guard['examples']:g} examples"
    )


def unjudged_finishing_line(finishing: Mapping[str, Any]) -> str:
    """Why the finishing stage kept the online model (a model's ``lbfgs`` metadata, ``kept`` "online").

    >>> unjudged_finishing_line({"online_holdout_loss": 0.25, "holdout_examples": 15, "holdout_judges_from": 30})
    'the online model is kept: 15 held-out examples are too few to judge by (the stage judges from 30)'
    >>> unjudged_finishing_line({"online_holdout_loss": 0.25, "holdout_examples": 80, "holdout_judges_from": 30})
    'no point beat the online model on the holdout (its loss 0.25 over 80 examples): the online model is kept'
    """
    held, needed = finishing.get("holdout_examples"), finishing.get("holdout_judges_from")
    if held is not None and needed is not None and held < needed:
        return f"the online model is kept: {held} held-out examples are too few to judge by (the stage judges from {needed})"
    over = f" over {held} examples" if held is not None else ""
    return (
        f"no point beat the online model on the holdout (its loss {finishing['online_holdout_loss']:.6g}{over}): "
        "the online model is kept"
    )


def holdout_line(holdout: Mapping[str, Any]) -> str:
    """One line on the passes' holdout losses and the pass kept (a model's ``holdout`` metadata).

    >>> holdout_line({"period": 10, "early_terminate": 3, "best_pass": 2, "stopped_after": 5, "passes": [
    ...     {"pass": n, "holdout_loss": loss} for n, loss in enumerate([0.4, 0.3, 0.32, 0.33, 0.31], 1)]})
    'holdout (1 example in 10): loss 0.4, 0.3, 0.32, 0.33, 0.31 after passes 1-5; kept pass 2; stopped after pass 5 (3 passes without improvement)'
    """
    passes = holdout["passes"]
    chosen = holdout.get("cross_validation")
    if chosen:
        rate = f" at rate {chosen['rate']:.4g}" if chosen.get("rate") is not None else ""
        restarts = sum(1 for entry in passes if entry.get("restart_rate") is not None)
        return (
            f"holdout: fewer than {holdout['min_examples']} examples to hold out, so {chosen['folds']}-fold "
            f"cross-validation over {chosen['examples']} examples judged passes 1-{passes[-1]['pass']}"
            f"{f' ({restarts} restart(s) at half the rate)' if restarts else ''} and chose pass "
            f"{holdout['best_pass']}: its {chosen['passes']} pass(es){rate} were learned again on every example"
        )
    if holdout.get("released"):
        return (
            f"holdout (1 example in {holdout['period']}): {passes[0]['examples']} examples held out of pass "
            f"{passes[0]['pass']}, fewer than {holdout['min_examples']} to judge passes by: every later pass "
            "learned every example and the last pass was kept"
        )
    losses = ", ".join(
        "-"
        if entry["holdout_loss"] is None or not math.isfinite(entry["holdout_loss"])
        else f"{entry['holdout_loss']:.6g}"
        for entry in passes
    )
    span = f"{passes[0]['pass']}-{passes[-1]['pass']}" if len(passes) > 1 else f"{passes[0]['pass']}"
    line = (
        f"holdout (1 example in {holdout['period']}): loss {losses} after pass{'es' if len(passes) > 1 else ''} "
        f"{span}; kept pass {holdout['best_pass']}"
    )
    restarts = [entry for entry in passes if entry.get("restart_rate") is not None]
    if restarts:
        line += "; started again at " + ", ".join(
            f"rate {entry['restart_rate']:.4g} after pass {entry['pass']}" for entry in restarts
        )
    if holdout.get("stopped_after") and restarts:
        line += f"; stopped after pass {holdout['stopped_after']} (no better than the rate before)"
    elif holdout.get("stopped_after"):
        line += (
            f"; stopped after pass {holdout['stopped_after']} ({holdout['early_terminate']} passes without improvement)"
        )
    return line
