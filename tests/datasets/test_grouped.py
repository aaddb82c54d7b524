"""The synthetic grouped regression (seeded, correlated as documented, written and read back) and the
bundled group specifications of the real datasets (each covers its dataset's features exactly once)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from polybeam import datasets
from polybeam.datasets.grouped import BLOCK_ROWS, TEST_STREAM, GroupedRegression, format_libsvm
from polybeam.formats.libsvm import LibsvmFormat
from polybeam.selection.groups import GroupSpec

FEATURES = {"spam": 57, "satellite": 36, "dna": 180}


@pytest.fixture(scope="module")
def problem():
    return GroupedRegression(seed=3)


@pytest.fixture(scope="module")
def large(problem):
    """Many rows of the default problem, for empirical moments."""
    return problem.generate(60_000)


def r_squared(X, y):
    """Share of y's variance a least-squares fit (with intercept) on X explains."""
    X = X - X.mean(axis=0)
    y = y - y.mean()
    with_label = X.T @ y
    return float(with_label @ np.linalg.solve(X.T @ X, with_label)) / float(y @ y)


def columns(problem, group):
    return slice(problem.offsets[group], problem.offsets[group + 1])


# -- determinism and shapes ----------------------------------------------------


def test_same_seed_same_problem_and_rows():
    first, second = GroupedRegression(seed=7), GroupedRegression(seed=7)
    X1, y1 = first.generate(500)
    X2, y2 = second.generate(500)
    np.testing.assert_array_equal(X1, X2)
    np.testing.assert_array_equal(y1, y2)
    np.testing.assert_array_equal(first.costs, second.costs)
    np.testing.assert_array_equal(first.coefficients, second.coefficients)
    assert first.group_spec_json() == second.group_spec_json()


def test_other_seed_other_problem_and_rows():
    first, second = GroupedRegression(seed=7), GroupedRegression(seed=8)
    assert not np.array_equal(first.generate(10)[0], second.generate(10)[0])
    assert not np.array_equal(first.costs, second.costs)
    assert first.informative_groups != second.informative_groups


def test_first_rows_do_not_depend_on_how_many_are_asked_for(problem):
    X, y = problem.generate(BLOCK_ROWS + 50)
    X_few, y_few = problem.generate(100)
    np.testing.assert_array_equal(X[:100], X_few)
    np.testing.assert_array_equal(y[:100], y_few)
    X_test, _ = problem.generate(100, stream=TEST_STREAM)
    assert not np.allclose(X_test, X_few)


def test_shapes_and_layout(problem):
    X, y = problem.generate(37)
    assert X.shape == (37, 200) and y.shape == (37,)
    assert X.dtype == np.float64 and y.dtype == np.float64
    assert problem.generate(0)[0].shape == (0, 200)
    assert len(problem.informative_groups) == 10 and len(problem.redundant_sources) == 8
    assert set(problem.redundant_sources.values()) <= set(problem.informative_groups)
    assert not set(problem.redundant_sources) & set(problem.informative_groups)
    informative_columns = np.isin(problem.group_of_column, problem.informative_groups)
    assert np.all(problem.coefficients[~informative_columns] == 0)
    assert np.all(problem.coefficients[informative_columns] != 0)


def test_uneven_group_sizes():
    sizes = (1, 2, 3, 4, 5, 6)
    problem = GroupedRegression(groups=6, group_size=list(sizes), informative=2, redundant=2, seed=2)
    assert problem.sizes == sizes and problem.features == 21
    assert problem.generate(5)[0].shape == (5, 21)
    spec = GroupSpec.from_json(problem.group_spec_json())
    assert [len(group.slots) for group in spec.groups] == list(sizes)


def test_costs_are_heterogeneous_and_in_range(problem):
    costs = problem.costs
    assert costs.shape == (40,)
    assert np.all((costs >= 1) & (costs <= 20))
    assert costs.max() / costs.min() > 5
    # Log-uniform: about as many groups below sqrt(20) as above it.
    assert 10 <= np.sum(costs < np.sqrt(20)) <= 30


@pytest.mark.parametrize(
    "settings, message",
    [
        (dict(groups=0), "groups"),
        (dict(group_size=(5, 5)), "2 sizes for 40 groups"),
        (dict(group_size=0), "group sizes"),
        (dict(informative=41), "informative"),
        (dict(redundant=31), "redundant"),
        (dict(informative=0, redundant=1), "nothing|none to copy"),
        (dict(rho=1.0), "rho"),
        (dict(redundant_correlation=1.5), "redundant_correlation"),
        (dict(min_cost=0.0), "min_cost"),
        (dict(min_cost=5.0, max_cost=2.0), "min_cost"),
        (dict(noise=-1.0), "noise"),
        (dict(seed=-1), "seed"),
    ],
)
def test_bad_settings_say_what_to_fix(settings, message):
    with pytest.raises(ValueError, match=message):
        GroupedRegression(**settings)


