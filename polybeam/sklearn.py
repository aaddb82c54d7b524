"""scikit-learn estimators over polybeam's learners: ``PolybeamClassifier`` and ``PolybeamRegressor``.

They are a thin layer over the learners the Beam transforms run
(:func:`polybeam.learners.polynomial.make_learner`: a
:class:`~polybeam.learners.linear.LinearLearner`, or a
:class:`~polybeam.learners.polynomial.PolynomialLearner` for ``expand``), so
an estimator learns what ``polybeam train`` learns from the same examples, and
its fitted ``model_`` is a :class:`~polybeam.learners.model.Model` that
``model_.save(path)`` writes for ``polybeam evaluate``/``predict`` and the
RunInference handlers. Every setting of
:class:`~polybeam.learners.config.LearnerConfig` is a constructor parameter
with its default (apple: ``expand="apple"``; truncated gradient:
``gravity``, ``truncate_every``, ``truncate_threshold``, ``sparsity``), so
``GridSearchCV`` can tune any of them; ``fit`` validates them and says what
to fix.

A matrix ``X`` (NumPy, SciPy sparse, or a pandas frame with unnamed
columns) is read by column position: column ``j`` is the feature a LIBSVM
file numbered from 0 gives index ``j`` (see :mod:`polybeam.learners.arrays`),
so a model fitted on ``load_svmlight_file(path)`` scores ``path`` through the
command line. A pandas frame with named columns is a table, read as CSV reads
the same rows: numbers are features named after their column, text columns
are categorical (``colour=red``), so a model fitted on ``frame`` scores
``frame.to_csv(path)`` through ``polybeam evaluate`` alike. NaN (or a missing
value) is a missing feature, as an empty CSV cell; infinity is refused.

Every fitted model records that contract (``input_``, and
``model_.input``: the format the rows correspond to, the columns and their
roles, the class names of ``classes_``), so that ``model_.save(path)`` then
``polybeam evaluate``/``predict`` and the RunInference handlers read new
rows as the estimator did, or refuse rows they cannot read so.

* ``fit`` learns ``passes`` passes over ``(X, y)``, from scratch (or, with
  ``warm_start=True``, going on from the previous fit's learner); each pass
  in a new random order (``shuffle=True``, seeded by ``random_state``, as
  scikit-learn's SGD estimators: an online learner given rows sorted by label
  learns mostly the last class); ``shuffle=False`` learns them in order;
  with several passes, one row in ``holdout_period`` is held out (the same
  rows whatever the order), every pass is
  scored on them, and the estimator keeps the best pass; after
  ``early_terminate`` passes without improvement it starts again at half the
  rate until that no longer helps (``pass_schedule="restart"``), or stops
  (``"constant"``, as ``SGDClassifier``'s ``early_stopping``, with VW's
  defaults: see :mod:`polybeam.learners.holdout`); with fewer than ``holdout_min_examples``
  held out (small data) the rate and passes are chosen by 10-fold
  cross-validation over every row and learned again on all of them
  (``small_holdout="cross-validate"``; ``"release"`` learns every row from
  the second pass on: see :mod:`polybeam.learners.fitting`);
  ``partial_fit`` learns one pass over a mini-batch (its rows shuffled as
  ``fit``'s), going on from the previous ones (a stream: apple then expands
  after ``expand_after``, twice that, ... examples, unless
  ``examples_per_pass`` says how many to expect). ``verbose=1`` prints a line
  per pass (its progressive loss, and its holdout loss), ``verbose=2`` also
  ``polybeam train``'s progress lines at doubling example counts.
* ``PolybeamClassifier``: two classes with ``loss="logistic"`` (default) or
  ``"hinge"`` (which has no ``predict_proba``); more than two with
  ``"logistic"`` or ``"softmax"``, both multinomial logistic regression
  (softmax loss). ``classes_`` maps the labels, of any type, to the learner's.
* ``PolybeamRegressor``: squared loss (default), ``"quantile"`` (the
  ``quantile_tau`` quantile of y) or ``"poisson"`` (the mean of counts, y >= 0);
  squared and quantile predictions are clamped to the range of the training
  labels and 0, as ``polybeam predict`` and VW clamp them.

scikit-learn is an optional dependency (``pip install polybeam[sklearn]``):
only this module imports it.

Examples
--------
>>> from sklearn.datasets import load_breast_cancer
>>> from sklearn.model_selection import train_test_split
>>> X, y = load_breast_cancer(return_X_y=True)
>>> X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
>>> classifier = PolybeamClassifier(passes=5).fit(X_train, y_train)
>>> round(classifier.score(X_test, y_test), 2) >= 0.9
True
>>> classifier.predict_proba(X_test[:2]).shape
(2, 2)
"""

