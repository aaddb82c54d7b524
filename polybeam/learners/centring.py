"""Online centring of the features every example has: a better-conditioned problem at no change of model.

Features with large means (unscaled numeric columns: ages, incomes, counts)
make a linear learner's problem ill-conditioned: every weight's step also
moves the prediction of every example by ``w_j * mean_j``, so the bias and the
weights fight over the same direction, and online steps crawl along it. A
batch solver's user standardises the columns first; an online learner reading
sparse, hashed data cannot subtract a mean from a feature an example does not
have without making every update dense.

It can for the features that every example has. The learner learns on
``x_j - mean_j`` for each slot present in every example so far (its mean is
the running mean over those examples, this one included), which is the same
family of models: ``b + sum_j w_j (x_j - mean_j)`` is ``b' + w . x`` with
``b' = b - sum_j w_j mean_j``. The first example names the candidates (its
slots); a candidate is dropped at the first example that lacks it, and its
term is then folded into the bias. Sparse features (one-hot levels, words)
drop out after a few examples and cost nothing from then on; dense numeric
columns stay centred. Extracted models fold every mean into the bias: a model
file holds ordinary weights.

A drop folds ``w_j * mean_j`` into the bias, which keeps the function: an
example that lacks the slot (raw value 0, as sparse formats write a zero) gets
the centred function's straight extrapolation to 0. Where 0 lies many spreads
of the slot's values away (a few nearly equal readings, or a column far from
0 such as a year), a weight that a normalising learner learned per unit of
that spread put tens of units into the bias of every later example (issue 22).
:meth:`Centring.fold_dropped` extrapolates no further than the values' spread
reaches, then refits the weight and the bias by least squares to the function
on the examples seen and on the one lacking the slot.

A learner per key learns its first :data:`RAW_ROWS` examples on raw values,
and then the candidates whose values varied start being centred, the weights
moved into that form exactly (``b + w . mean`` the bias) and their adaptive
steps started afresh at the centred values' scale. Centred from its first
example on, it would learn that example's features nothing (its centred
values are all means, so zeros), centre on a mean of one or two examples, and
fold away the weights of slots that every one of its few rows had by chance
(issue 31: 0.012-0.015 log loss worse than without centring on generated keys
of 1-19 short texts). A learner of one model centres from its first example
(waiting cost the suite's small dense tasks more than it saved), and at the
end of a batch once :data:`VARIED_BY` examples were counted stops centring the
slots whose values were all equal (a word in every row so far, a one-hot level): they have no spread to
condition, and would learn nothing while centred.

Only the values the kernels see change, and only between examples, so every
loss, step rule and sparsity rule works on centred features unchanged. The
learner splits a batch where a candidate drops out, to fold its weight at
that point.

>>> import numpy as np
>>> from polybeam.learners.batch import ExampleBatch
>>> batch = ExampleBatch.from_rows([(1.0, {3: 10.0, 5: 1.0}), (-1.0, {3: 20.0}), (1.0, {3: 30.0})], bits=4)
>>> centring = Centring.empty()
>>> raw = np.zeros((16, 1))
>>> [(start, stop, values[batch.indptr[start]:batch.indptr[stop]].tolist())
...  for start, stop, values in centring.segments(batch, raw)]
[(0, 1, [0.0, 0.0]), (1, 3, [5.0, 10.0])]
>>> centring.slots.tolist(), centring.means().tolist()
([3], [20.0])
>>> later = Centring.empty(raw_rows=2)
>>> [(start, stop, values[batch.indptr[start]:batch.indptr[stop]].tolist())
...  for start, stop, values in later.segments(batch, raw)]
[(0, 1, [10.0, 1.0]), (1, 2, [20.0]), (2, 3, [10.0])]
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numba
import numpy as np

from polybeam.learners import kernel_cache  # noqa: F401  (first: where numba caches the kernels below)
from polybeam.learners.batch import ExampleBatch

# Relative size below which a centred value is taken for cancellation, not signal.
CANCELLED = 1e-9
# Examples a learner per key (a few rows each) learns on raw values before it centres the slots every one
# of them had and whose values varied: a mean of fewer is noise, and the first example centred would be
# all means (zeros: its words would teach the bias alone). On generated keys of 1-19 short texts that
# cost 0.012-0.015 log loss against no centring; a learner of one model centres from its first example,
# since waiting for 2, 5 or 10 cost the suite's small dense tasks 0.01-0.05 (Sonar, Glass, wine; see
# the module docstring).
RAW_ROWS = 10
# At the end of the first batch after this many examples (and of every later one), a centred slot whose
# values have all been equal stops being centred: it has
# no spread to condition, learns nothing centred (its values are 0), and its weight would be refitted
# away when a row lacks it (a word in every row so far, a one-hot level every row had).
VARIED_BY = 10


@numba.njit(cache=True)
def lookup_table(slots):
    """An open-addressing table from slot to position in ``slots``: ``(keys, positions)`` of a
    power-of-two size at least sixteen times the slots', so that the many slots that are not
    centred are turned away after about one probe."""
    size = 8
    while size < 16 * slots.shape[0]:
        size *= 2
    keys = np.full(size, -1, dtype=np.int64)
    positions = np.empty(size, dtype=np.int64)
    for where in range(slots.shape[0]):
        h = (slots[where] * 2654435761) & (size - 1)
        while keys[h] != -1:
            h = (h + 1) & (size - 1)
        keys[h] = slots[where]
        positions[h] = where
    return keys, positions


@numba.njit(cache=True, inline="always")
def centred(x, mean):
    """``x - mean``, but exactly 0 where that is rounding: a constant column's centred values
    would otherwise be noise of 1e-16 that a normalising step scales up to unit size.

    >>> centred(5.0, 2.0), centred(0.1 + 0.2, 0.3)
    (3.0, 0.0)
    """
    difference = x - mean
    return 0.0 if abs(difference) <= CANCELLED * max(abs(x), abs(mean)) else difference


@numba.njit(cache=True)
def centre_rows(
    indptr,
    indices,
    values,
    row,
    stop,
    keys,
    table,
    sums,
    squares,
    magnitudes,
    count,
    out,
    positions,
    seen,
    first_raw,
    raw_rows,
    pause_at,
):
    """Centre rows ``row, row + 1, ...`` of a CSR batch into ``out`` until a row lacks a centred slot.

    ``keys`` and ``table`` find a slot's position among the centred slots
    (:func:`lookup_table`); ``sums`` are their sums over the ``count[0]``
    examples counted so far, and each centred row adds to both (and its values'
    squares to ``squares``, and raises ``magnitudes``, the largest raw |x| of
    each slot, to its values). The first
    occurrence of a centred slot in a row becomes ``x - mean`` (the mean
    including this row), every other value is copied; with ``first_raw`` the
    first row counted keeps its values (see :meth:`Centring.segments`).
    Returns the first row that lacks a centred slot (not counted, not
    written), or ``stop``. ``positions`` (one per value) and ``seen`` (one per
    centred slot, -1 at first) are scratch.
    """
    wanted = sums.shape[0]
    mask = keys.shape[0] - 1
    for i in range(row, stop):
        found = 0
        occurrences = 0
        for k in range(indptr[i], indptr[i + 1]):
            # The table's probe, written out: numba pays ~15 ns per array passed to a helper.
            slot = indices[k]
            h = (slot * 2654435761) & mask
            where = -1
            while keys[h] != -1:
                if keys[h] == slot:
                    where = table[h]
                    break
                h = (h + 1) & mask
            positions[k] = where
            if where >= 0:
                occurrences += 1
                if seen[where] != 2 * i:
                    seen[where] = 2 * i
                    found += 1
        if found < wanted:
            return i
        count[0] += 1.0
        keep = (first_raw and count[0] == 1.0) or count[0] <= raw_rows
        if occurrences == found and not keep:
            # Each centred slot once (the rule): add to its sum and centre it in one loop.
            inverse = 1.0 / count[0]
            for k in range(indptr[i], indptr[i + 1]):
                where = positions[k]
                x = values[k]
                if where >= 0:
                    total = sums[where] + x
                    sums[where] = total
                    squares[where] += x * x
                    magnitudes[where] = max(magnitudes[where], abs(x))
                    x = centred(x, total * inverse)
                out[k] = x
            if count[0] == pause_at:
                return i + 1  # (the last raw row)
            continue
        for k in range(indptr[i], indptr[i + 1]):
            if positions[k] >= 0:
                sums[positions[k]] += values[k]
                squares[positions[k]] += values[k] * values[k]
                magnitudes[positions[k]] = max(magnitudes[positions[k]], abs(values[k]))
        for k in range(indptr[i], indptr[i + 1]):
            where = positions[k]
            if where >= 0 and seen[where] != 2 * i + 1 and not keep:
                seen[where] = 2 * i + 1
                out[k] = centred(values[k], sums[where] / count[0])
            else:
                out[k] = values[k]
        if count[0] == pause_at:
            return i + 1  # the last raw row: the caller moves the weights into centred form
    return stop


class Centring:
    """Which slots a learner centres and their running sums (see the module docstring).

    ``started`` is False until the first example names the candidates; a
    learner that must not centre (no bias to fold into, or weights that came
    from elsewhere) starts with ``started=True`` and no slots.
    """

    def __init__(
        self,
        slots: np.ndarray,
        sums: np.ndarray,
        count: float,
        started: bool,
        squares: np.ndarray | None = None,
        magnitudes: np.ndarray | None = None,
        raw_rows: int = 0,
    ):
        self.raw_rows = int(raw_rows)
        self.slots = np.array(slots, dtype=np.int64)  # copies: learning adds to the sums in place
        self.sums = np.array(sums, dtype=np.float64)
        self.count = float(count)
        self.started = bool(started)
        # Sums of squares (the spread, for the refit of a drop) and largest raw |x| (the scale a
        # dropped slot's values have) of the centred slots. A state saved before they were kept:
        # no spread (a drop then forgets the weight) and |mean|, a lower bound of the magnitude.
        self.squares = np.zeros_like(self.sums) if squares is None else np.array(squares, dtype=np.float64)
        self.magnitudes = np.abs(self.means()) if magnitudes is None else np.array(magnitudes, dtype=np.float64)

    @classmethod
    def empty(cls, raw_rows: int = 0) -> Centring:
        """Not started: the next example names the candidates."""
        return cls(np.zeros(0, np.int64), np.zeros(0), 0.0, False, raw_rows=raw_rows)

    @classmethod
    def off(cls) -> Centring:
        """Centres nothing, ever."""
        return cls(np.zeros(0, np.int64), np.zeros(0), 0.0, True)

    @property
    def active(self) -> bool:
        """Whether any slot is (or may become) centred."""
        return not self.started or len(self.slots) > 0

    def means(self) -> np.ndarray:
        """The centred slots' means (0 before any example is counted)."""
        return self.sums / self.count if self.count > 0 else np.zeros_like(self.sums)

    @property
    def centring(self) -> bool:
        """Whether the candidates' values are centred yet (after the first ``raw_rows`` examples)."""
        return self.count >= self.raw_rows and self.count > 0

    def centres(self) -> np.ndarray:
        """What the learner subtracts from each candidate's values: its mean once centring, else 0."""
        return self.means() if self.centring else np.zeros_like(self.sums)

    def bias_offset(self, weights: np.ndarray, which: np.ndarray | None = None) -> np.ndarray:
        """``sum_j w_j * mean_j`` over the centred slots (those of the mask ``which``), per output:
        what the bias of the uncentred model lacks (``b' = b - offset``). ``weights`` has one row
        per slot."""
        which = np.ones(len(self.slots), dtype=bool) if which is None else which
        if not which.any():
            return np.zeros(weights.shape[1:])
        return np.tensordot(self.centres()[which], weights[self.slots[which]], axes=1)

    def segments(
        self,
        batch: ExampleBatch,
        raw: np.ndarray,
        *,
        first_raw: bool = False,
        before_fold: Callable[[np.ndarray], None] | None = None,
        feature_scale: np.ndarray | None = None,
        on_centre: Callable[[np.ndarray], None] | None = None,
        before_centre: Callable[[int], None] | None = None,
    ) -> Iterator[tuple[int, int, np.ndarray]]:
        """Split ``batch`` into runs of rows ``(start, stop, values)`` to learn in turn, with the
        centred values. Between two runs (after the caller learned the first) the slots the next
        row lacks stop being centred and their terms are folded into the bias row ``raw[0]``.

        The first example counted is all means: its centred values are 0. ``first_raw`` has it
        learned on its raw values instead, for GSA: there, the bias alone would make its x . x
        (and so its greedy step, about 1 / x . x) far larger than any later one, and the mean
        step would carry it. AdaGrad is better off with the zeros: raw first values would set
        each feature's normalising scale to a magnitude far above its centred values'.

        ``before_fold`` and ``feature_scale`` are passed on to :meth:`drop`. ``before_centre(stop)`` is
        called as the raw rows end, after the caller learned the batch's rows up to ``stop`` and
        before anything is centred (a learner per key makes its uncentred twin there).
        """
        n = len(batch)
        if not self.started:
            first = batch.indices[batch.indptr[0] : batch.indptr[1]]
            self.slots = np.unique(first.astype(np.int64))
            self.slots = self.slots[self.slots != 0]  # slot 0 is the bias
            self.sums = np.zeros(len(self.slots))
            self.squares = np.zeros(len(self.slots))
            self.magnitudes = np.zeros(len(self.slots))
            self.started = True
        if not len(self.slots):
            yield 0, n, batch.values
            return
        out = np.empty_like(batch.values)
        positions = np.empty(len(batch.values), dtype=np.int64)
        count = np.array([self.count])
        row = 0
        while row < n:
            if not len(self.slots):
                out[batch.indptr[row] :] = batch.values[batch.indptr[row] :]
                yield row, n, out
                break
            seen = np.full(len(self.slots), -1, dtype=np.int64)
            keys, table = lookup_table(self.slots)
            counted_before = self.count
            pause_at = self.raw_rows if self.count < self.raw_rows else -1
            stop = centre_rows(
                batch.indptr,
                batch.indices,
                batch.values,
                row,
                n,
                keys,
                table,
                self.sums,
                self.squares,
                self.magnitudes,
                count,
                out,
                positions,
                seen,
                first_raw,
                float(self.raw_rows),
                float(pause_at),
            )
            self.count = float(count[0])
            if stop > row:
                yield row, stop, out
            if counted_before < self.raw_rows <= self.count:
                if before_centre is not None:
                    before_centre(stop)
                self._start_centring(raw, before_fold, on_centre)
            if stop < n:  # (a row that lacks a centred slot, or the end of the raw rows)
                lacking = ~np.isin(self.slots, batch.indices[batch.indptr[stop] : batch.indptr[stop + 1]])
                if lacking.any():
                    self.drop(lacking, raw, before_fold, feature_scale)
            row = stop
        # At the end of a batch once VARIED_BY examples were counted: slots whose values were all equal.
        if len(self.slots) and self.centring and self.count >= VARIED_BY:
            varied = self._varied()
            if not varied.all():
                self.drop(~varied, raw, before_fold, feature_scale)

    def _start_centring(self, raw, before_fold, on_centre) -> None:
        """After the raw rows: the same function in centred form (``b + w . mean`` the bias), for the
        candidates whose values varied. One whose values were all equal (a word in every row so far,
        a constant column) has no spread to condition, and centred it would learn nothing until it
        varies (its values all 0), then fold its weight away when an example lacks it: it stays raw."""
        self._keep(self._varied())
        if not len(self.slots):
            return
        if before_fold is not None:
            before_fold(np.append(self.slots, 0))
        raw[0] += np.tensordot(self.means(), raw[self.slots], axes=1)
        if on_centre is not None:
            on_centre(self.slots)

    def _varied(self) -> np.ndarray:
        """Which candidates' values have not all been equal (a spread beyond rounding)."""
        means = self.means()
        return self.squares / self.count - means * means > CANCELLED * means * means

    def kept_shares(self, which: np.ndarray) -> np.ndarray:
        """The share of its weight the least-squares refit of :meth:`fold_dropped` keeps for each
        slot of the mask ``which``: ``(n + 1) s^2 / ((n + 1) s^2 + mean^2)`` over the ``n`` examples
        counted, with ``s^2`` the variance of the slot's values."""
        if self.count <= 0:
            return np.zeros(int(np.count_nonzero(which)))
        means = self.sums[which] / self.count
        variances = np.maximum(self.squares[which] / self.count - means * means, 0.0)
        spread = (self.count + 1.0) * variances
        total = spread + means * means
        return np.divide(spread, total, out=np.zeros_like(spread), where=total > 0.0)

    def fold_dropped(
        self,
        which: np.ndarray,
        weights: np.ndarray,
        feature_scale: np.ndarray | None = None,
        new_scale: np.ndarray | None = None,
    ) -> None:
        """Put the slots of the mask ``which`` into uncentred form in ``weights`` (rows per slot, in
        place), as they stop being centred: an example lacks them.

        The exact fold ``b -= w * mean`` keeps the function, and with it its straight extrapolation
        to the example that lacks the slot: raw, its value is 0 (what sparse formats write for a
        zero, or a missing value), ``|mean|`` from the slot's mean. Where that is many spreads of
        the slot's values, the weight says little about it, and a normalising learner's weight,
        learned per unit of a spread that a few nearly equal readings make tiny, is large: the
        exact fold put many units into the bias of every later example (issue 22: a bias of -34
        after three rows of values in (0, 1)). So, two steps:

        * reach: a normalising learner (``feature_scale``, its largest |x| per slot, the scale
          ``N`` the weight was learned at) scales the weight by ``N / |mean|`` where the mean is
          further than ``N`` from 0, so that the example lacking the slot moves by no more than the
          slot ever moved an example that had it (``|w| N``), as its steps clip a value beyond its
          feature's known scale (``kernels.within_scale``); learners that do not normalise (their
          steps grow with the centred values, so their weights never outgrow the data) skip it;
        * least squares: the weight ``w'`` and the bias are the fit of that function over the
          ``n`` examples counted (the slot present, with its mean and variance ``s^2``) and the
          one lacking it, taken at the centred bias (the slot's term 0, as at its mean):
          ``w' = w (n + 1) s^2 / ((n + 1) s^2 + mean^2)`` and ``b' = b - w' mean n / (n + 1)``.

        A slot whose values spread about a mean of their own size, seen in many examples, keeps
        most of its weight, and the fold is nearly the exact one; a slot of nearly equal readings,
        or seen in few examples, forgets most of it, and learning goes on for it from raw values.
        ``new_scale`` (when given) gets each slot's largest raw |x|: its values are raw from now
        on, and a normalising step must not rescale the folded weight at the next one as if it had
        been learned at that scale.
        """
        if not which.any() or not self.centring:  # (raw rows: the weights are raw already)
            return
        slots = self.slots[which]
        means = self.means()[which]
        shares = self.kept_shares(which)
        if feature_scale is not None and len(feature_scale):
            learned = feature_scale[slots]
            distance = np.abs(means)
            shares *= np.divide(learned, distance, out=np.ones_like(distance), where=distance > learned)
            if new_scale is not None:
                new_scale[slots] = np.maximum(new_scale[slots], self.magnitudes[which])
        weights[slots] *= shares.reshape((-1,) + (1,) * (weights.ndim - 1))
        present = self.count / (self.count + 1.0)
        weights[0] -= np.tensordot(means * present, weights[slots], axes=1)

    def drop(
        self,
        which: np.ndarray,
        raw: np.ndarray,
        before_fold: Callable[[np.ndarray], None] | None = None,
        feature_scale: np.ndarray | None = None,
    ) -> None:
        """Stop centring the slots selected by the mask ``which``, folding their terms into ``raw[0]``
        (see :meth:`fold_dropped`; ``feature_scale``: a normalising learner's scales, None for the
        others).

        ``before_fold(rows)`` first makes ``raw[rows]`` (those slots and the bias) the weights in
        force, for a learner whose rows hold something else (the cumulative penalty's sums).
        """
        if before_fold is not None:
            before_fold(np.append(self.slots[which], 0))
        self.fold_dropped(which, raw, feature_scale, feature_scale)
        self._keep(~which)

    def relabelled(self, mapping: np.ndarray) -> Centring:
        """This centring with each slot ``s`` renamed ``mapping[s]`` (a sparse state's rows moving:
        see polybeam.learners.slot_table), kept in slot order."""
        slots = np.asarray(mapping, dtype=np.int64)[self.slots] if len(self.slots) else self.slots
        order = np.argsort(slots, kind="stable")
        return Centring(
            slots[order],
            self.sums[order],
            self.count,
            self.started,
            self.squares[order],
            self.magnitudes[order],
            self.raw_rows,
        )

    def _keep(self, which: np.ndarray) -> None:
        self.slots = self.slots[which]
        self.sums = self.sums[which]
        self.squares = self.squares[which]
        self.magnitudes = self.magnitudes[which]

    def to_state(self) -> dict:
        return {
            "slots": self.slots,
            "sums": self.sums,
            "count": self.count,
            "started": self.started,
            "squares": self.squares,
            "magnitudes": self.magnitudes,
            "raw_rows": self.raw_rows,
        }

    @classmethod
    def from_state(cls, state: dict | None) -> Centring:
        """From :meth:`to_state`; a state saved before centring existed centres nothing."""
        if state is None:
            return cls.off()
        return cls(
            state["slots"],
            state["sums"],
            state["count"],
            state["started"],
            state.get("squares"),
            state.get("magnitudes"),
            state.get("raw_rows", 0),  # (saved before raw rows: centred from the first)
        )

    @classmethod
    def merged(cls, centrings: list[Centring]) -> Centring:
        """The slots every started centring centres, with their sums, sums of squares and counts
        added (the means weighted by examples) and their largest magnitudes; not started if none
        has started."""
        started = [c for c in centrings if c.started]
        if not started:
            return cls.empty(centrings[0].raw_rows if centrings else 0)
        slots = started[0].slots
        for other in started[1:]:
            slots = np.intersect1d(slots, other.slots)
        sums, squares, magnitudes = np.zeros(len(slots)), np.zeros(len(slots)), np.zeros(len(slots))
        count = 0.0
        for other in started:
            where = np.searchsorted(other.slots, slots)
            sums += other.sums[where]
            squares += other.squares[where]
            magnitudes = np.maximum(magnitudes, other.magnitudes[where])
            count += other.count
        return cls(slots, sums, count, True, squares, magnitudes, started[0].raw_rows)
