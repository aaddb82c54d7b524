"""Vowpal Wabbit text: ``[label [importance]] ['tag]|ns[:scale] name[:value] ... |ns2 ...``.

Features hash exactly as Vowpal Wabbit hashes them (``--hash strings``): a
feature ``name`` in namespace ``ns`` lands in
``hash_token(name, hash_token(ns, seed)) & (2**bits - 1)``, and in the default
namespace (``| name``) in ``hash_token(name, seed)``; see
:mod:`polybeam.learners.hashing`. The tests check this against the
``vowpalwabbit`` package.

The part before the first ``|`` follows VW's rules: its last token is the tag
when it starts with ``'`` or touches the ``|`` (``1 abc|f x`` has tag ``abc``);
what remains is the label and an optional importance weight (finite, >= 0). A
line without a label gets a NaN label, which prediction (``labels="any"``)
accepts and training rejects as "missing label". ``:scale`` after a namespace
name multiplies its values; features with value 0 are dropped.

Stricter than VW, which warns and guesses: lines without any ``|``, a third
label token (VW's initial prediction), anonymous features (``:2`` without a
name), unparsable or non-finite numbers become dead letters.

VW's multiclass labels are the numbers 1 ... K. As an extension, a format with
``label_names`` also reads a label token that is one of the names as its class
(the i-th name is class i + 1), so ``dog |f a`` and ``2 |f a`` mean the same
with ``label_names=("cat", "dog")``; see :mod:`polybeam.formats.classes`.

Examples
--------
>>> fmt = VWFormat(bits=18, feature_names=True)
>>> parsed = fmt.parse(b"1 2 'first|f a b:0.5 | c\\n|f a\\n")
>>> parsed.batch.labels.tolist(), parsed.batch.weights.tolist(), parsed.batch.tags.tolist()
([1.0], [2.0], ['first'])
>>> parsed.batch.row(0)
(array([ 14355, 146788, 185951], dtype=int32), array([1. , 0.5, 1. ]))
>>> bytes(parsed.batch.namespaces)
b'ff '
>>> parsed.batch.names[14355], parsed.batch.names[185951]
('f^a', 'c')
>>> parsed.dead_letters[0].reason
'missing label'
>>> named = VWFormat(labels="multiclass", label_names=("cat", "dog")).parse(b"dog |f a\\n1 |f b\\ncow |f c\\n")
>>> named.batch.labels.tolist(), named.dead_letters[0].reason
([2.0, 1.0], "unknown class label 'cow'; known classes are cat, dog")
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numba
import numpy as np

from polybeam.formats.classes import NO_CLASS, find_class
from polybeam.formats.keys import key_codes
from polybeam.formats.numbers import scan_number
from polybeam.formats.pointers import array_pointer, byte_pointer
from polybeam.formats.records import ParsedBlock
from polybeam.formats.settings import HashedFormat
from polybeam.formats.text import (
    EXAMPLE,
    FIRST_ERROR,
    HASH,
    NEWLINE,
    SKIPPED,
    LineBlock,
    as_bytes_array,
    check_position,
    count_lines,
    finish_block,
    first_occurrences,
    is_blank,
    line_stop,
    record_lines,
    skip_blanks,
    token_text,
)
from polybeam.learners import kernel_cache  # noqa: F401  (first: where numba caches the kernels below)
from polybeam.learners.batch import ExampleBatch
from polybeam.learners.hashing import hash_token, namespace_seed, slot_mask
from polybeam.learners.values import NON_FINITE_REASON, TOO_LARGE_REASON, learnable

BAR = 124
COLON = 58
QUOTE = 39
DEFAULT_NAMESPACE = 32  # VW keys the default namespace on b" "

NO_BAR = FIRST_ERROR
BAD_LABEL = FIRST_ERROR + 1
BAD_WEIGHT = FIRST_ERROR + 2
INVALID_WEIGHT = FIRST_ERROR + 3
INITIAL_PREDICTION = FIRST_ERROR + 4
TOO_MANY_TOKENS = FIRST_ERROR + 5
MISPLACED_TAG = FIRST_ERROR + 6
UNNAMED_NAMESPACE = FIRST_ERROR + 7
BAD_SCALE = FIRST_ERROR + 8
NON_FINITE_SCALE = FIRST_ERROR + 9
UNNAMED_FEATURE = FIRST_ERROR + 10
BAD_VALUE = FIRST_ERROR + 11
NON_FINITE_VALUE = FIRST_ERROR + 12
UNKNOWN_CLASS = FIRST_ERROR + 13  # its reason names the classes, so the format writes it
TOO_LARGE_VALUE = FIRST_ERROR + 14

# The reasons quoting the offending token say so with a trailing ": ".
REASONS = {
    NO_BAR: "no '|': VW features follow a '|' (use '|' alone for an example without features)",
    BAD_LABEL: "label is not a number: ",
    BAD_WEIGHT: "importance weight is not a number: ",
    INVALID_WEIGHT: "importance weight must be finite and >= 0, got ",
    INITIAL_PREDICTION: "VW initial prediction (third label token) is not supported",
    TOO_MANY_TOKENS: "too many tokens before the first '|' (expected [label [importance]] ['tag]): ",
    MISPLACED_TAG: "the 'tag must be the last token before the first '|': ",
    UNNAMED_NAMESPACE: "':' right after '|': a namespace scale needs a namespace name",
    BAD_SCALE: "namespace scale is not a number: ",
    NON_FINITE_SCALE: "non-finite namespace scale: ",
    UNNAMED_FEATURE: "feature value without a feature name (VW's anonymous features are not supported): ",
    BAD_VALUE: "feature value is not a number: ",
    NON_FINITE_VALUE: NON_FINITE_REASON,
    TOO_LARGE_VALUE: TOO_LARGE_REASON,
}


@numba.njit(cache=True)
def _ends_name(data, pos, stop):
    # VW names run up to a blank, ':' or '|'.
    return pos == stop or is_blank(data[pos]) or data[pos] == COLON or data[pos] == BAR


@numba.njit(cache=True)
def _ends_number(data, pos, stop):
    return pos == stop or is_blank(data[pos]) or data[pos] == BAR


@numba.njit(cache=True)
def _token_stop(data, pos, stop):
    while pos < stop and not is_blank(data[pos]) and data[pos] != BAR:
        pos += 1
    return pos


@numba.njit(cache=True)
def _is_number(data, start, stop):
    value, end = scan_number(data, start, stop)
    return end == stop and end > start


@numba.njit(cache=True)
def _parse_head(data, start, bar, class_count, class_hashes, class_ids, class_text, class_offsets):
    """The part before the first '|'; a label that is not a number may name a class.

    Returns ``(status, bad start, bad stop, label, weight, has label, tag start, tag stop)``.
    """
    count = 0
    # The first four tokens, the last one and the first starting with a quote
    # are all the rules need.
    t0 = t1 = t2 = t3 = last = quoted = 0
    e0 = e1 = e2 = e3 = last_end = quoted_end = 0
    n_quoted = 0
    pos = skip_blanks(data, start, bar)
    while pos < bar:
        token = pos
        while pos < bar and not is_blank(data[pos]):
            pos += 1
        if count == 0:
            t0, e0 = token, pos
        elif count == 1:
            t1, e1 = token, pos
        elif count == 2:
            t2, e2 = token, pos
        elif count == 3:
            t3, e3 = token, pos
        if data[token] == QUOTE:
            if n_quoted == 0:
                quoted, quoted_end = token, pos
            n_quoted += 1
        last, last_end = token, pos
        count += 1
        pos = skip_blanks(data, pos, bar)
    tag_start = tag_stop = -1
    if count > 0 and (data[last] == QUOTE or last_end == bar):
        tag_start = last + 1 if data[last] == QUOTE else last
        tag_stop = last_end
        count -= 1
        if data[last] == QUOTE:
            n_quoted -= 1
    if n_quoted > 0:
        # A quoted token that is not the tag; the tag, if quoted, is the last quoted token.
        return MISPLACED_TAG, quoted, quoted_end, 0.0, 1.0, False, -1, -1
    if count >= 4:
        return TOO_MANY_TOKENS, t3, e3, 0.0, 1.0, False, -1, -1
    if count == 3:
        if _is_number(data, t2, e2):
            return INITIAL_PREDICTION, t2, e2, 0.0, 1.0, False, -1, -1
        return TOO_MANY_TOKENS, t2, e2, 0.0, 1.0, False, -1, -1
    label = np.nan
    weight = 1.0
    if count >= 1:
        label, end = scan_number(data, t0, e0)
        if end != e0 or end == t0:
            if class_count == 0:
                return BAD_LABEL, t0, e0, 0.0, 1.0, False, -1, -1
            class_id = find_class(data, t0, e0, class_count, class_hashes, class_ids, class_text, class_offsets)
            if class_id == NO_CLASS:
                return UNKNOWN_CLASS, t0, e0, 0.0, 1.0, False, -1, -1
            label = np.float64(class_id)
    if count == 2:
        weight, end = scan_number(data, t1, e1)
        if end != e1 or end == t1:
            return BAD_WEIGHT, t1, e1, 0.0, 1.0, False, -1, -1
        if not (np.isfinite(weight) and weight >= 0.0):
            return INVALID_WEIGHT, t1, e1, 0.0, 1.0, False, -1, -1
    return EXAMPLE, 0, 0, label, weight, count >= 1, tag_start, tag_stop


@numba.njit(cache=True)
def _same_bytes(data, start, stop, name):
    """Whether ``data[start:stop]`` is ``name`` (never for an empty ``name``)."""
    if len(name) == 0 or stop - start != len(name):
        return False
    for k in range(len(name)):
        if data[start + k] != name[k]:
            return False
    return True


@numba.njit(cache=True)
def _parse_features(
    data,
    bar,
    stop,
    mask,
    seed,
    default_seed,
    want_names,
    out_slots,
    out_values,
    out_namespaces,
    name_spans,
    nnz,
    key_name,
):
    """Namespaces and features after the first '|': ``(status, bad start, bad stop, nnz after, key start,
    key stop)``. The first feature of the namespace ``key_name`` (when not empty) is the example's key
    and, like the rest of that namespace, no feature."""
    pos = bar
    key_start = key_stop = -1
    while pos < stop:
        pos += 1  # past the '|'
        scale = 1.0
        namespace_start = namespace_stop = pos
        if pos == stop or is_blank(data[pos]) or data[pos] == BAR:
            namespace_hash = default_seed
            namespace_byte = DEFAULT_NAMESPACE
        elif data[pos] == COLON:
            return UNNAMED_NAMESPACE, pos - 1, _token_stop(data, pos, stop), nnz, key_start, key_stop
        else:
            while not _ends_name(data, pos, stop):
                pos += 1
            namespace_stop = pos
            namespace_hash = hash_token(data, namespace_start, namespace_stop, seed)
            namespace_byte = data[namespace_start]
            if pos < stop and data[pos] == COLON:
                scale, end = scan_number(data, pos + 1, stop)
                if end == pos + 1 or not _ends_number(data, end, stop):
                    return BAD_SCALE, namespace_start, _token_stop(data, pos, stop), nnz, key_start, key_stop
                if not np.isfinite(scale):
                    return NON_FINITE_SCALE, namespace_start, end, nnz, key_start, key_stop
                pos = end
        is_key = _same_bytes(data, namespace_start, namespace_stop, key_name)
        while True:
            pos = skip_blanks(data, pos, stop)
            if pos == stop or data[pos] == BAR:
                break
            name_start = pos
            while not _ends_name(data, pos, stop):
                pos += 1
            name_stop = pos
            if name_stop == name_start:
                return UNNAMED_FEATURE, name_start, _token_stop(data, pos, stop), nnz, key_start, key_stop
            value = 1.0
            if pos < stop and data[pos] == COLON:
                value, end = scan_number(data, pos + 1, stop)
                if end == pos + 1 or not _ends_number(data, end, stop):
                    return BAD_VALUE, name_start, _token_stop(data, pos, stop), nnz, key_start, key_stop
                pos = end
            value *= scale
            if not np.isfinite(value):
                return NON_FINITE_VALUE, name_start, pos, nnz, key_start, key_stop
            if not learnable(value) and not is_key:  # (polybeam.learners.values; scaled by its namespace)
                return TOO_LARGE_VALUE, name_start, pos, nnz, key_start, key_stop
            if is_key:
                if key_start < 0:
                    key_start, key_stop = name_start, name_stop
            elif value != 0.0:
                out_slots[nnz] = hash_token(data, name_start, name_stop, namespace_hash) & mask
                out_values[nnz] = value
                out_namespaces[nnz] = namespace_byte
                if want_names:
                    name_spans[nnz, 0] = namespace_start
                    name_spans[nnz, 1] = namespace_stop
                    name_spans[nnz, 2] = name_start
                    name_spans[nnz, 3] = name_stop
                nnz += 1
    return EXAMPLE, 0, 0, nnz, key_start, key_stop


# nogil: Beam runs several bundles per worker process in threads.
@numba.njit(cache=True, nogil=True)
def scan_vw(data, mask, seed, default_seed, want_names, class_hashes, class_ids, class_text, class_offsets, key_name):
    """Parse a block of VW lines (``data`` a uint8 array) in one pass.

    The ``class_*`` arrays are the format's :class:`~polybeam.formats.classes.ClassNames`
    (empty without class names); ``key_name`` the key namespace's name (empty: none).

    Returns per-line ``(status, starts, stops, bad_starts, bad_stops)``, per-example
    ``(example_lines, labels, weights, has_label, tag_spans, key_spans, indptr)`` and
    per-feature ``(slots, values, namespaces, name_spans)``; ``name_spans`` rows
    are (namespace start, stop, name start, stop), filled when ``want_names``.
    """
    n = len(data)
    n_lines = count_lines(data)
    status = np.empty(n_lines, dtype=np.int8)
    starts = np.empty(n_lines, dtype=np.int64)
    stops = np.empty(n_lines, dtype=np.int64)
    bad_starts = np.zeros(n_lines, dtype=np.int64)
    bad_stops = np.zeros(n_lines, dtype=np.int64)
    example_lines = np.empty(n_lines, dtype=np.int64)
    labels = np.empty(n_lines, dtype=np.float64)
    weights = np.empty(n_lines, dtype=np.float64)
    has_label = np.empty(n_lines, dtype=np.bool_)
    tag_spans = np.empty((n_lines, 2), dtype=np.int64)
    key_spans = np.empty((n_lines, 2), dtype=np.int64)
    indptr = np.empty(n_lines + 1, dtype=np.int64)
    indptr[0] = 0
    # Every feature takes at least one name byte and a separator.
    capacity = n // 2 + 1
    slots = np.empty(capacity, dtype=np.int32)
    values = np.empty(capacity, dtype=np.float64)
    namespaces = np.empty(capacity, dtype=np.uint8)
    name_spans = np.empty((capacity if want_names else 0, 4), dtype=np.int64)
    text = byte_pointer(data)
    # Pointers, so that handing the class names to the per-line helper costs no reference counting.
    class_count = len(class_hashes)
    hashes_pointer = array_pointer(class_hashes)
    ids_pointer = array_pointer(class_ids)
    names_pointer = array_pointer(class_text)
    offsets_pointer = array_pointer(class_offsets)
    n_examples = 0
    nnz = 0
    pos = 0
    for line in range(n_lines):
        start = pos
        stop = line_stop(text, pos, n)
        pos = stop + 1
        starts[line] = start
        stops[line] = stop
        first = skip_blanks(text, start, stop)
        if first == stop or text[first] == HASH:
            status[line] = SKIPPED
            continue
        bar = first
        while bar < stop and text[bar] != BAR:
            bar += 1
        if bar == stop:
            status[line] = NO_BAR
            bad_starts[line] = first
            bad_stops[line] = stop
            continue
        code, bad_start, bad_stop, label, weight, labelled, tag_start, tag_stop = _parse_head(
            text, first, bar, class_count, hashes_pointer, ids_pointer, names_pointer, offsets_pointer
        )
        key_start = key_stop = -1
        if code == EXAMPLE:
            code, bad_start, bad_stop, line_nnz, key_start, key_stop = _parse_features(
                text,
                bar,
                stop,
                mask,
                seed,
                default_seed,
                want_names,
                slots,
                values,
                namespaces,
                name_spans,
                nnz,
                key_name,
            )
        status[line] = code
        if code != EXAMPLE:
            bad_starts[line] = bad_start
            bad_stops[line] = bad_stop
            continue
        example_lines[n_examples] = line
        labels[n_examples] = label
        weights[n_examples] = weight
        has_label[n_examples] = labelled
        tag_spans[n_examples, 0] = tag_start
        tag_spans[n_examples, 1] = tag_stop
        key_spans[n_examples, 0] = key_start
        key_spans[n_examples, 1] = key_stop
        nnz = line_nnz
        n_examples += 1
        indptr[n_examples] = nnz
    return (
        status,
        starts,
        stops,
        bad_starts,
        bad_stops,
        example_lines[:n_examples].copy(),
        labels[:n_examples].copy(),
        weights[:n_examples].copy(),
        has_label[:n_examples].copy(),
        tag_spans[:n_examples].copy(),
        key_spans[:n_examples].copy(),
        indptr[: n_examples + 1].copy(),
        slots[:nnz].copy(),
        values[:nnz].copy(),
        namespaces[:nnz].copy(),
        name_spans[: (nnz if want_names else 0)].copy(),
    )


@numba.njit(cache=True)
def _join_names(data, name_spans):
    """``ns^name`` (or ``name``) for each row of ``name_spans``, joined by newlines.

    A newline cannot occur inside a line, so splitting the decoded text on it
    gives the names back.
    """
    size = 0
    for i in range(len(name_spans)):
        ns_length = name_spans[i, 1] - name_spans[i, 0]
        size += ns_length + (1 if ns_length > 0 else 0) + name_spans[i, 3] - name_spans[i, 2] + 1
    out = np.empty(max(size - 1, 0), dtype=np.uint8)
    pos = 0
    for i in range(len(name_spans)):
        if i > 0:
            out[pos] = NEWLINE
            pos += 1
        if name_spans[i, 1] > name_spans[i, 0]:
            for j in range(name_spans[i, 0], name_spans[i, 1]):
                out[pos] = data[j]
                pos += 1
            out[pos] = 94  # '^'
            pos += 1
        for j in range(name_spans[i, 2], name_spans[i, 3]):
            out[pos] = data[j]
            pos += 1
    return out


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


@dataclass(frozen=True)
class VWFormat(HashedFormat):
    """Parse Vowpal Wabbit text blocks into example batches.

    Parameters
    ----------
    bits : int
        The batch's hashed feature space has ``2**bits`` slots (VW's ``-b``).
    seed : int
        Hash seed (VW's ``--hash_seed``).
    labels : {"real", "binary", "multiclass", "any"}
        Which labels are acceptable; others become dead letters. ``"any"``
        also accepts lines without a label, for prediction.
    classes : int
        With ``labels="multiclass"``, labels outside 1 ... ``classes`` are dead
        letters (0: no bound, or the number of ``label_names``).
    label_names : tuple of str
        Class names a label token may be instead of its class number; a name
        cannot hold blanks or ``|``, nor start with ``'`` (a tag) or ``#`` (a comment).
    feature_names : bool
        Fill ``batch.names`` with ``"ns^name"`` (``"name"`` in the default
        namespace) for every slot in the block, first name winning.
    key_namespace : str, optional
        The namespace whose (first) feature names each example's key
        (``batch.key_codes``; ``--key namespace:NAME``). It is not a feature:
        per-key models learn from the other namespaces. An example without
        that namespace has the empty key.
    """

    name: ClassVar[str] = "vw"
    header_lines: ClassVar[int] = 0

    feature_names: bool = False
    key_namespace: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.key_namespace is not None and (not self.key_namespace or any(c in self.key_namespace for c in " \t|:")):
            raise ValueError(
                f"a key namespace is a non-empty name without blanks, '|' or ':', got {self.key_namespace!r}"
            )
        for name in self.label_names:
            if any(c in name for c in " \t\r\v\f|") or name[0] in "'#":
                raise ValueError(
                    f"VW label names cannot hold blanks or '|', nor start with \"'\" (a tag) or '#' (a comment), "
                    f"got {name!r}"
                )

    def label_texts(self, data: bytes, header: bytes | None = None) -> list[str]:
        """The label tokens of the records in ``data`` as written (a launcher's sample): the first token before
        the first ``|``, unless it is the tag.

        >>> VWFormat().label_texts(b"dog 2 'a|f x\\n|f y\\ncat|f z\\n1 |f z\\n")
        ['dog', '1']
        """
        texts = []
        for line in record_lines(data):
            before, bar, _ = line.partition(b"|")
            if not bar:
                continue
            tokens = before.split()
            if tokens and (tokens[-1].startswith(b"'") or not before[-1:].isspace()):
                tokens = tokens[:-1]  # the tag
            if tokens:
                texts.append(tokens[0].decode("utf-8", "replace"))
        return texts

    def parse(
        self,
        data: bytes,
        *,
        source: str = "<memory>",
        offset: int = 0,
        first_line: int | None = 1,
        header: bytes | None = None,
    ) -> ParsedBlock:
        """Parse a block of complete lines starting at byte ``offset`` (line ``first_line``) of ``source``."""
        check_position(offset, first_line)
        data = bytes(data)
        (
            status,
            starts,
            stops,
            bad_starts,
            bad_stops,
            example_lines,
            labels,
            weights,
            has_label,
            tag_spans,
            key_spans,
            indptr,
            slots,
            values,
            namespaces,
            name_spans,
        ) = scan_vw(
            as_bytes_array(data),
            np.int64(slot_mask(self.bits)),
            np.int64(self.seed),
            np.int64(namespace_seed(b"", self.seed)),
            bool(self.feature_names),
            *self.class_names.arrays,
            np.frombuffer((self.key_namespace or "").encode("utf-8"), dtype=np.uint8),
        )
        block = LineBlock(data, starts, stops, source, offset, first_line)
        batch = ExampleBatch(
            labels=labels,
            weights=weights,
            indptr=indptr,
            indices=slots,
            values=values,
            bits=self.bits,
            namespaces=namespaces,
            row_ids=offset + starts[example_lines],
            source=source,
            tags=self._tags(data, tag_spans),
            **self._keys(data, key_spans),
        )

        def reason_of(line: int, code: int) -> str:
            if code == UNKNOWN_CLASS:
                # (a token may be 100 MB: the reason quotes its start only)
                stop = min(bad_stops[line], bad_starts[line] + 4096)
                return self.class_names.unknown_reason(_decode(data[bad_starts[line] : stop]))
            reason = REASONS[code]
            if reason.endswith(" "):
                reason += token_text(data, bad_starts[line], bad_stops[line])
            return reason

        def names(features: np.ndarray | None) -> dict[int, str]:
            if features is None:
                return self._names(data, slots, name_spans, self.bits)
            return self._names(data, slots[features], name_spans[features], self.bits)

        return finish_block(
            block,
            status,
            reason_of,
            batch,
            labels=self.labels,
            classes=self.classes,
            label_names=self.label_names,
            refused_codes={UNKNOWN_CLASS: None},
            has_label=has_label,
            names=names if self.feature_names else None,
        )

    def _keys(self, data: bytes, key_spans: np.ndarray) -> dict:
        if self.key_namespace is None:
            return {}
        codes, names = key_codes(as_bytes_array(data), key_spans)
        return {"key_codes": codes, "key_names": names}

    @staticmethod
    def _tags(data: bytes, tag_spans: np.ndarray) -> np.ndarray | None:
        tagged = np.flatnonzero(tag_spans[:, 0] >= 0)
        if len(tagged) == 0:
            return None
        tags = np.full(len(tag_spans), None, dtype=object)
        for i in tagged:
            tags[i] = _decode(data[tag_spans[i, 0] : tag_spans[i, 1]])
        return tags

    @staticmethod
    def _names(data: bytes, slots: np.ndarray, name_spans: np.ndarray, bits: int) -> dict[int, str]:
        # One pass finds each slot's first feature; only those names are
        # gathered (in numba) and decoded, all at once.
        first = first_occurrences(slots, bits)
        if len(first) == 0:
            return {}
        joined = _join_names(as_bytes_array(data), name_spans[first])
        return dict(zip(slots[first].tolist(), _decode(joined.tobytes()).split("\n")))