from __future__ import annotations

import dataclasses
import time
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils import check_random_state
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted

from polybeam.formats.classes import check_label_names
from polybeam.formats.input_settings import InputSettings
from polybeam.formats.labels import LabelEncodingError, infer_classes, read_labels
from polybeam.learners import lbfgs
from polybeam.learners.arrays import batch_from_arrays, column_slots, is_table, text_columns
from polybeam.learners.config import LearnerConfig
from polybeam.learners.curve import progress_line
from polybeam.learners.holdout import PassSelection, shuffled
from polybeam.learners.label_order import LabelOrder
from polybeam.learners.loss_specs import loss_spec, losses_where
from polybeam.learners.model import finalize_predictions, softmax_probabilities
from polybeam.learners.polynomial import linear_part, make_learner
from polybeam.learners.warm_start import check_compatible, continue_learner

try:  # scikit-learn >= 1.6
    from sklearn.utils.validation import validate_data as _validate_data

    _FINITE = "ensure_all_finite"
    _NO_ARRAY = {"skip_check_array": True}
except ImportError:  # scikit-learn 1.4 and 1.5: the estimator's own method

    def _validate_data(estimator, *args, **kwargs):
        return estimator._validate_data(*args, **kwargs)

    _FINITE = "force_all_finite"
    _NO_ARRAY = {"cast_to_ndarray": False}

__all__ = ["ESTIMATOR_SETTINGS", "PARAMETERS_OF", "PolybeamClassifier", "PolybeamRegressor", "TASK_SETTINGS"]

_DEFAULTS = LearnerConfig.defaults()
# LearnerConfig's settings the estimators take from the labels instead of a parameter: a classifier
# counts and names the classes of y (``classes_``).
# Settings the estimator sets itself (the task's classes), or that have no meaning without keys (the shared
# per-key model's offset prior).
TASK_SETTINGS = ("classes", "class_names", "offset_prior")
# The estimators' own parameters, which say how fit feeds the learner rather than how it learns (as
# SGDClassifier's): the order of the rows, going on from the previous fit, progress lines.
ESTIMATOR_SETTINGS = ("shuffle", "random_state", "warm_start", "verbose")
# What every entry of X may be (NaN: a missing feature).
_VALIDATION = {"accept_sparse": "csr", "dtype": np.float64, _FINITE: "allow-nan"}


# The label column a table's contract names when y has no name of its own (a pandas Series' name).
DEFAULT_LABEL_COLUMN = "label"


