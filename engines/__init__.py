"""``python -m engines`` from a checkout, as before: polybeam's engines now ship in the package,
as :mod:`polybeam.engines` (``polybeam engines``); import them from there."""
