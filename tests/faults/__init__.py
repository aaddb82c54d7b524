"""Fault injection for tests: a switch that fails the first attempt of a polybeam step's Nth bundle
(:mod:`tests.faults.switch`), and the hooks that attach it to the production classes from outside the
package, in the test's process or in the worker processes it starts (:mod:`tests.faults.hooks`)."""
