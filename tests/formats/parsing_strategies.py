"""Hypothesis strategies for well-formed and broken blocks of input.

Blocks are generated from a hypothesis-controlled ``random.Random``: drawing
every token through hypothesis costs ~60 ms per block, this costs ~0.1 ms, so
the suite can try many more blocks in its time budget. Hypothesis still picks
(and replays) the seeds.
"""

from __future__ import annotations

import random

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

# JIT-compiled code is slow on its first call, so no deadlines; the example
# counts keep the whole parsing suite well under a minute.
# Shrinking a seeded Random barely simplifies a block and can take minutes, so
# failures are reported as found (the test prints the block).
PROPERTY_SETTINGS = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)
FUZZ_SETTINGS = settings(PROPERTY_SETTINGS, max_examples=300)


def strings(alphabet: str, *, min_size: int = 0, max_size: int) -> st.SearchStrategy[str]:
    """Text from ``alphabet`` (drawn as a list: hypothesis's text shrinker trips over mixed alphabets)."""
    return st.lists(st.sampled_from(list(alphabet)), min_size=min_size, max_size=max_size).map("".join)


def from_random(generate, *args, **kwargs) -> st.SearchStrategy:
    """A strategy for ``generate(rnd, *args, **kwargs)`` with a hypothesis-seeded ``rnd``."""
    return st.randoms(use_true_random=False).map(lambda rnd: generate(rnd, *args, **kwargs))


def pick_string(rnd: random.Random, alphabet: str, low: int, high: int) -> str:
    return "".join(rnd.choice(alphabet) for _ in range(rnd.randint(low, high)))


def blanks(rnd: random.Random, low: int = 1, high: int = 3) -> bytes:
    return pick_string(rnd, " \t", low, high).encode()


# -- numbers ----------------------------------------------------------------------


def number_text(rnd: random.Random, *, allow_special: bool = False, feature: bool = False) -> bytes:
    """A number in the documented grammar, including long and extreme ones.

    Without ``allow_special``: no nan/inf words and nothing that overflows. ``feature``: a value a
    learner can take, within polybeam.learners.values' bound (+-3.4e38), as well-formed features are.
    """
    largest = 1e38 if feature else 1e300  # (VW scales a value by its namespace's scale, up to 2 here)
    kinds = ["small", "decimal", "float", "long"] + (["special"] if allow_special else [])
    kind = rnd.choice(kinds)
    if kind == "small":
        return str(rnd.randint(-1000, 1000)).encode()
    if kind == "decimal":
        whole = pick_string(rnd, "0123456789", 0, 6)
        fraction = pick_string(rnd, "0123456789", 0, 6)
        if not whole and not fraction:
            whole = "0"
        text = whole + ("." + fraction if fraction or rnd.random() < 0.3 else "")
        if rnd.random() < 0.4:
            text += rnd.choice("eE") + rnd.choice(["", "-", "+"]) + str(rnd.randint(0, 30))
        return (rnd.choice(["", "-", "+"]) + text).encode()
    if kind == "float":
        value = rnd.choice(
            [rnd.uniform(-1e6, 1e6), rnd.gauss(0, 1), rnd.expovariate(1e-3), rnd.uniform(-1e-300, 1e300)]
        )
        if not abs(value) <= largest:
            value = 1.5  # hypothesis's Random returns edge cases; keep scaled values finite
        return rnd.choice([repr(value), f"{value:.17g}", f"{value:.6e}", f"{value:.3f}"]).encode()
    if kind == "long":
        digits = pick_string(rnd, "0123456789", 16, 40)
        point = rnd.randint(0, len(digits))
        exponent = rnd.randint(-400, 400) if allow_special else rnd.randint(-340, 260 if not feature else 36 - point)
        return f"{digits[:point]}.{digits[point:]}e{exponent}".encode()
    return rnd.choice([b"nan", b"NaN", b"-inf", b"inf", b"Infinity", b"+INF", b"1e400", b"-1e999"])


number_texts = from_random(number_text, allow_special=True)


# -- class names -------------------------------------------------------------------

# None reads as a number; k15599 and k97211 have the same MurmurHash3 (seed 0),
# so a table holding one must still reject the other.
CSV_CLASS_NAMES = [
    "cat",
    "dog",
    "Cat",
    "dark, blue",
    'say "hi"',
    " spaced ",
    "名前",
    "#hash",
    "x|y",
    "'q",
    "a;b",
    "tab\there",
    "nan-ish",
    "1x",
    "k15599",
]
VW_CLASS_NAMES = ["cat", "dog", "Cat", "名前", "a:b", "x-y", "1x", "nan-ish", "é", "k15599", "a,b"]
UNKNOWN_LABELS = ["cow", "ca", "cats", "CAT", "名", "k97211", "x", "dog2"]