# -- the model -------------------------------------------------------------------


def test_group_spec_covers_every_column_once(problem):
    text = problem.group_spec_json()
    spec = GroupSpec.from_json(text)
    assert spec.slots.tolist() == list(range(1, problem.features + 1))
    np.testing.assert_array_equal(spec.group_of_column, problem.group_of_column)
    np.testing.assert_array_equal(spec.costs, problem.costs)
    truth = json.loads(text)["truth"]
    names = problem.group_names()
    assert sorted(truth["informative"]) == sorted(names[g] for g in problem.informative_groups)
    assert truth["redundant"] == {names[r]: names[s] for r, s in problem.redundant_sources.items()}


def test_within_group_correlation_is_rho(problem, large):
    X, _ = large
    correlation = np.corrcoef(X, rowvar=False)
    redundant = set(problem.redundant_sources)
    for group in range(problem.groups):
        block = correlation[columns(problem, group), columns(problem, group)]
        off_diagonal = block[~np.eye(len(block), dtype=bool)]
        if group not in redundant:
            assert off_diagonal.mean() == pytest.approx(0.8, abs=0.01)
            assert np.abs(off_diagonal - 0.8).max() < 0.03
    np.testing.assert_allclose(X.mean(axis=0), 0, atol=0.03)
    np.testing.assert_allclose(X.std(axis=0), 1, atol=0.03)


def test_ordinary_groups_are_independent(problem, large):
    X, _ = large
    ordinary = [g for g in range(problem.groups) if g not in problem.redundant_sources]
    factors = np.column_stack([X[:, columns(problem, g)].mean(axis=1) for g in ordinary])
    between = np.corrcoef(factors, rowvar=False)[~np.eye(len(ordinary), dtype=bool)]
    assert np.abs(between).max() < 0.03


def test_redundant_groups_follow_their_source_and_add_nothing_given_it(problem, large):
    X, y = large
    for redundant, source in problem.redundant_sources.items():
        source_columns = X[:, columns(problem, source)]
        for feature in X[:, columns(problem, redundant)].T:
            # Each redundant feature is 0.9 * (a mixture of the source's features) + noise.
            assert r_squared(source_columns, feature) == pytest.approx(0.81, abs=0.02)
        alone = r_squared(X[:, columns(problem, redundant)], y)
        with_source = r_squared(np.column_stack([source_columns, X[:, columns(problem, redundant)]]), y)
        assert alone > 0.5 * r_squared(source_columns, y)
        assert with_source - r_squared(source_columns, y) < 0.002


def test_population_moments_match_the_rows(problem, large):
    X, y = large
    features, with_label, label_variance = problem.covariance()
    np.testing.assert_allclose(np.cov(X, rowvar=False), features, atol=0.03)
    np.testing.assert_allclose(X.T @ (y - y.mean()) / len(y), with_label, atol=0.03)
    assert y.var() == pytest.approx(label_variance, rel=0.03)
    assert label_variance == pytest.approx(1.25)
    assert r_squared(X, y) == pytest.approx(problem.explained_variance(), abs=0.01)
    assert problem.explained_variance() == pytest.approx(0.8)
    chosen = list(problem.informative_groups[:3])
    subset = X[:, np.isin(problem.group_of_column, chosen)]
    assert r_squared(subset, y) == pytest.approx(problem.explained_variance(chosen), abs=0.01)


def test_expensive_groups_explain_more_but_cheap_ones_more_per_cost(problem):
    informative = list(problem.informative_groups)
    costs, shares = problem.costs[informative], problem.signal_shares[informative]
    assert shares.sum() == pytest.approx(1.0) and problem.signal_shares.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(shares / shares.sum(), costs**0.5 / (costs**0.5).sum())
    assert np.argmax(shares) == np.argmax(costs)
    assert np.argmax(shares / costs) == np.argmin(costs)
    single = [problem.explained_variance([g]) for g in informative]
    np.testing.assert_allclose(single, shares / 1.25)
    assert problem.explained_variance([]) == 0.0
    with pytest.raises(ValueError, match="numbered 0 to 39"):
        problem.explained_variance([40])


# -- writing -------------------------------------------------------------------


def parse(path: str, features: int):
    with open(path, "rb") as handle:
        parsed = LibsvmFormat(bits=18).parse(handle.read())
    assert not parsed.dead_letters
    return parsed.batch.to_csr()[:, 1 : features + 1].toarray(), parsed.batch.labels


