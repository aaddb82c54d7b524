"""Apple's stages: when the feature set grows, by how much, and which monomials become parents.

Agarwal et al., "Scalable Nonlinear Learning with Adaptive Polynomial
Expansions", Algorithm 1 and section 3.1: training is cut into epochs; at the
end of epoch k the ``s_k`` heaviest monomials of the current feature set that
are not parents yet become parents, and every later example also carries
``x_i * m`` for each parent m and base feature i it has (see
:mod:`polybeam.learners.expansion`).

* **Schedule.** When the number of training examples is known (a count, or
  passes over a finite input) the paper's 6 epochs (5 expansions) are equally
  spaced over it; otherwise (a stream) expansions come after b, 2b, 4b, ...
  examples (b = 1000 by default), as many as the stages asked for.
* **Size.** ``s_k = (mean base non-zeros per example so far) ** alpha``,
  at least 1; alpha = 1 is the paper's default.
* **Rule.** ``weight``: the heaviest non-parents by weight magnitude.
  ``fallback`` (section 2.4): ``s_k - 1`` by weight plus the heaviest
  non-parent of the smallest degree present, which makes every monomial of
  every degree a parent eventually (risk consistency). ``ssm`` (section 2.3):
  the non-parents with the highest SSM index, an online estimate of
  E[r^2 m^2] / E[m^2] over the epoch (:mod:`polybeam.learners.ssm`).
* **Magnitude.** Learners that normalise features (adaptive and GSA steps
  with ``normalized``) learn, in effect, weights ``w_j * N_j`` of features
  ``x_j / N_j`` (N_j the largest |x_j| seen); monomials are ranked by that
  normalised magnitude ``|w_j| * N_j``, so that the ranking does not depend on
  the units of the features. Plain steps rank by ``|w_j|``. Softmax ranks a
  slot by its largest magnitude over the classes.

>>> ExpansionSchedule(total=600).boundaries()
[100, 200, 300, 400, 500]
>>> ExpansionSchedule(first=1000).boundaries()
[1000, 2000, 4000, 8000, 16000]
>>> expansion_size(mean_nonzeros=49.0, alpha=0.5)
7
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable

import numpy as np

from polybeam.learners.monomials import Monomial

RULES = ("weight", "fallback", "ssm")


@dataclasses.dataclass(frozen=True)
class ExpansionSchedule:
    """Example counts after which the feature set grows (see the module docstring)."""

    total: int | None = None
    stages: int = 5
    first: int = 1000

    def __post_init__(self):
        if self.stages < 0:
            raise ValueError(f"stages must be >= 0; got {self.stages}")
        if self.first < 1:
            raise ValueError(f"the first expansion needs at least one example; got first={self.first}")
        if self.total is not None and self.total < 0:
            raise ValueError(f"total must be >= 0; got {self.total}")

    def boundaries(self) -> list[int]:
        """The example counts (over all passes) at which an epoch ends, ascending and distinct."""
        if self.total is not None:
            epochs = self.stages + 1
            points = [self.total * k // epochs for k in range(1, epochs)]
            return sorted({point for point in points if 0 < point < self.total})
        return [self.first << k for k in range(self.stages)]

    def next_boundary(self, seen: int) -> int | None:
        """The first boundary after ``seen`` examples, or None when every expansion is done."""
        for boundary in self.boundaries():
            if boundary > seen:
                return boundary
        return None


def expansion_size(mean_nonzeros: float, alpha: float) -> int:
    """``s_k``: how many parents one expansion adds."""
    if alpha < 0:
        raise ValueError(f"alpha must be >= 0; got {alpha}")
    if not mean_nonzeros > 0:
        return 1
    return max(1, int(round(mean_nonzeros**alpha)))


def slot_magnitudes(weights: np.ndarray, feature_scale: np.ndarray | None) -> np.ndarray:
    """Each slot's weight magnitude as apple ranks it (normalised when scales are given).

    ``weights`` is (slots,) or (slots, classes); ``feature_scale`` the
    learner's per-slot N_j (empty or None for plain steps).
    """
    magnitude = np.abs(weights)
    if magnitude.ndim == 2:
        magnitude = magnitude.max(axis=1)
    if feature_scale is not None and len(feature_scale):
        magnitude = magnitude * np.where(feature_scale > 0, feature_scale, 1.0)
    return magnitude


def pick_parents(
    magnitudes: np.ndarray,
    monomial_of: Callable[[int], Monomial | None],
    parents: Iterable[Monomial],
    size: int,
    *,
    rule: str = "weight",
    smallest_degree_candidates: Callable[[], Iterable[tuple[float, Monomial]]] | None = None,
) -> list[Monomial]:
    """The next ``size`` parents: non-parents of the heaviest slots (see the module docstring).

    ``magnitudes`` ranks the slots (weight magnitudes; SSM indices for
    ``rule="ssm"``). ``monomial_of(slot)`` names the monomial that owns a slot (None if no
    known monomial does). With ``rule="fallback"``,
    ``smallest_degree_candidates()`` gives (magnitude, monomial) for the known
    monomials; the heaviest non-parent of the smallest degree fills the last
    place.
    """
    if rule not in RULES:
        raise ValueError(f"unknown expansion rule {rule!r}; choose from {', '.join(RULES)}")
    if size < 1:
        return []
    taken = set(parents)
    chosen: list[Monomial] = []
    by_weight = size - 1 if rule == "fallback" else size
    # A full sort of the non-zero slots: five times per training run, a few ms each.
    nonzero = np.flatnonzero(magnitudes)
    for slot in nonzero[np.lexsort((nonzero, -magnitudes[nonzero]))]:  # heaviest first; slot breaks ties
        if len(chosen) == by_weight:
            break
        monomial = monomial_of(int(slot))
        if monomial is not None and monomial not in taken and monomial not in chosen:
            chosen.append(monomial)
    if rule == "fallback" and smallest_degree_candidates is not None:
        remaining = [
            (magnitude, monomial)
            for magnitude, monomial in smallest_degree_candidates()
            if monomial not in taken and monomial not in chosen
        ]
        if remaining:
            lowest = min(monomial.degree for _, monomial in remaining)
            best = max(
                (m for m in remaining if m[1].degree == lowest), key=lambda m: (m[0], [-f for f in m[1].factors])
            )
            chosen.append(best[1])
    return chosen