def pick_class_names(rnd: random.Random, pool: list[str]) -> tuple[str, ...]:
    """No names half the time, else a few from ``pool``, maybe with a number that is its own class; or
    names that are all numbers (labels then match them by value: 0-based class numbers, 1/2, ...)."""
    if rnd.random() < 0.5:
        return ()
    if rnd.random() < 0.2:
        first, step = rnd.choice([0, 1, -1, 10]), rnd.choice([1, 1, 2])
        return tuple(str(first + i * step) for i in range(rnd.randint(1, 5)))
    names = rnd.sample(pool, rnd.randint(1, 5))
    if rnd.random() < 0.2:
        position = rnd.randrange(len(names))
        names[position] = str(position + 1)
    return tuple(names)


def label_token(rnd: random.Random, label_names: tuple[str, ...], *, unknown: float = 0.1) -> str:
    """A label for a task with ``label_names``: mostly names and class numbers, sometimes neither."""
    draw = rnd.random()
    if draw < unknown:
        return rnd.choice(UNKNOWN_LABELS)
    if draw < 0.6:
        return rnd.choice(label_names)
    if draw < 0.9:
        return str(rnd.randint(0, len(label_names) + 1))
    return number_text(rnd).decode()


def multiclass_options(options: dict, label_names: tuple[str, ...], classes: int) -> dict:
    """``options`` with ``label_names`` and ``classes`` (with names: their count or 0), labels allowing them."""
    multiclass = options["labels"] in ("multiclass", "any")
    if label_names:
        classes = len(label_names) if classes else 0
    elif not multiclass:
        classes = 0
    options = dict(options, label_names=label_names, classes=classes)
    if label_names and not multiclass:
        options["labels"] = "multiclass"
    return options


def block(rnd: random.Random, make_line, *, max_lines: int = 12) -> bytes:
    """Lines joined by ``\\n`` or ``\\r\\n``, with blank and comment lines, maybe without a final newline."""
    lines = [make_line(rnd) for _ in range(rnd.randint(0, max_lines))]
    for _ in range(rnd.randint(0, 3)):
        extra = rnd.choice([b"", b"   ", b"\t", b"# a comment", b"  # indented | comment:1"])
        lines.insert(rnd.randint(0, len(lines)), extra)
    newline = rnd.choice([b"\n", b"\r\n"])
    data = newline.join(lines)
    if lines and rnd.random() < 0.5:
        data += newline
    return data


def blocks(make_line, **kwargs) -> st.SearchStrategy[bytes]:
    return from_random(block, make_line, **kwargs)


# -- LIBSVM ---------------------------------------------------------------------


def libsvm_line(rnd: random.Random) -> bytes:
    parts = [blanks(rnd, 0, 2) + number_text(rnd)]
    if rnd.random() < 0.1:
        parts.append(b"qid:%d" % rnd.randint(0, 99))
    for _ in range(rnd.randint(0, 8)):
        index = rnd.choice([rnd.randint(1, 300), rnd.randint(1, 2**40), rnd.randint(2**18 - 2, 2**18 + 2)])
        value = rnd.choice([b"1", b"0", number_text(rnd, feature=True)])
        parts.append(b"%d:%s" % (index, value))
    line = b"".join(part + blanks(rnd) for part in parts[:-1]) + parts[-1]
    if rnd.random() < 0.2:
        line += blanks(rnd, 0, 2) + b"# comment with 3:4 and | bars"
    return line + blanks(rnd, 0, 2)


# -- VW -------------------------------------------------------------------------

# Names may hold anything but blanks, ':' and '|'; digit-only names hash to their value.
NAME_CHARS = list("abcxyz_-.'^#0123456789") + ["é", "名"]


def vw_name(rnd: random.Random) -> bytes:
    if rnd.random() < 0.2:
        return str(rnd.randint(0, 10**12)).encode()
    return "".join(rnd.choice(NAME_CHARS) for _ in range(rnd.randint(1, 8))).encode("utf-8")


