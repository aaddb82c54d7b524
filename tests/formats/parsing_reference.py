"""Slow, plain-Python reference parsers the fast numba parsers are checked against.

They follow the documented rules token by token with ``re``, ``float()`` and
``mmh3`` and share no code with the package, so an agreement is evidence.
Each returns one ``Line`` per line of the block.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field

import mmh3
import numpy as np

from polybeam.learners.values import LARGEST_VALUE, TOO_LARGE_REASON

BLANKS = b" \t\r\x0b\x0c"
BLANK_RUN = re.compile(rb"[ \t\r\x0b\x0c]+")
NUMBER = re.compile(rb"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?|[+-]?(?i:nan|inf|infinity)")


@dataclass
class Line:
    """What a line of a block should become."""

    offset: int  # within the block
    raw: bytes
    kind: str  # "example", "skipped" or "dead"
    reason: str = ""
    label: float = math.nan
    has_label: bool = True
    weight: float = 1.0
    slots: list[int] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    namespaces: list[int] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    tag: str | None = None


def split_lines(data: bytes) -> list[tuple[int, bytes]]:
    """``(offset, line without newline)`` for every line; a last line without newline counts."""
    lines, offset = [], 0
    for piece in data.split(b"\n"):
        lines.append((offset, piece))
        offset += len(piece) + 1
    if data.endswith(b"\n") or data == b"":
        lines.pop()
    return lines


def is_skippable(line: bytes) -> bool:
    stripped = line.lstrip(BLANKS)
    return stripped == b"" or stripped.startswith(b"#")


def ref_number(token: bytes) -> float | None:
    """The number ``token`` spells in the documented grammar, or None."""
    if NUMBER.fullmatch(token) is None:
        return None
    return float(token)


def token_text(raw: bytes, limit: int = 40) -> str:
    text = raw.decode("utf-8", errors="replace")
    return repr(text if len(text) <= limit else text[:limit] + "...")


# -- class names ---------------------------------------------------------------


def ref_class(value: bytes, label_names) -> int:
    """The class ``value`` names (1-based), or 0."""
    for position, name in enumerate(label_names):
        if value == name.encode("utf-8"):
            return position + 1
    return 0


def ref_unknown_class(value: bytes, label_names) -> str:
    """The documented reason for a label that is neither a number nor a name."""

    def cut(text: str) -> str:
        return text if len(text) <= 40 else text[:40] + "..."

    listed = ", ".join(cut(name) for name in label_names[:10])
    if len(label_names) > 10:
        listed += f", ... ({len(label_names)} in all)"
    return f"unknown class label {cut(value.decode('utf-8', errors='replace'))!r}; known classes are {listed}"


# -- hashing -------------------------------------------------------------------


def ref_hash(name: bytes, seed: int) -> int:
    """VW's hashstring: digit-only names (<= 18 digits) are their value plus the seed."""
    name = name.strip(bytes(range(33)))  # VW trims whitespace and control bytes
    if 0 < len(name) <= 18 and name.isdigit():
        return (int(name) + seed) & 0xFFFFFFFF
    return mmh3.hash(name, seed, signed=False)


def ref_libsvm_slot(index: int, bits: int, seed: int) -> int:
    mask = (1 << bits) - 1
    if index <= mask:
        return index
    return mmh3.hash(index.to_bytes(8, "little"), seed, signed=False) & mask


# -- LIBSVM --------------------------------------------------------------------


ZERO_INDEX_REASON = (
    "feature index 0 in a file numbered from 1: the file numbers its features from 0 (as scikit-learn's "
    "dump_svmlight_file writes them); read it as numbered from 0 (--zero-based, zero_based=True)"
)


def ref_libsvm(data: bytes, bits: int = 18, seed: int = 0, zero_based: bool = False) -> list[Line]:
    return [_libsvm_line(offset, raw, bits, seed, zero_based) for offset, raw in split_lines(data)]


