"""Declarative rules for settings: what each field of a settings dataclass may hold, said once.

A field declares its rule with :func:`setting` (its default and a :class:`Rule`),
and :func:`check_settings` holds every field of an instance to its rule, with
a message that names the setting and says what it takes. Rules that tie one
setting to another stay with the dataclass that holds both.

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Example:
...     passes: int = setting(1, Rule.whole(low=1))
...     l2: float = setting(0.0, Rule.number(low=0))
...     def __post_init__(self):
...         check_settings(self)
>>> Example(passes=0)
Traceback (most recent call last):
...
ValueError: passes must be a whole number >= 1; got 0
>>> Example(l2=float("nan"))
Traceback (most recent call last):
...
ValueError: l2 must be a finite number; got nan
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Rule:
    """What one setting may hold.

    ``kind``: ``"number"`` (a finite int or float), ``"whole"`` (an integer,
    numpy's too, never a bool) or ``"choice"`` (one of ``choices``). ``low`` /
    ``high`` bound numbers (``open_low`` / ``open_high``: strictly), ``excluded``
    numbers within them are refused all the same; ``optional``
    lets None through; ``message`` replaces the default refusal (formatted with
    ``name`` and ``value``) when the bounds need words of their own.
    """

    kind: str
    low: float | None = None
    high: float | None = None
    open_low: bool = False
    open_high: bool = False
    excluded: tuple = ()
    choices: tuple = ()
    optional: bool = False
    message: str | None = None

    @classmethod
    def number(cls, *, low=None, high=None, open_low=False, open_high=False, optional=False, message=None):
        return cls("number", low, high, open_low, open_high, optional=optional, message=message)

    @classmethod
    def whole(cls, *, low=None, high=None, excluded=(), optional=False, message=None):
        return cls("whole", low, high, excluded=tuple(excluded), optional=optional, message=message)

    @classmethod
    def choice(cls, choices, *, optional: bool = False):
        return cls("choice", choices=tuple(choices), optional=optional)

    def check(self, name: str, value: Any) -> None:
        """Refuse ``value`` for setting ``name`` unless it keeps this rule."""
        if value is None and self.optional:
            return
        if self.kind == "choice":
            if value not in self.choices:
                raise ValueError(f"{name} must be one of {', '.join(self.choices)}; got {value!r}")
            return
        if self.kind == "whole":
            if not is_whole(value) or not self._within(value):
                raise ValueError(self._refusal(name, value, repr(value)))
            return
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(f"{name} must be a finite number; got {value!r}")
        if not self._within(value):
            raise ValueError(self._refusal(name, value, str(value)))

    def _within(self, value) -> bool:
        if self.low is not None and (value <= self.low if self.open_low else value < self.low):
            return False
        if self.high is not None and (value >= self.high if self.open_high else value > self.high):
            return False
        return value not in self.excluded

    def _refusal(self, name: str, value, shown: str) -> str:
        if self.message is not None:
            return self.message.format(name=name, value=value)
        if self.kind == "whole":
            if self.low is not None and self.high is not None:
                bounds = f" from {self.low} to {self.high}"
            else:
                bounds = "" if self.low is None else f" >= {self.low}"
            return f"{name} must be a whole number{bounds}{' (or None)' if self.optional else ''}; got {shown}"
        return f"{name} must be {'>' if self.open_low else '>='} {self.low}; got {shown}"


def setting(default: Any, rule: Rule | None = None, **field_options):
    """A dataclass field with ``default`` and the rule its values keep (``field_options``: ``dataclasses.field``'s)."""
    metadata = {} if rule is None else {"rule": rule}
    return dataclasses.field(default=default, metadata=metadata, **field_options)


def check_settings(settings) -> None:
    """Hold every field of the dataclass instance ``settings`` that declares a rule to it, in field order."""
    for field in dataclasses.fields(settings):
        rule = field.metadata.get("rule")
        if rule is not None:
            rule.check(field.name, getattr(settings, field.name))


def is_whole(value: Any) -> bool:
    """An integer (a numpy one too), not a bool."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)