class _PolybeamEstimator(BaseEstimator):
    """What both estimators share: the settings, validation, and learning through the learners."""

    def _checked(self, X, y="no_validation", *, reset: bool, **options):
        """``X`` (and ``y``) validated as scikit-learn does: a table keeps its columns (their names and
        count are checked; their values are read as CSV reads them), anything else becomes a float matrix."""
        if is_table(X):
            if isinstance(y, str) and y == "no_validation":
                return _validate_data(self, X, reset=reset, **_NO_ARRAY)
            if y is None:  # scikit-learn's own message
                return _validate_data(self, X, y, reset=reset, **_VALIDATION, **options)
            checked = _validate_data(self, X, reset=reset, **_NO_ARRAY)
            from sklearn.utils.validation import check_consistent_length, column_or_1d

            y = column_or_1d(y, warn=True)
            if options.get("y_numeric"):
                y = np.asarray(y, dtype=np.float64)
            check_consistent_length(X, y)
            return checked, y
        if isinstance(y, str) and y == "no_validation":
            return _validate_data(self, X, reset=reset, **_VALIDATION)
        return _validate_data(self, X, y, reset=reset, **_VALIDATION, **options)

    def _input_contract(self, X, y) -> InputSettings:
        """How the estimator read ``X``, as a model records its input (see the module docstring)."""
        config = self.config_
        task = {"classes": config.classes, "class_names": config.class_names}
        if is_table(X):
            label = getattr(y, "name", None)
            label = label if isinstance(label, str) and label not in X.columns else DEFAULT_LABEL_COLUMN
            return InputSettings(
                "csv",
                {"label_column": label, "categorical_columns": text_columns(X), "has_header": True},
                bits=config.bits,
                seed=config.seed,
                columns=(*map(str, X.columns), label),
                **task,
            )
        columns = X.shape[1]
        return InputSettings("libsvm", bits=config.bits, seed=config.seed, matrix_columns=columns, **task)

    def _settings(self) -> dict:
        """The LearnerConfig settings of the constructor parameters (a LearnerConfig field that is not
        one yet keeps its default: tests/test_sklearn.py fails until it is)."""
        settings = self.get_params(deep=False)
        return {name: value for name, value in settings.items() if name not in ESTIMATOR_SETTINGS}

    def _config(self, **task) -> LearnerConfig:
        settings = {**self._settings(), **task}
        if settings["interactions"]:
            raise ValueError(
                f"{type(self).__name__}: interactions pair VW namespaces, and the columns of a matrix "
                "have none; use expand='quadratic' or 'cubic' for all pairs or triples"
            )
        try:
            return LearnerConfig(**settings)
        except (TypeError, ValueError) as error:
            raise ValueError(f"{type(self).__name__}: {error}") from None

    def _batch(self, X, labels=None, sample_weight=None):
        config = self.config_
        batch = batch_from_arrays(X, labels, bits=config.bits, seed=config.seed, weights=sample_weight)
        names = getattr(self, "feature_names_in_", None)
        if names is not None and not is_table(X):  # the model then names its weights after the columns
            slots = column_slots(len(names), bits=config.bits, seed=config.seed)
            batch = dataclasses.replace(batch, names={int(slot): str(name) for slot, name in zip(slots, names)})
        return batch

    def _weights(self, sample_weight, X) -> np.ndarray | None:
        if sample_weight is None:
            return None
        weights = _check_sample_weight(sample_weight, X, dtype=np.float64)
        if (weights < 0).any():
            raise ValueError("sample_weight must be >= 0 (it is each example's importance)")
        if not (weights > 0).any():
            raise ValueError("sample_weight must contain at least one non-zero weight: there is nothing to learn")
        return weights

    def _continues(self) -> bool:
        """Whether ``fit`` goes on from the previous fit's learner (``warm_start``)."""
        return bool(self.warm_start) and hasattr(self, "learner_")

    def _random(self):
        """The random generator of this call's row orders (None without ``shuffle``)."""
        return check_random_state(self.random_state) if self.shuffle else None

    def _fit(self, batch) -> None:
        """``passes`` passes over ``batch``, from scratch or (``warm_start``) from the previous fit's learner."""
        progress = _Progress(self.verbose)
        if self._continues():
            learner = self.learner_
            try:
                check_compatible(learner.config, self.config_, "the previous fit's learner (warm_start)")
            except ValueError as error:
                raise ValueError(f"{type(self).__name__}: {error}; fit with warm_start=False to start afresh") from None
            # As a warm start of polybeam train: this fit's passes are judged afresh, after the last one closes.
            continue_learner(learner, self.config_)
            learner.selection_ = PassSelection.of(self.config_)
            if linear_part(learner).examples_seen:
                learner.start_pass()
        else:
            learner = make_learner(self.config_)
        if not self.shuffle:  # in the order given: say so when that order would mislead the learner
            found = LabelOrder().add(batch.labels).warning("fit with shuffle=True (the default)")
            if found:
                warnings.warn(f"{type(self).__name__}: {found}", UserWarning, stacklevel=3)
        progress.attach(learner)
        self.learner_ = learner.fit(batch, shuffle=self._random(), after_pass=progress.after_pass)
        self.model_ = self.learner_.to_model({"input": self.input_.to_dict()})
        if self.config_.lbfgs_passes:  # the finishing stage, as Train runs it (polybeam.learners.lbfgs)
            config = self.config_
            self.model_ = lbfgs.finish(
                self.model_,
                [batch],
                config.lbfgs_passes,
                config.lbfgs_l2,
                period=lbfgs.stage_holdout_period(config),
                seed=config.seed,
            )

    def _partial_fit(self, batch, *, first: bool) -> None:
        """One pass over ``batch`` (its rows in a random order with ``shuffle``), going on from earlier calls."""
        if first:
            self.learner_ = make_learner(self.config_)
        progress = _Progress(self.verbose)
        progress.attach(self.learner_)
        self.learner_.learn(shuffled(batch, self._random()))
        progress.after_partial_fit(self.learner_)
        self.model_ = self.learner_.to_model({"input": self.input_.to_dict()})

    def _margins(self, X) -> np.ndarray:
        check_is_fitted(self, "model_")
        X = self._checked(X, reset=False)
        return self.model_.margins(self._batch(X))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.allow_nan = True
        return tags

    def _more_tags(self):  # scikit-learn < 1.6
        return {"allow_nan": True}