def vw_line(rnd: random.Random, label_names: tuple[str, ...] = ()) -> bytes:
    head = []
    if rnd.random() < 0.7:
        head.append(label_token(rnd, label_names).encode() if label_names else number_text(rnd))
        if rnd.random() < 0.5:
            head.append(repr(rnd.uniform(0, 100)).encode())
    tag = pick_string(rnd, "abcXYZ019_", 0, 6) if rnd.random() < 0.4 else None
    touching_tag = bool(tag) and rnd.random() < 0.5
    if tag is not None and not touching_tag:
        head.append(b"'" + tag.encode())
    line = blanks(rnd, 0, 2) + b" ".join(head)
    if touching_tag:
        line += (b" " if head else b"") + tag.encode()
    elif head or rnd.random() < 0.5:
        line += blanks(rnd)
    for _ in range(rnd.randint(1, 3)):
        if rnd.random() < 0.4:
            namespace = b" "
        else:
            namespace = vw_name(rnd)
            if rnd.random() < 0.25:
                namespace += b":" + rnd.choice([b"2", b"0.5", b"-1", b"0", b"1e-3"])
            namespace += blanks(rnd)
        features = b""
        for _ in range(rnd.randint(0, 5)):
            feature = vw_name(rnd)
            if rnd.random() < 0.5:
                feature += b":" + (b"0" if rnd.random() < 0.1 else number_text(rnd, feature=True))
            features += feature + blanks(rnd)
        line += b"|" + namespace + features
    return line


# -- fuzzing --------------------------------------------------------------------

GARBAGE = [
    b"",
    b" ",
    b"\t",
    b":",
    b"::",
    b"|",
    b"||",
    b"#",
    b"'",
    b'"',
    b'""',
    b",",
    b",,",
    b"nan",
    b"inf",
    b"-inf",
    b"1e999",
    b"0:1",
    b"-3:2",
    b"qid:",
    b"x",
    b"\xff\xfe",
    b"\xc3",
    b"\r",
    b"\r\n",
    b"\n",
    b"1" * 25,
    b"9" * 400,
    b"a:b",
    b":5",
    b"1:1:1",
    b"\x00",
    b"\x0b",
    b"e5",
    b".",
    b"-",
    b"+.e3",
    b"x" * 1500,
]


def mutate(rnd: random.Random, data: bytes) -> bytes:
    """Good lines broken by deletions, duplications, garbage and flipped bytes."""
    data = bytearray(data)
    for _ in range(rnd.randint(0, 6)):
        action = rnd.choice(["delete", "duplicate", "insert", "flip"])
        pos = rnd.randint(0, len(data))
        if action == "delete":
            del data[pos : pos + rnd.randint(1, 3)]
        elif action == "duplicate":
            data[pos:pos] = data[pos : pos + rnd.randint(1, 4)]
        elif action == "insert":
            data[pos:pos] = rnd.choice(GARBAGE)
        elif pos < len(data):
            data[pos] = rnd.randint(0, 255)
    return bytes(data)


def fuzz_block(rnd: random.Random, make_line) -> bytes:
    kind = rnd.choice(["bytes", "garbage", "mutated", "mutated", "long"])
    if kind == "bytes":
        return rnd.randbytes(rnd.randint(0, 200))
    if kind == "garbage":
        return b"".join(rnd.choice(GARBAGE) for _ in range(rnd.randint(0, 30)))
    data = mutate(rnd, block(rnd, make_line, max_lines=6))
    if kind == "long":
        data += b"\n1 " + b"1:1 " * 3000 + b"\n"
    return data


def fuzzed(make_line) -> st.SearchStrategy[bytes]:
    """Random bytes, garbage tokens, or mutated good lines, sometimes with a very long line."""
    return from_random(fuzz_block, make_line)


def vw_cases(*, fuzz: bool = False) -> st.SearchStrategy[tuple[tuple[str, ...], bytes]]:
    """``(label_names, block)``: VW lines whose labels are numbers or (with names) mostly names."""

    def generate(rnd):
        names = pick_class_names(rnd, VW_CLASS_NAMES)

        def make_line(line_rnd):
            return vw_line(line_rnd, names)

        return names, (fuzz_block(rnd, make_line) if fuzz else block(rnd, make_line))

    return st.randoms(use_true_random=False).map(generate)


# -- CSV ------------------------------------------------------------------------

CSV_NAMES = ["y", "w", "a", "b c", "x,1", 'q"t', "名", "10", "size", "z;z", "col|9", " padded "]  # "10" never alone
CATEGORIES = ["red", "dark, blue", 'say "hi"', " spaced ", "名前", "a;b", "x|y", "1.5", "#hash", "'", "tab\there", ""]