def _libsvm_line(offset: int, raw: bytes, bits: int, seed: int, zero_based: bool = False) -> Line:
    if is_skippable(raw):
        return Line(offset, raw, "skipped")
    content = raw.split(b"#", 1)[0]
    tokens = BLANK_RUN.split(content.strip(BLANKS))

    def dead(reason: str, token: bytes | None = None) -> Line:
        return Line(offset, raw, "dead", reason + ("" if token is None else token_text(token)))

    label = ref_number(tokens[0])
    if label is None:
        if b":" in tokens[0]:
            return dead("missing label")
        return dead("label is not a number: ", tokens[0])
    line = Line(offset, raw, "example", label=label)
    features = tokens[1:]
    if features and features[0].startswith(b"qid:"):
        if not re.fullmatch(rb"qid:\d+", features[0]):
            return dead("qid must be a non-negative integer, got ", features[0])
        features = features[1:]
    for token in features:
        match = re.match(rb"(-?)(\d+):", token)
        if match is None:
            return dead("feature must be index:value, got ", token)
        negative, digits = match.group(1), match.group(2)
        if len(digits.lstrip(b"0")) > 18:
            return dead("feature index has more than 18 digits")
        index = int(digits)
        if negative:
            return dead("feature index must be >= 1")
        if index == 0 and not zero_based:
            return dead(ZERO_INDEX_REASON)
        value = ref_number(token[match.end() :])
        if value is None:
            return dead("feature value is not a number: ", token)
        if math.isinf(value):  # (NaN is a missing value: the entry NaN)
            return dead("non-finite feature value: ", token)
        if abs(value) > LARGEST_VALUE:
            return dead(TOO_LARGE_REASON, token)
        if value != 0:
            line.slots.append(ref_libsvm_slot(index + 1 if zero_based else index, bits, seed))
            line.values.append(value)
    return line


# -- VW ------------------------------------------------------------------------


def ref_vw(data: bytes, bits: int = 18, seed: int = 0, label_names=()) -> list[Line]:
    return [_vw_line(offset, raw, bits, seed, tuple(label_names)) for offset, raw in split_lines(data)]


def _vw_line(offset: int, raw: bytes, bits: int, seed: int, label_names: tuple[str, ...]) -> Line:
    if is_skippable(raw):
        return Line(offset, raw, "skipped")

    def dead(reason: str) -> Line:
        return Line(offset, raw, "dead", reason)

    if b"|" not in raw:
        return dead("no '|'")
    head, _, body = raw.partition(b"|")
    tokens = [t for t in BLANK_RUN.split(head.strip(BLANKS)) if t]
    line = Line(offset, raw, "example", has_label=False)
    touches_bar = head != b"" and head[-1] not in BLANKS
    if tokens and (tokens[-1].startswith(b"'") or touches_bar):
        tag = tokens.pop()
        line.tag = (tag[1:] if tag.startswith(b"'") else tag).decode("utf-8", errors="replace")
    if any(t.startswith(b"'") for t in tokens):
        return dead("the 'tag must be the last token before the first '|'")
    if len(tokens) >= 4:
        return dead("too many tokens before the first '|'")
    if len(tokens) == 3:
        if ref_number(tokens[2]) is not None:
            return dead("VW initial prediction (third label token) is not supported")
        return dead("too many tokens before the first '|'")
    if tokens:
        label = ref_number(tokens[0])
        if label is None and label_names:
            label = ref_class(tokens[0], label_names) or None
            if label is None:
                return dead(ref_unknown_class(tokens[0], label_names))
        if label is None:
            return dead("label is not a number")
        line.label, line.has_label = label, True
    if len(tokens) == 2:
        weight = ref_number(tokens[1])
        if weight is None:
            return dead("importance weight is not a number")
        if not (math.isfinite(weight) and weight >= 0):
            return dead("importance weight must be finite and >= 0")
        line.weight = weight
    mask = (1 << bits) - 1
    for segment in body.split(b"|"):
        if segment[:1] == b"" or segment[0] in BLANKS:
            namespace, namespace_hash, scale, rest = b"", mmh3.hash(b"", seed, signed=False), 1.0, segment
        elif segment[:1] == b":":
            return dead("':' right after '|'")
        else:
            head_token = BLANK_RUN.split(segment, 1)
            namespace_token, rest = head_token[0], (head_token[1] if len(head_token) > 1 else b"")
            namespace, colon, scale_text = namespace_token.partition(b":")
            namespace_hash = ref_hash(namespace, seed)
            scale = 1.0
            if colon:
                scale = ref_number(scale_text)
                if scale is None:
                    return dead("namespace scale is not a number")
                if not math.isfinite(scale):
                    return dead("non-finite namespace scale")
        for token in BLANK_RUN.split(rest.strip(BLANKS)):
            if not token:
                continue
            name, colon, value_text = token.partition(b":")
            if not name:
                return dead("feature value without a feature name")
            value = 1.0
            if colon:
                value = ref_number(value_text)
                if value is None:
                    return dead("feature value is not a number")
            value *= scale
            if not math.isfinite(value):
                return dead("non-finite feature value")
            if abs(value) > LARGEST_VALUE:
                return dead(TOO_LARGE_REASON)
            if value != 0:
                line.slots.append(ref_hash(name, namespace_hash) & mask)
                line.values.append(value)
                line.namespaces.append(namespace[0] if namespace else 32)
                text = name.decode("utf-8", errors="replace")
                line.names.append(f"{namespace.decode('utf-8', errors='replace')}^{text}" if namespace else text)
    return line