def _class_names(classes: np.ndarray) -> tuple[str, ...]:
    """The classes' names as a model file records them, decided as ``polybeam train`` decides them for the
    same labels (see :func:`polybeam.formats.labels.infer_classes`): none for -1/+1, 0/1 or the class numbers
    1..K (the loss's own labels), else the text of each label, when those texts read back as the same
    classes; else none (the model then counts its classes)."""
    texts = [str(label) for label in classes]
    kind = "binary" if len(classes) == 2 else "multiclass"
    try:
        return infer_classes(kind, 0 if kind == "binary" else len(classes), (), texts).names
    except LabelEncodingError:
        pass
    try:
        return check_label_names(tuple(texts)) if len(set(texts)) == len(texts) else ()
    except (TypeError, ValueError):
        return ()


class _Progress:
    """What ``verbose`` prints, as scikit-learn's estimators do (``print``): a line per pass, and with
    ``verbose >= 2`` the learning curve's points at doubling example counts (``polybeam train``'s lines)."""

    def __init__(self, verbose):
        self.verbose = int(verbose or 0)
        self.started = time.perf_counter()

    def attach(self, learner) -> None:
        # (and detached otherwise: a learner of an earlier, more verbose call may still hold it)
        linear_part(learner).curve_.progress = self.point if self.verbose >= 2 else None

    def point(self, point: dict, curve) -> None:
        if point["examples"] == 1:
            self.started = time.perf_counter()
        seconds = time.perf_counter() - self.started
        print(progress_line(point, point["examples"] / seconds if seconds > 0 else float("nan")))

    def after_pass(self, learner, number: int, learned: dict) -> None:
        """The line of ``fit``'s pass ``number`` (see polybeam.learners.fitting.train_passes), and its holdout's."""
        if self.verbose < 1:
            return
        if number:  # (pass 0: cross-validation's choice, before the passes it chose)
            self._line(f"pass {number}", learned)
        line = learner.selection_.line_after(number)
        if line:
            print(line)

    def after_partial_fit(self, learner) -> None:
        """The line of a ``partial_fit`` call: the stream's one pass so far."""
        if self.verbose >= 1:
            linear = linear_part(learner)
            self._line("partial_fit", {"examples": linear.examples_seen, "progressive_loss": linear.progressive_loss})

    def _line(self, what: str, learned: dict) -> None:
        print(
            f"-- {what}: {learned['examples']} examples, progressive loss {learned['progressive_loss']:.6f}, "
            f"{time.perf_counter() - self.started:.2f} s"
        )
        self.started = time.perf_counter()


def _has_probabilities(estimator) -> bool:
    return estimator.loss not in LOSSES_OF["classes"] or loss_spec(estimator.loss).probability


# The losses of each estimator's task, and the parameters those losses take (a parameter of the other task's
# losses is not one of the estimator's).
LOSSES_OF = {"classes": losses_where(classes=True), "values": losses_where(classes=False)}
PARAMETERS_OF = {
    task: tuple(spec.parameter.name for name in losses if (spec := loss_spec(name)).parameter is not None)
    for task, losses in LOSSES_OF.items()
}