@pytest.mark.slow
def test_written_files_parse_back_to_the_same_rows(problem, tmp_path):
    n_train, n_test = BLOCK_ROWS + 300, 700
    paths = problem.write(str(tmp_path), n_train, n_test)
    assert set(paths) == {"train", "test", "groups"}
    for part, n, stream in (("train", n_train, 0), ("test", n_test, TEST_STREAM)):
        X, y = problem.generate(n, stream=stream)
        X_read, y_read = parse(paths[part], problem.features)
        assert X_read.shape == X.shape
        np.testing.assert_allclose(X_read, X, rtol=0, atol=5.000001e-7)
        np.testing.assert_allclose(y_read, y, rtol=0, atol=5.000001e-7)
    spec = GroupSpec.load(paths["groups"])
    assert spec.slots.tolist() == list(range(1, problem.features + 1))


def test_more_decimals_are_more_precise(tmp_path):
    problem = GroupedRegression(groups=4, group_size=3, informative=2, redundant=1, seed=5)
    paths = problem.write(str(tmp_path), 200, 10, stem="precise", decimals=12)
    X, y = problem.generate(200)
    X_read, y_read = parse(paths["train"], problem.features)
    np.testing.assert_allclose(X_read, X, rtol=0, atol=6e-13)
    np.testing.assert_allclose(y_read, y, rtol=0, atol=6e-13)


def test_same_seed_same_files(tmp_path):
    problem = GroupedRegression(groups=5, group_size=4, informative=2, redundant=1, seed=9)
    first, second = problem.write(str(tmp_path / "a"), 300, 100), problem.write(str(tmp_path / "b"), 300, 100)
    for part in first:
        assert open(first[part], "rb").read() == open(second[part], "rb").read()


def test_format_libsvm_numbers():
    X = np.array([[0.5, 0.0, -2.25, 4e-7, -4e-7], [1e-9, 3.0, 0.125, 5.5e-7, -10.0]])
    y = np.array([0.0, -1e-9])
    assert format_libsvm(X, y) == b"0 1:0.5 3:-2.25\n0 2:3 3:0.125 4:0.000001 5:-10\n"
    assert format_libsvm(X, y, decimals=0) == b"0 1:1 3:-2\n0 2:3 5:-10\n"
    assert format_libsvm(np.zeros((0, 3)), np.zeros(0)) == b""
    with pytest.raises(ValueError, match="n x D"):
        format_libsvm(np.zeros(3), np.zeros(3))
    with pytest.raises(ValueError, match="fixed point"):
        format_libsvm(np.array([[1e15]]), np.zeros(1), decimals=6)


# -- bundled group specifications ----------------------------------------------


@pytest.mark.parametrize("name", sorted(datasets.GROUP_SPECS))
def test_bundled_group_spec_covers_its_dataset_exactly_once(name):
    dataset = datasets.GROUP_SPECS[name]
    spec = GroupSpec.load(datasets.group_spec_path(name))
    slots = spec.slots.tolist()
    # Every feature once: GroupSpec itself rejects a feature in two groups, so count the slots too.
    assert len(slots) == len(set(slots)) == FEATURES[dataset]
    assert sorted(slots) == list(range(1, FEATURES[dataset] + 1))
    present = np.unique(datasets.load(dataset).indices).tolist()
    assert sorted(slots) == present
    assert spec.unassigned(present) == []
    assert len(set(spec.costs.tolist())) > 1 and np.all(spec.costs > 0)
    with open(datasets.group_spec_path(name), encoding="utf-8") as handle:
        assert json.load(handle)["description"]


def test_bundled_group_specs_have_the_documented_shapes():
    sizes = {
        name: [len(group.slots) for group in GroupSpec.load(datasets.group_spec_path(name)).groups]
        for name in datasets.GROUP_SPECS
    }
    assert sizes["satellite_band"] == [9] * 4
    assert sizes["satellite_pixel"] == [4] * 9
    assert sizes["dna"] == [3] * 60
    assert 8 <= len(sizes["spam"]) - 3 <= 12  # word groups besides two character groups and capitals
    pixel = {group.name: group.cost for group in GroupSpec.load(datasets.group_spec_path("satellite_pixel")).groups}
    assert min(pixel, key=pixel.get) == "centre"
    dna = GroupSpec.load(datasets.group_spec_path("dna")).costs
    assert dna[29] == dna[30] == dna.min() and dna[0] == dna[59] == dna.max()


def test_unknown_group_spec_lists_the_valid_names():
    with pytest.raises(ValueError, match="spam, satellite_band, satellite_pixel, dna"):
        datasets.group_spec_path("letter")