# -- CSV -----------------------------------------------------------------------


def split_csv(raw: bytes, delimiter: bytes) -> tuple[list[tuple[bytes, bytes, bool]] | None, str]:
    """RFC-4180 fields of one line: ``[(value, raw field, was quoted)]``, or None and why not."""
    padding = bytes(c for c in b" \r\t" if bytes([c]) != delimiter)
    fields, pos, n = [], 0, len(raw)
    while True:
        start = pos
        while pos < n and raw[pos] in padding:
            pos += 1
        if pos < n and raw[pos : pos + 1] == b'"':
            value, pos = bytearray(), pos + 1
            while True:
                if pos >= n:
                    return None, "unbalanced double quote"
                if raw[pos : pos + 1] == b'"':
                    if raw[pos + 1 : pos + 2] == b'"':
                        value += b'"'
                        pos += 2
                        continue
                    break
                value.append(raw[pos])
                pos += 1
            pos += 1
            while pos < n and raw[pos] in padding:
                pos += 1
            if pos < n and raw[pos : pos + 1] != delimiter:
                return None, "text after the closing double quote"
            fields.append((bytes(value), raw[start:pos], True))
        else:
            end = raw.find(delimiter, pos)
            end = n if end < 0 else end
            fields.append((raw[pos:end].rstrip(padding), raw[start:end], False))
            pos = end
        if pos >= n:
            return fields, ""
        pos += 1


# pandas.read_csv's default na_values (without ""), and UCI's "?": written out here, not imported.
REF_NA_VALUES = (
    *("#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN", "<NA>"),
    *("N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null", "?"),
)


def ref_csv(
    data: bytes,
    *,
    names,
    kinds,
    bits=18,
    seed=0,
    delimiter=b",",
    header_first=True,
    label_names=(),
    na_values=REF_NA_VALUES,
) -> list[Line]:
    """``kinds[j]`` is one of "numeric", "categorical", "label", "weight", "ignore", "id".

    A cell whose value (unquoted and trimmed) is empty or one of ``na_values`` is missing; a categorical
    value of nothing but bytes up to the space is missing too, and so is a numeric one, or a NaN. A missing
    numeric value is the entry NaN at the column's slot; a missing category is no entry."""
    mask = (1 << bits) - 1
    missing = {value.encode("utf-8") for value in na_values} | {b""}
    lines = []
    for i, (offset, raw) in enumerate(split_lines(data)):
        first_cell = (
            raw.lstrip(BLANKS).split(delimiter, 1)[0].strip(bytes(c for c in b" \r\t" if bytes([c]) != delimiter))
        )
        if (i == 0 and header_first) or (is_skippable(raw) and first_cell not in missing - {b""}):
            lines.append(Line(offset, raw, "skipped"))  # (a record may start with a missing value: #N/A)
            continue
        fields, problem = split_csv(raw, delimiter)
        if fields is None:
            lines.append(Line(offset, raw, "dead", problem))
            continue
        if len(fields) != len(names):
            lines.append(Line(offset, raw, "dead", f"expected {len(names)} columns, found {len(fields)}"))
            continue
        line = Line(offset, raw, "example", has_label=False)
        for (value, raw_field, quoted), name, kind in zip(fields, names, kinds):
            if kind == "id":  # the example's ID: its text, None when the cell is missing
                blank = value.strip(bytes(range(33))) == b""
                line.tag = None if blank or value in missing else value.decode("utf-8", errors="replace")
                continue
            if kind == "ignore":
                continue
            number = None if (quoted and b'"' in value) else ref_number(value)
            blank = value.strip(bytes(range(33))) == b""
            if kind == "numeric" and (value in missing or blank or (number is not None and math.isnan(number))):
                line.slots.append(ref_hash(name.encode(), mmh3.hash(b"", seed, signed=False)) & mask)
                line.values.append(math.nan)
                line.names.append(name)
                continue
            if value in missing:
                continue
            if kind == "categorical":
                if value.strip(bytes(range(33))) == b"":
                    continue
                line.slots.append(ref_hash(value, ref_hash(name.encode(), seed)) & mask)
                line.values.append(1.0)
                line.names.append(f"{name}={value.decode('utf-8', errors='replace')}")
                continue
            if kind == "numeric":
                if number is None:
                    line = Line(offset, raw, "dead", f"column {name!r}: not a number: {token_text(raw_field)}")
                elif not math.isfinite(number):
                    line = Line(offset, raw, "dead", f"column {name!r}: non-finite value: {token_text(raw_field)}")
                elif abs(number) > LARGEST_VALUE:
                    reason = f"column {name!r}: {TOO_LARGE_REASON}{token_text(raw_field)}"
                    line = Line(offset, raw, "dead", reason)
                elif number != 0:
                    line.slots.append(ref_hash(name.encode(), mmh3.hash(b"", seed, signed=False)) & mask)
                    line.values.append(number)
                    line.names.append(name)
            elif kind == "label":
                if number is None and label_names:
                    number = ref_class(value, label_names) or None
                    if number is None:
                        reason = f"label column {name!r}: {ref_unknown_class(value, label_names)}"
                        line = Line(offset, raw, "dead", reason)
                    else:
                        line.label, line.has_label = number, True
                elif number is None:
                    line = Line(offset, raw, "dead", f"label column {name!r}: not a number: {token_text(raw_field)}")
                else:
                    line.label, line.has_label = number, True
            elif kind == "weight":
                if number is None:
                    line = Line(offset, raw, "dead", f"weight column {name!r}: not a number: {token_text(raw_field)}")
                elif not (math.isfinite(number) and number >= 0):
                    reason = f"weight column {name!r}: importance weight must be finite and >= 0, got "
                    line = Line(offset, raw, "dead", reason + token_text(raw_field))
                else:
                    line.weight = number
            if line.kind == "dead":
                break
        lines.append(line)
    return lines