def csv_spec(rnd: random.Random) -> dict:
    """Columns (names and kinds), a delimiter and whether there is a header."""
    count = rnd.randint(1, 6)
    names = [name if count > 1 or name != "10" else "y" for name in rnd.sample(CSV_NAMES, count)]  # (see CSV_NAMES)
    kinds = [rnd.choice(["numeric", "numeric", "categorical", "ignore"]) for _ in names]
    label = rnd.randrange(count)
    kinds[label] = "label"
    free = [i for i in range(count) if i != label]
    if free and rnd.random() < 0.4:
        kinds[rnd.choice(free)] = "weight"
    delimiter = rnd.choice([",", ",", ";", "\t", "|", " "])
    label_names = pick_class_names(rnd, CSV_CLASS_NAMES)
    # A class name that is also a missing spelling is refused (a test of its own); not generated here.
    spellings = [value for value in CSV_NA_VALUES if value not in {name.strip() for name in label_names}]
    na_values = rnd.choice([None, None, (), tuple(rnd.sample(spellings, rnd.randint(1, 4)))])
    return {
        "names": names,
        "kinds": kinds,
        "delimiter": delimiter,
        "header": rnd.random() < 0.7,
        "label_names": label_names,
        "na_values": na_values,  # None: the default spellings
    }


# Missing-value spellings to choose from besides the default ones: numbers, a category, blanks inside.
CSV_NA_VALUES = ["NA", "-999", "0", "1.5", "?", "missing value", "red", "n.a.", "名"]
# The default spellings (pandas' and "?"), written out: the generators do not import the package.
DEFAULT_NA_CELLS = (
    "#N/A|#N/A N/A|#NA|-1.#IND|-1.#QNAN|-NaN|-nan|1.#IND|1.#QNAN|<NA>|N/A|NA|NULL|NaN|None|n/a|nan|null|?".split("|")
)


def na_cells(spec: dict) -> list[str]:
    """The spellings that are a missing value in the spec's CSV (its ``na_values``, None: the default)."""
    return list(DEFAULT_NA_CELLS if spec.get("na_values") is None else spec["na_values"])


def csv_cell(rnd: random.Random, kind: str, label_names: tuple[str, ...] = (), missing: list[str] = ()) -> str:
    """A well-formed cell of a column of ``kind``; now and then one of the ``missing`` spellings (or, for a
    category, blanks)."""
    if missing and rnd.random() < 0.08:
        return rnd.choice(missing)
    if kind in ("categorical", "ignore") and rnd.random() < 0.03:
        return "  "
    if kind == "label" and label_names:
        return "" if rnd.random() < 0.1 else label_token(rnd, label_names)
    if kind in ("numeric", "label"):
        return "" if rnd.random() < 0.1 else number_text(rnd, feature=kind == "numeric").decode()
    if kind == "weight":
        return "" if rnd.random() < 0.1 else rnd.choice(["0", "1", "2.5", repr(rnd.uniform(0, 10))])
    if kind == "categorical":
        return rnd.choice(CATEGORIES)
    return rnd.choice(CATEGORIES + ["1", "junk"])


def csv_render(rnd: random.Random, value: str, delimiter: str) -> str:
    """One field, quoted when it must be (or at random), with optional padding outside the quotes."""
    padding = [c for c in " \t" if c != delimiter]
    must_quote = delimiter in value or '"' in value or value != value.strip(" \t\r") or value.startswith("#")
    text = '"' + value.replace('"', '""') + '"' if must_quote or rnd.random() < 0.2 else value
    if padding and rnd.random() < 0.3:
        text = rnd.choice(padding) + text + rnd.choice(padding)
    return text


def csv_block(rnd: random.Random, spec: dict, *, max_lines: int = 10) -> bytes:
    delimiter = spec["delimiter"]
    lines = []
    if spec["header"]:
        lines.append(delimiter.join(csv_render(rnd, name, delimiter) for name in spec["names"]).encode())
    for _ in range(rnd.randint(0, max_lines)):
        cells = (csv_cell(rnd, kind, spec["label_names"], na_cells(spec)) for kind in spec["kinds"])
        lines.append(delimiter.join(csv_render(rnd, cell, delimiter) for cell in cells).encode())
        if rnd.random() < 0.1:
            lines.append(rnd.choice([b"", b"  ", b"# a comment, with delimiters; | \t"]))
    newline = rnd.choice([b"\n", b"\r\n"])
    data = newline.join(lines)
    if lines and rnd.random() < 0.5:
        data += newline
    return data


def csv_cases(*, fuzz: bool = False) -> st.SearchStrategy[tuple[dict, bytes]]:
    def generate(rnd):
        spec = csv_spec(rnd)
        data = csv_block(rnd, spec)
        if fuzz:
            lines = data.split(b"\n")
            head, rest = (lines[:1], lines[1:]) if spec["header"] else ([], lines)
            if rnd.random() < 0.9:
                data = b"\n".join(head + [mutate(rnd, b"\n".join(rest))])
            else:
                if spec["header"] and b"\n" not in data:
                    data += b"\n"  # (random bytes appended to the header would rename its last column)
                data += rnd.randbytes(50)
        return spec, data

    return st.randoms(use_true_random=False).map(generate)