class PolybeamClassifier(ClassifierMixin, _PolybeamEstimator):
    """A polybeam learner as a scikit-learn classifier; see the module docstring.

    Parameters
    ----------
    loss : {"logistic", "hinge", "softmax"}, default "logistic"
        Two classes: logistic or hinge loss (hinge: no ``predict_proba``).
        More classes: ``logistic`` and ``softmax`` both mean softmax loss.
    shuffle : bool, default True
        Learn the rows of each pass (and of each ``partial_fit`` mini-batch) in a new random order.
    random_state : int, RandomState instance or None, default None
        Seeds the orders (None: NumPy's global random state), as scikit-learn's ``random_state``.
    warm_start : bool, default False
        ``fit`` goes on from the previous fit's learner (its weights, step sizes, apple's products)
        instead of starting afresh; the classes stay the first fit's.
    verbose : int, default 0
        1: a line per pass (progressive loss, holdout loss); 2: also progress lines at doubling
        example counts, as ``polybeam train`` prints them.
    Every other parameter is the :class:`~polybeam.learners.config.LearnerConfig`
    setting of that name, with its default. ``classes`` and ``class_names``
    come from ``y``.

    Attributes
    ----------
    classes_ : array of shape (K,)
        The class labels, sorted.
    config_ : LearnerConfig
        The settings the learner ran with.
    learner_ : LinearLearner or PolynomialLearner
        The learner state (``partial_fit`` goes on from it).
    model_ : Model
        The fitted model (``model_.save(path)`` for ``polybeam evaluate``).
    n_features_in_, feature_names_in_
        As in scikit-learn.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0, 1.0], [1.0, 0.0]] * 50)
    >>> y = np.array(["spam", "ham"] * 50)
    >>> classifier = PolybeamClassifier().fit(X, y)
    >>> classifier.predict([[0.0, 1.0], [1.0, 0.0]]).tolist()
    ['spam', 'ham']
    """

    def __init__(
        self,
        *,
        loss="logistic",
        step=_DEFAULTS["step"],
        learning_rate=_DEFAULTS["learning_rate"],
        power_t=_DEFAULTS["power_t"],
        l2=_DEFAULTS["l2"],
        bits=_DEFAULTS["bits"],
        seed=_DEFAULTS["seed"],
        passes=_DEFAULTS["passes"],
        holdout_period=_DEFAULTS["holdout_period"],
        early_terminate=_DEFAULTS["early_terminate"],
        holdout_min_examples=_DEFAULTS["holdout_min_examples"],
        pass_schedule=_DEFAULTS["pass_schedule"],
        small_holdout=_DEFAULTS["small_holdout"],
        bias=_DEFAULTS["bias"],
        center=_DEFAULTS["center"],
        scale_labels=_DEFAULTS["scale_labels"],
        normalized=_DEFAULTS["normalized"],
        safe_updates=_DEFAULTS["safe_updates"],
        gsa_target=_DEFAULTS["gsa_target"],
        gsa_exact=_DEFAULTS["gsa_exact"],
        sparsity=_DEFAULTS["sparsity"],
        gravity=_DEFAULTS["gravity"],
        truncate_every=_DEFAULTS["truncate_every"],
        truncate_threshold=_DEFAULTS["truncate_threshold"],
        expand=_DEFAULTS["expand"],
        alpha=_DEFAULTS["alpha"],
        expand_rule=_DEFAULTS["expand_rule"],
        max_degree=_DEFAULTS["max_degree"],
        expansions=_DEFAULTS["expansions"],
        expand_after=_DEFAULTS["expand_after"],
        apple_guard=_DEFAULTS["apple_guard"],
        examples_per_pass=_DEFAULTS["examples_per_pass"],
        repeat_factors=_DEFAULTS["repeat_factors"],
        interactions=_DEFAULTS["interactions"],
        lbfgs_passes=_DEFAULTS["lbfgs_passes"],
        lbfgs_l2=_DEFAULTS["lbfgs_l2"],
        shuffle=True,
        random_state=None,
        warm_start=False,
        verbose=0,
    ):
        self.loss = loss
        self.step = step
        self.learning_rate = learning_rate
        self.power_t = power_t
        self.l2 = l2
        self.bits = bits
        self.seed = seed
        self.passes = passes
        self.holdout_period = holdout_period
        self.early_terminate = early_terminate
        self.holdout_min_examples = holdout_min_examples
        self.pass_schedule = pass_schedule
        self.small_holdout = small_holdout
        self.bias = bias
        self.center = center
        self.scale_labels = scale_labels
        self.normalized = normalized
        self.safe_updates = safe_updates
        self.gsa_target = gsa_target
        self.gsa_exact = gsa_exact
        self.sparsity = sparsity
        self.gravity = gravity
        self.truncate_every = truncate_every
        self.truncate_threshold = truncate_threshold
        self.expand = expand
        self.alpha = alpha
        self.expand_rule = expand_rule
        self.max_degree = max_degree
        self.expansions = expansions
        self.expand_after = expand_after
        self.apple_guard = apple_guard
        self.examples_per_pass = examples_per_pass
        self.repeat_factors = repeat_factors
        self.interactions = interactions
        self.lbfgs_passes = lbfgs_passes
        self.lbfgs_l2 = lbfgs_l2
        self.shuffle = shuffle
        self.random_state = random_state
        self.warm_start = warm_start
        self.verbose = verbose

    # -- the task: classes and the learner's labels -------------------------------------------------

    def _task_config(self) -> LearnerConfig:
        count = len(self.classes_)
        if count < 2:
            raise ValueError(
                f"{type(self).__name__} needs examples of at least two classes; y holds one class: {self.classes_[0]!r}"
            )
        if self.loss not in LOSSES_OF["classes"]:
            raise ValueError(
                f"{type(self).__name__}: loss must be one of {', '.join(LOSSES_OF['classes'])}; got {self.loss!r} "
                "(for regression use PolybeamRegressor)"
            )
        if not loss_spec(self.loss).probability and count > 2:
            raise ValueError(f"hinge loss takes two classes; y holds {count}: use loss='logistic' (softmax loss)")
        names = _class_names(self.classes_)
        if self.loss == "softmax" or count > 2:
            return self._config(loss="softmax", classes=count, class_names=names)
        return self._config(class_names=names)

    def _labels(self, y) -> np.ndarray:
        """The learner's labels of ``y``: -1/+1 for two classes (logistic, hinge), 1..K for softmax."""
        positions = np.searchsorted(self.classes_, y)
        positions = np.minimum(positions, len(self.classes_) - 1)
        unknown = self.classes_[positions] != y
        if np.any(unknown):
            raise ValueError(
                f"y holds labels not among classes_ {self.classes_.tolist()}: "
                f"{np.unique(np.asarray(y)[unknown]).tolist()[:5]}"
            )
        if self.config_.loss == "softmax":
            return positions + 1.0
        return 2.0 * positions - 1.0

    # -- learning -------------------------------------------------------------------------------------

    def fit(self, X, y, sample_weight=None):
        """Learn ``passes`` passes over ``(X, y)``, each in a new random order unless ``shuffle=False``, from
        scratch or, with ``warm_start``, going on from the previous fit (``sample_weight``: importance weights)."""
        continues = self._continues()
        label = y
        X, y = self._checked(X, y, reset=not continues)
        check_classification_targets(y)
        weights = self._weights(sample_weight, X)
        if continues:  # warm_start: the classes (and the input contract) stay the first fit's; y may hold fewer
            self._labels(y)
        else:
            self.classes_ = np.unique(y)
        if weights is not None and len(self.classes_) > 1 and len(np.unique(y[weights > 0])) < 2 and not continues:
            raise ValueError(
                f"{type(self).__name__} needs examples of at least two classes with a positive "
                "sample_weight; only one class has any"
            )
        self.config_ = self._task_config()
        if not continues:
            self.input_ = self._input_contract(X, label)
        self._fit(self._batch(X, self._labels(y), weights))
        return self

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Learn one pass over ``(X, y)`` (its rows in a random order unless ``shuffle=False``), going on from
        earlier calls; the first call needs ``classes`` (every label the stream will hold)."""
        first = not hasattr(self, "learner_")
        label = y
        X, y = self._checked(X, y, reset=first)
        check_classification_targets(y)
        if first:
            if classes is None:
                raise ValueError("classes must be passed on the first call to partial_fit (every label of the stream)")
            self.classes_ = np.unique(classes)
            self.config_ = self._task_config()
            self.input_ = self._input_contract(X, label)
        elif classes is not None and not np.array_equal(np.unique(classes), self.classes_):
            raise ValueError(
                f"classes {np.unique(classes).tolist()} differ from the first call's {self.classes_.tolist()}"
            )
        self._partial_fit(self._batch(X, self._labels(y), self._weights(sample_weight, X)), first=first)
        return self

    # -- predicting -----------------------------------------------------------------------------------

    def decision_function(self, X) -> np.ndarray:
        """Scores: shape (n,) for two classes (positive: ``classes_[1]``), (n, K) for more."""
        margins = self._margins(X)
        if margins.ndim == 2 and margins.shape[1] == 2:  # softmax over two classes
            return margins[:, 1] - margins[:, 0]
        return margins

    def predict(self, X) -> np.ndarray:
        """The most likely class of each example."""
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(int)]
        return self.classes_[np.argmax(scores, axis=1)]

    @available_if(_has_probabilities)
    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities, shape (n, K), columns in the order of ``classes_`` (not for hinge loss)."""
        margins = self._margins(X)
        if margins.ndim == 2:
            return softmax_probabilities(margins)
        positive = finalize_predictions("logistic", margins, 0.0, 0.0)
        return np.column_stack([1.0 - positive, positive])

    @available_if(_has_probabilities)
    def predict_log_proba(self, X) -> np.ndarray:
        """The logarithms of :meth:`predict_proba`."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))


class PolybeamRegressor(RegressorMixin, _PolybeamEstimator):
    """A polybeam learner as a scikit-learn regressor; see the module docstring.

    Parameters
    ----------
    loss : {"squared", "quantile", "poisson"}, default "squared"
        ``squared`` predicts the mean of y; ``quantile`` its ``quantile_tau`` quantile (pinball loss);
        ``poisson`` the mean of counts or rates (y >= 0) as exp(w . x + b).
    quantile_tau : float, optional
        ``loss="quantile"``: the quantile predicted (default 0.5, the median).
    shuffle, random_state, warm_start, verbose
        As :class:`PolybeamClassifier`'s.
    Every other parameter is the :class:`~polybeam.learners.config.LearnerConfig`
    setting of that name, with its default.

    Attributes
    ----------
    config_, learner_, model_, n_features_in_, feature_names_in_
        As :class:`PolybeamClassifier`'s.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2000, 3))
    >>> y = X @ [1.0, -2.0, 0.5] + 3.0
    >>> regressor = PolybeamRegressor(passes=3).fit(X, y)
    >>> regressor.score(X, y) > 0.99
    True
    """

    def __init__(
        self,
        *,
        loss="squared",
        step=_DEFAULTS["step"],
        learning_rate=_DEFAULTS["learning_rate"],
        power_t=_DEFAULTS["power_t"],
        l2=_DEFAULTS["l2"],
        bits=_DEFAULTS["bits"],
        seed=_DEFAULTS["seed"],
        passes=_DEFAULTS["passes"],
        holdout_period=_DEFAULTS["holdout_period"],
        early_terminate=_DEFAULTS["early_terminate"],
        holdout_min_examples=_DEFAULTS["holdout_min_examples"],
        pass_schedule=_DEFAULTS["pass_schedule"],
        small_holdout=_DEFAULTS["small_holdout"],
        bias=_DEFAULTS["bias"],
        center=_DEFAULTS["center"],
        scale_labels=_DEFAULTS["scale_labels"],
        normalized=_DEFAULTS["normalized"],
        safe_updates=_DEFAULTS["safe_updates"],
        gsa_target=_DEFAULTS["gsa_target"],
        gsa_exact=_DEFAULTS["gsa_exact"],
        sparsity=_DEFAULTS["sparsity"],
        gravity=_DEFAULTS["gravity"],
        truncate_every=_DEFAULTS["truncate_every"],
        truncate_threshold=_DEFAULTS["truncate_threshold"],
        expand=_DEFAULTS["expand"],
        alpha=_DEFAULTS["alpha"],
        expand_rule=_DEFAULTS["expand_rule"],
        max_degree=_DEFAULTS["max_degree"],
        expansions=_DEFAULTS["expansions"],
        expand_after=_DEFAULTS["expand_after"],
        apple_guard=_DEFAULTS["apple_guard"],
        examples_per_pass=_DEFAULTS["examples_per_pass"],
        repeat_factors=_DEFAULTS["repeat_factors"],
        interactions=_DEFAULTS["interactions"],
        lbfgs_passes=_DEFAULTS["lbfgs_passes"],
        lbfgs_l2=_DEFAULTS["lbfgs_l2"],
        quantile_tau=_DEFAULTS["quantile_tau"],
        shuffle=True,
        random_state=None,
        warm_start=False,
        verbose=0,
    ):
        self.loss = loss
        self.quantile_tau = quantile_tau
        self.step = step
        self.learning_rate = learning_rate
        self.power_t = power_t
        self.l2 = l2
        self.bits = bits
        self.seed = seed
        self.passes = passes
        self.holdout_period = holdout_period
        self.early_terminate = early_terminate
        self.holdout_min_examples = holdout_min_examples
        self.pass_schedule = pass_schedule
        self.small_holdout = small_holdout
        self.bias = bias
        self.center = center
        self.scale_labels = scale_labels
        self.normalized = normalized
        self.safe_updates = safe_updates
        self.gsa_target = gsa_target
        self.gsa_exact = gsa_exact
        self.sparsity = sparsity
        self.gravity = gravity
        self.truncate_every = truncate_every
        self.truncate_threshold = truncate_threshold
        self.expand = expand
        self.alpha = alpha
        self.expand_rule = expand_rule
        self.max_degree = max_degree
        self.expansions = expansions
        self.expand_after = expand_after
        self.apple_guard = apple_guard
        self.examples_per_pass = examples_per_pass
        self.repeat_factors = repeat_factors
        self.interactions = interactions
        self.lbfgs_passes = lbfgs_passes
        self.lbfgs_l2 = lbfgs_l2
        self.shuffle = shuffle
        self.random_state = random_state
        self.warm_start = warm_start
        self.verbose = verbose

    def _task_config(self) -> LearnerConfig:
        if self.loss not in LOSSES_OF["values"]:
            raise ValueError(
                f"{type(self).__name__}: loss must be one of {', '.join(LOSSES_OF['values'])}; got {self.loss!r} "
                "(for classes use PolybeamClassifier)"
            )
        return self._config()

    def _checked_labels(self, y) -> np.ndarray:
        """``y``, refused in one line where the loss cannot take a label (Poisson: one below 0), as the
        readers refuse it."""
        read = read_labels(np.asarray(y, dtype=np.float64), self.config_.label_kind)
        if not read.good.all():
            first = int(np.flatnonzero(~read.good)[0])
            raise ValueError(f"{type(self).__name__}: y[{first}]: {read.reason(first)} (loss {self.loss!r})")
        return y

    def fit(self, X, y, sample_weight=None):
        """Learn ``passes`` passes over ``(X, y)``, each in a new random order unless ``shuffle=False``, from
        scratch or, with ``warm_start``, going on from the previous fit (``sample_weight``: importance weights)."""
        continues = self._continues()
        label = y
        X, y = self._checked(X, y, reset=not continues, y_numeric=True)
        self.config_ = self._task_config()
        y = self._checked_labels(y)
        if not continues:
            self.input_ = self._input_contract(X, label)
        self._fit(self._batch(X, y, self._weights(sample_weight, X)))
        return self

    def partial_fit(self, X, y, sample_weight=None):
        """Learn one pass over ``(X, y)`` (its rows in a random order unless ``shuffle=False``), going on from
        earlier calls."""
        first = not hasattr(self, "learner_")
        label = y
        X, y = self._checked(X, y, reset=first, y_numeric=True)
        if first:
            self.config_ = self._task_config()
            self.input_ = self._input_contract(X, label)
        y = self._checked_labels(y)
        self._partial_fit(self._batch(X, y, self._weights(sample_weight, X)), first=first)
        return self

    def predict(self, X) -> np.ndarray:
        """Predicted values, clamped to the range of the training labels and 0 (as VW clamps them)."""
        check_is_fitted(self, "model_")
        X = self._checked(X, reset=False)
        return self.model_.predict(self._batch(X))