# -- comparing -------------------------------------------------------------------


def ref_label_text(value: float) -> str:
    """A label as the reasons write it: whole numbers without a point."""
    return str(int(value)) if value == round(value) and abs(value) < 1e16 else repr(float(value))


def ref_classes_described(labels: str, classes: int, label_names) -> str:
    if label_names:
        listed = ", ".join(label_names[:10]) + (f", ... ({len(label_names)} in all)" if len(label_names) > 10 else "")
        return f"the classes are {listed}"
    if labels == "binary":
        return "a binary task takes -1, 0 or +1 (name its two classes to use other labels)"
    return f"the classes are 1 to {classes}" if classes else "class labels are whole numbers >= 1"


def _numeric_names(label_names) -> list[float] | None:
    """The names' values when every name is a number, else None."""
    if not label_names:
        return None
    try:
        return [float(name.strip()) for name in label_names]
    except ValueError:
        return None


def ref_target(line: Line, labels: str, classes: int = 0, label_names=()) -> tuple[float | None, str, bool]:
    """``(target, reason, refused)``: the learner's label of a line's example for task ``labels``, or None with
    the rejection's reason and whether it is a refusal (a label the task cannot take) rather than damage."""
    numbers = _numeric_names(label_names)
    if labels == "any":  # labels are passed along: a numeric name's value is its class number
        if numbers is None or math.isnan(line.label):
            return line.label, "", False
        return (float(numbers.index(line.label) + 1) if line.label in numbers else math.nan), "", False
    if not line.has_label:
        return None, "missing label", False
    value = line.label
    if math.isnan(value):
        return None, "missing label", False
    if not math.isfinite(value):
        return None, "label must be a finite number", False
    if labels == "real":
        return value, "", False
    if numbers is not None:  # every name a number: labels are matched by value
        class_id = numbers.index(value) + 1 if value in numbers else None
    else:
        class_id = value
    count = len(label_names) or classes
    if label_names or labels == "multiclass":
        good = (
            class_id is not None and class_id == round(class_id) and class_id >= 1 and (not count or class_id <= count)
        )
    else:
        good = value in (-1.0, 0.0, 1.0)
    if not good:
        described = ref_classes_described(labels, classes, label_names)
        return None, f"label {ref_label_text(value)} is not a class of this task: {described}", True
    if labels == "binary" and label_names:
        return (-1.0 if class_id == 1 else 1.0), "", False
    return float(class_id), "", False


def labels_ok(line: Line, labels: str, classes: int = 0, label_names=()) -> str:
    """The label rejection a line's example gets for task ``labels`` with ``classes`` classes ("" when accepted)."""
    return ref_target(line, labels, classes, label_names)[1]


def expected_outcome(lines: list[Line], labels: str, classes: int = 0, label_names=()) -> list[Line]:
    """Apply the NUL rule (a line holding a NUL byte is dead, whatever it is) and the
    task's label rules (examples with unacceptable labels turn dead, their labels become targets)."""
    out = []
    for line in lines:
        if b"\x00" in line.raw:
            position = line.raw.index(b"\x00") + 1
            line = Line(
                line.offset,
                line.raw,
                "dead",
                f"NUL byte at position {position} of the line (binary data, or a damaged file?)",
            )
        elif line.kind == "example":
            target, reason, _ = ref_target(line, labels, classes, label_names)
            if reason:
                line = Line(line.offset, line.raw, "dead", reason)
            else:
                line = dataclasses.replace(line, label=target)
        out.append(line)
    return out


def assert_matches(
    parsed,
    lines: list[Line],
    *,
    labels: str,
    source: str,
    offset: int,
    first_line,
    exact_reasons=True,
    classes=0,
    label_names=(),
):
    """Check a ParsedBlock against the reference lines, field by field."""
    lines = expected_outcome(lines, labels, classes, label_names)
    examples = [line for line in lines if line.kind == "example"]
    dead = [line for line in lines if line.kind == "dead"]
    batch = parsed.batch
    assert parsed.records == len(lines)
    assert parsed.skipped == sum(line.kind == "skipped" for line in lines)
    assert len(batch) == len(examples)
    assert len(parsed.dead_letters) == len(dead)
    assert batch.source == source
    assert batch.row_ids.tolist() == [offset + line.offset for line in examples]
    assert batch.indices.dtype.name == "int32" and batch.values.dtype.name == "float64"
    # Numbers beyond the exact fast path may differ from float() by an ulp.
    assert_within_ulps(batch.labels, [line.label for line in examples])
    assert_within_ulps(batch.weights, [line.weight for line in examples])
    assert batch.indptr.tolist() == [0] + list(_cumsum(len(line.slots) for line in examples))
    assert batch.indices.tolist() == [s for line in examples for s in line.slots]
    assert_within_ulps(batch.values, [v for line in examples for v in line.values])
    offsets = {offset + line.offset: i for i, line in enumerate(lines)}
    for letter, line in zip(parsed.dead_letters, dead):
        assert letter.source == source
        assert letter.offset == offset + line.offset
        index = offsets[letter.offset]
        assert letter.line == (None if first_line is None else first_line + index)
        expected_raw = line.raw.decode("utf-8", errors="replace").rstrip("\r\n")
        assert letter.raw == (expected_raw if len(expected_raw) <= 1000 else expected_raw[:1000] + "...")
        if exact_reasons:
            assert same_reason(letter.reason, line.reason), (letter, line)
        else:
            assert letter.reason.startswith(line.reason), (letter.reason, line.reason)
    return examples


_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def same_reason(actual: str, expected: str) -> bool:
    """Whether two dead-letter reasons say the same, a number in them within 2 ulps (a refused value is
    written as parsed: beyond the exact fast path the parser is within an ulp of float()).

    >>> same_reason("label 1.221282659313393e-62 is not", "label 1.2212826593133931e-62 is not")
    True
    >>> same_reason("label 1.5 is not", "label 2.5 is not"), same_reason("label x", "label y")
    (False, False)
    """
    if actual == expected:
        return True
    if _NUMBER.split(actual) != _NUMBER.split(expected):
        return False
    ours, theirs = _NUMBER.findall(actual), _NUMBER.findall(expected)
    if len(ours) != len(theirs):
        return False
    try:
        numbers = np.array([float(x) for x in ours]), np.array([float(x) for x in theirs])
    except ValueError:
        return False
    return bool((ulp_distance(*numbers) <= 2).all())


def _cumsum(lengths):
    total = 0
    for length in lengths:
        total += length
        yield total


def ulp_keys(values) -> np.ndarray:
    """Integers that order doubles, one apart for neighbouring doubles (inf next to the largest)."""
    bits = np.asarray(values, dtype=np.float64).view(np.int64)
    return np.where(bits < 0, -(bits & np.int64(0x7FFFFFFFFFFFFFFF)), bits)


def ulp_distance(actual, expected) -> np.ndarray:
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    both_nan = np.isnan(actual) & np.isnan(expected)
    distance = np.abs(ulp_keys(actual).astype(object) - ulp_keys(expected).astype(object)).astype(float)
    return np.where(both_nan, 0.0, np.where(np.isnan(actual) | np.isnan(expected), np.inf, distance))


def assert_within_ulps(actual, expected, max_ulps: int = 2) -> None:
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    assert actual.shape == expected.shape, (actual, expected)
    if len(actual):
        distance = ulp_distance(actual, expected)
        assert (distance <= max_ulps).all(), (actual[distance > max_ulps], expected[distance > max_ulps])
