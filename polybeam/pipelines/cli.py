"""The ``polybeam`` command: train, evaluate, predict, sequence, timeliness, inspect, plot, template, demo, engines.

Every option is a PipelineOptions field (see ``polybeam.pipelines.options``),
so the same names work here, from Python and in templates; any Beam option
(``--runner``, ``--direct_num_workers``, ``--temp_location``, ...) passes
through unchanged. Without ``--runner`` the local FnApiRunner runs the job.
Commands that compute something print one JSON object on the last line of
stdout. A mistake (a bad option, a missing file, input that cannot be read)
is one line on stderr, ``polybeam COMMAND: error: ...``, and exit status 2;
a job that ran and failed says why in one line too, with exit status 1.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import math
import os
import sys
import time
from collections.abc import Sequence

from polybeam.pipelines import logs
from polybeam.pipelines.commands import COMMANDS
from polybeam.pipelines.errors import UsageError
from polybeam.pipelines.option_specs import ALL_FLAGS, command_parser

# File-system errors that mean a path given is wrong (fix how you asked), not that the job failed.
PATH_ERRORS = (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError, FileExistsError)


def one_line(error: BaseException) -> str:
    """An error's message on one line (Beam's own messages may span several: ``Pipeline has validations
    errors:`` and a line per missing option), its lines joined with ``; ``.

    >>> one_line(ValueError("Pipeline has validations errors: \\nMissing option: project.\\nMissing option: region.\\n"))
    'Pipeline has validations errors: Missing option: project; Missing option: region.'
    """
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    text = ""
    for number, line in enumerate(lines):
        part = line if number == len(lines) - 1 else line.removesuffix(".")
        text = part if not text else text + (" " if text.endswith(":") else "; ") + part
    return text or type(error).__name__


def _usage() -> str:
    lines = ["usage: polybeam COMMAND [options]", "", "commands:"]
    width = max(map(len, COMMANDS)) + 1
    lines += [f"  {name:<{width}} {command.description}" for name, command in COMMANDS.items()]
    lines += ["", "polybeam COMMAND --help lists a command's options; polybeam --version the versions."]
    return "\n".join(lines)


def _command_parser(command: str) -> argparse.ArgumentParser:
    return command_parser(
        command,
        description=COMMANDS[command].description,
        epilog="Any Apache Beam pipeline option (--runner, --direct_num_workers, --temp_location, ...) "
        "is passed through; the default runner is the local FnApiRunner.",
    )


class _OneLineParser(argparse.ArgumentParser):
    """A parser whose mistakes are the command's one-line error (``polybeam inspect: error: ...``), not
    argparse's usage block."""

    def error(self, message: str):
        raise UsageError(f"{message} (see {self.prog} --help)")


def _inspect_parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(prog="polybeam inspect", description=COMMANDS["inspect"].description, allow_abbrev=False)
    parser.add_argument(
        "--model", required=True, help="path of the model file, or of a folder of per-key or per-window models"
    )
    parser.add_argument("--key", default=None, help="with a folder of per-key models: the key whose model to show")
    parser.add_argument(
        "--window",
        default=None,
        help="with a folder of models per window: the window whose model to show (its name, window-START-END, or "
        "its start as listed)",
    )
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--top", type=int, default=20, help="how many of the largest weights to list (default: 20)")
    return parser


def _plot_parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(
        prog="polybeam plot",
        description=COMMANDS["plot"].description,
        allow_abbrev=False,
        epilog="With --prefixes, every other option (--format, --alpha, Beam's) goes to polybeam timeliness, "
        "which measures the curves on --input.",
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--model",
        help="a model file: its learning curve (progressive loss at doubling example "
        "counts), non-zero weights over time and non-zero weights by degree",
    )
    source.add_argument(
        "--prefixes",
        help="comma-separated anytime prefix files (polybeam sequence --output): "
        "held-out explained variance against cost, measured on --input",
    )
    parser.add_argument("--input", help="with --prefixes: held-out examples")
    parser.add_argument(
        "--output",
        default=None,
        help="the PNG to write (default: MODEL.learning.png, or anytime.png beside the first prefix file)",
    )
    return parser


def _run_plot(argv: Sequence[str]) -> int:
    args, rest = _plot_parser().parse_known_args(list(argv))
    if args.model:
        if rest:
            raise UsageError(f"unrecognised arguments with --model: {' '.join(rest)}")
        from polybeam.pipelines.plots import check_plotting, plot_model
        from polybeam.pipelines.written_paths import check_folder_exists
        from polybeam.transforms.model_io import read_model

        check_plotting()
        model = read_model(args.model)
        output = args.output or f"{args.model}.learning.png"
        check_folder_exists(output, "--output")
        plot_model(model, output, title=args.model)
        points = len(model.metadata.get("learning_curve", []))
        print(f"learning curve ({points} points), non-zeros and weights by degree drawn in {output}")
        _print_json({"model": args.model, "plot": output, "points": points})
        return 0
    if not args.input:
        raise UsageError("polybeam plot --prefixes needs --input (the held-out examples to measure the curves on)")
    output = args.output or os.path.join(os.path.dirname(args.prefixes.split(",")[0]) or ".", "anytime.png")
    return main(["timeliness", "--input", args.input, "--prefixes", args.prefixes, "--plot", output, *rest])


def _template_parser() -> argparse.ArgumentParser:
    from polybeam.pipelines.flex_template import TEMPLATE_COMMANDS, launcher_image

    parser = _OneLineParser(prog="polybeam template", description=COMMANDS["template"].description, allow_abbrev=False)
    parser.add_argument("--command", required=True, choices=TEMPLATE_COMMANDS, help="the command the template runs")
    parser.add_argument(
        "--output-dir",
        "--output_dir",
        dest="output_dir",
        required=True,
        help="folder for metadata.json, Dockerfile, main.py, README.md and the wheel (the image's build context)",
    )
    parser.add_argument(
        "--image",
        default=None,
        help="the image's name, for the README's build and run commands (default: "
        "REGION-docker.pkg.dev/PROJECT/REPOSITORY/polybeam-COMMAND:VERSION)",
    )
    parser.add_argument(
        "--package",
        default=None,
        help="what the image pip-installs: a local wheel file, copied into the folder, or a "
        "requirement an index serves (default: the wheel of the running polybeam, built from "
        "its source tree or taken from its installation, copied into the folder)",
    )
    parser.add_argument(
        "--launcher-image",
        "--launcher_image",
        dest="launcher_image",
        default=None,
        help="Google's flex-template launcher base image the launcher binary is copied from "
        f"(default: {launcher_image()}, the release Google recommends; a dated tag pins one)",
    )
    parser.add_argument(
        "--launcher-tag",
        "--launcher_tag",
        dest="launcher_tag",
        default=None,
        help="another tag of the default launcher image (e.g. a dated one)",
    )
    parser.add_argument(
        "--per-key",
        "--per_key",
        dest="per_key",
        action="store_true",
        help="a template for per-key models: its model paths are folders (train writes one, "
        "evaluate and predict read one) and train requires key",
    )
    return parser


def _run_template(argv: Sequence[str]) -> int:
    from polybeam.pipelines.flex_template import launcher_image, write_template
    from polybeam.pipelines.written_paths import check_folder_exists

    args = _template_parser().parse_args(list(argv))
    check_folder_exists(args.output_dir, "--output-dir")
    if args.launcher_image and args.launcher_tag:
        raise UsageError("polybeam template: give --launcher-image or --launcher-tag, not both")
    launcher = args.launcher_image or (launcher_image(tag=args.launcher_tag) if args.launcher_tag else None)
    written = write_template(
        args.command, args.output_dir, image=args.image, package=args.package, launcher=launcher, per_key=args.per_key
    )
    print(
        f"flex template of polybeam {args.command} ({written['parameters']} parameters) written to "
        f"{args.output_dir}: {', '.join(written['files'])} (polybeam: {written['package_from']}); "
        "see its README.md to build and run it"
    )
    _print_json(written)
    return 0


def runner_argument(argv: Sequence[str]) -> str | None:
    """The value of the last ``--runner X`` or ``--runner=X`` in ``argv`` (argparse keeps the last), or None.

    >>> runner_argument(["--input", "a", "--runner", "DataflowRunner", "--runner=my.module.MyRunner"])
    'my.module.MyRunner'
    """
    found = None
    for position, arg in enumerate(argv):
        if arg == "--runner" and position + 1 < len(argv):
            found = argv[position + 1]
        elif arg.startswith("--runner="):
            found = arg.partition("=")[2]
    return found


def import_runner_module(argv: Sequence[str]) -> None:
    """Import the module of a runner named by its dotted path (``--runner some.module.SomeRunner``).

    Beam knows a PipelineOptions class once its module is imported, and Beam itself imports a
    dotted runner's module only when the pipeline runs: the options that module defines (say, the
    runner's own settings) would be refused as unknown when the arguments are checked before that.
    """
    runner = runner_argument(argv)
    if not runner or "." not in runner:
        return
    module = runner.rpartition(".")[0]
    try:
        importlib.import_module(module)
    except Exception as error:  # any failure of the import (missing module, its own ImportError, ...)
        raise UsageError(f"--runner {runner}: cannot import {module}: {type(error).__name__}: {error}") from None


class _EveryOptionParser(argparse.ArgumentParser):
    """A parser that takes every registered PipelineOptions class's options, to tell what nobody knows (Beam's own
    parser adds ``add_value_provider_argument``, which some options classes call; its value's type does not matter
    here)."""

    def add_value_provider_argument(self, *args, **kwargs):
        self.add_argument(*args, **kwargs)


def _check_arguments(command: str, argv: Sequence[str]) -> None:
    """Fail fast on a bad value of one of the command's options, on options nobody knows, and on polybeam options
    the command does not take."""
    from apache_beam.options.pipeline_options import PipelineOptions

    import polybeam.pipelines.options  # noqa: F401  (registers polybeam's PipelineOptions classes with Beam)

    own_parser = _command_parser(command)
    own_parser.exit_on_error = False
    try:  # a bad value of one of our options: say so in one line, not with Beam's whole usage
        _, rest = own_parser.parse_known_args(list(argv))
    except argparse.ArgumentError as error:
        raise UsageError(f"{error} (see polybeam {command} --help)") from None

    everything = _EveryOptionParser(allow_abbrev=False, add_help=False, exit_on_error=False)
    for options_class in {str(c): c for c in PipelineOptions.__subclasses__()}.values():
        options_class._add_argparse_args(everything)
    try:
        _, unknown = everything.parse_known_args(rest)
    except argparse.ArgumentError as error:
        raise UsageError(f"{error} (see polybeam {command} --help)") from None
    if unknown:
        raise UsageError(f"unrecognised arguments: {' '.join(unknown)} (see polybeam {command} --help)")
    for arg in rest:  # what the command's parser left: Beam's options, or other commands' polybeam options
        flag = arg.partition("=")[0]
        if flag in ALL_FLAGS:
            raise UsageError(f"{flag} does not apply to polybeam {command} (see polybeam {command} --help)")


def _skip_ipython_probe() -> None:
    """Tell Beam it is not in IPython without importing IPython to ask.

    Beam asks whether it runs in IPython when a pipeline applies a transform and
    when it runs (``interactive_utils.is_in_ipython``), by importing IPython and
    calling ``get_ipython()``: where IPython is installed, that import costs about
    0.3 s of every command. A session exists only once IPython is imported, so
    the answer is the same without the import.
    """
    from apache_beam import pipeline
    from apache_beam.utils import interactive_utils

    probe = interactive_utils.is_in_ipython
    if getattr(probe, "skips_import", False):
        return

    def is_in_ipython() -> bool:
        return "IPython" in sys.modules and probe()

    is_in_ipython.skips_import = True
    interactive_utils.is_in_ipython = pipeline.is_in_ipython = is_in_ipython


# The most keys whose metrics the last line of stdout carries: past it, the line counts them and names the
# report file that holds them (a million keys' metrics were 110 MB of one line).
STDOUT_KEYS = 10_000


def _print_json(report: dict) -> None:
    from polybeam.transforms.files import json_document  # (NaN, which JSON cannot carry, as null)

    print(json_document(stdout_report(report), None))


def stdout_report(report: dict) -> dict:
    """What the last line of stdout carries of ``report``: all of it, but per-key metrics of more than
    :data:`STDOUT_KEYS` keys, which stay in the report file (``keys_scored`` counts them, ``keys_in`` names it).

    >>> stdout_report({"loss": 0.5, "keys": {"a": {"loss": 0.4}}, "report": "r.json"})["keys"]
    {'a': {'loss': 0.4}}
    >>> line = stdout_report({"keys": {str(k): {} for k in range(STDOUT_KEYS + 1)}, "report": "r.json"})
    >>> line
    {'report': 'r.json', 'keys_scored': 10001, 'keys_in': 'r.json'}
    """
    keys = report.get("keys")
    if not isinstance(keys, dict) or len(keys) <= STDOUT_KEYS:
        return report
    rest = {name: value for name, value in report.items() if name != "keys"}
    return {**rest, "keys_scored": len(keys), "keys_in": report.get("report")}


def describe_versions(folder: str, index: list[dict]) -> str:
    """``inspect``'s table of a streaming model folder's versions (the newest last).

    >>> print(describe_versions("out", [{"version": 1, "examples": 800, "learned": 800, "watermark": 0.0,
    ...     "progressive_loss": 0.5, "created": 2.5, "model": "versions/000001.model"}]))
    out: 1 model versions (train --watch); evaluate and predict use the latest, --version N another
    version  examples  learned  progressive loss  watermark (UTC)      written (UTC)        model
          1       800      800          0.500000  1970-01-01 00:00:00  1970-01-01 00:00:02  versions/000001.model
    """

    def utc(seconds):
        return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(seconds)) if seconds is not None else "-" * 19

    lines = [
        f"{folder}: {len(index)} model versions (train --watch); evaluate and predict use the latest, --version N "
        "another",
        f"{'version':>7}  {'examples':>8}  {'learned':>7}  {'progressive loss':>16}  {'watermark (UTC)':<19}  "
        f"{'written (UTC)':<19}  model",
    ]
    for entry in index:
        loss = entry.get("progressive_loss")
        lines.append(
            f"{entry['version']:>7}  {entry['examples']:>8}  {entry['learned']:>7}  "
            f"{(f'{loss:.6f}' if loss is not None else 'n/a'):>16}  {utc(entry.get('watermark'))}  "
            f"{utc(entry.get('created'))}  {entry['model']}"
        )
    return "\n".join(lines)


def _is_folder(path: str) -> bool:
    """Whether ``path`` is a folder of per-key models (it holds an index.json)."""
    from polybeam.transforms.files import exists
    from polybeam.transforms.keyed_files import INDEX_NAME, join

    return exists(join(path, INDEX_NAME))


def _run_inspect(argv: Sequence[str]) -> int:
    from polybeam.pipelines.windowed import is_windowed_folder
    from polybeam.transforms.model_io import read_model

    args = _inspect_parser().parse_args(list(argv))
    from polybeam.transforms import version_folder

    if version_folder.is_version_folder(args.model):
        if args.window is not None or args.key is not None:
            raise UsageError(f"{args.model} holds the versions of one model: leave out --window and --key")
        index = version_folder.read_index(args.model)
        if args.json:
            _print_json({"versions": index, "latest": version_folder.read_latest(args.model)})
            return 0
        print(describe_versions(args.model, index))
        return 0
    if args.window is not None and not is_windowed_folder(args.model):
        raise UsageError(f"--window applies to a folder of models per window; {args.model} is not one")
    if is_windowed_folder(args.model):
        from polybeam.pipelines.windowed_summary import describe, window_model, windowed_summary

        if args.window is None:
            if args.key is not None:
                raise UsageError(f"{args.model} holds models per window: give --window NAME with --key")
            summary = windowed_summary(args.model)
            if args.json:
                _print_json(summary)
            else:
                print(describe(summary))
            return 0
        model = window_model(args.model, args.window, args.key)
    elif _is_folder(args.model):
        from polybeam.pipelines.keyed_summary import describe, keyed_summary
        from polybeam.transforms.keyed_files import KeyedFolder

        if args.key is None:
            summary = keyed_summary(args.model, top=args.top)
            if args.json:
                _print_json(summary)
            else:
                print(describe(summary))
            return 0
        model = KeyedFolder(args.model).model(args.key)
        if model is None:
            raise UsageError(f"{args.model} has no model for key {args.key!r}")
    elif args.key is not None:
        raise UsageError(f"--key applies to a folder of per-key models; {args.model} is a model file")
    else:
        model = read_model(args.model)
    if args.json:
        _print_json(model.summary_dict(args.top))
        return 0
    print(model.summary(args.top))
    if model.input:
        from polybeam.pipelines.model_input import recorded_input

        print(f"evaluate and predict read input as: {recorded_input(model.input, args.model).describe()}")
    return 0


def _describe_train(report: dict) -> str:
    from polybeam.formats.records import ReadCounts

    counts = ReadCounts.from_dict(report)
    if report.get("window_spec"):
        return _describe_windowed_train(report, counts)
    if report.get("watch") is not None:
        return _describe_stream_train(report, counts)
    loss = report.get("progressive_loss")
    if report.get("key_model") == "shared":
        trained = f"one shared model for {report.get('keys')} keys ({report['key']}) written to {report['model']}"
    elif report.get("key"):
        trained = f"{report['keys']} models, one per key ({report['key']}), in {report['model']}"
    else:
        trained = f"model written to {report['model']}"
    lines = list(report.get("input_notes") or []) + [
        f"read: {counts.describe()}",
        *_warning_lines(report),
        f"progressive validation loss: {loss:.6g}"
        if loss is not None and math.isfinite(loss)
        else "progressive validation loss: n/a (no examples)",
    ]
    lines += _kept_model_lines(report)
    lines += [
        f"non-zero weights: {report['nonzero_weights']}",
        f"{trained}; dead letters to {report['dead_letter_file']}",
    ]
    if report.get("resumed_from_pass"):
        lines.append(f"resumed after pass {report['resumed_from_pass']} from {report['checkpoint_dir']}")
    elif report.get("checkpoint_dir"):
        lines.append(f"learner state after each pass in {report['checkpoint_dir']}")
    if report.get("in_memory") and (report.get("learners_per_pass") or 1) > 1:
        lines.append(f"passes in one worker's memory: {report.get('in_memory_reason')}, each share by its own learner")
    elif report.get("in_memory"):
        lines.append(f"passes in one worker's memory: {report.get('in_memory_reason')} (--in-memory off: streaming)")
    lines += [f"report: {report['report']}", f"wall time: {report['wall_seconds']:.1f} s"]
    return "\n".join(lines)


def _describe_stream_train(report: dict, counts) -> str:
    """Train's lines for a streaming job (``--watch``): what it read, the versions it wrote, why it ended.

    >>> from polybeam.formats.records import ReadCounts
    >>> print(_describe_stream_train({"files": 3, "versions": 2, "latest_version": 7, "examples_learned": 1500,
    ...     "progressive_loss": 0.51, "model": "out", "stopped_by": "idle", "report": "out/report.json",
    ...     "dead_letter_folder": "out/files", "wall_seconds": 16.0}, ReadCounts(1500, 1500, 0, 0)))
    read 3 files: records read 1500 = examples 1500 + dead letters 0 + skipped 0 (ok)
    2 model versions written to out (the latest: version 7, 1500 examples learned in all)
    progressive validation loss since the version before it: 0.51
    ended: idle; files read and their dead letters in out/files
    report: out/report.json
    wall time: 16.0 s
    """
    loss = report.get("progressive_loss")
    return "\n".join(
        [
            *(report.get("input_notes") or []),
            f"read {report['files']} files: {counts.describe()}",
            f"{report['versions']} model versions written to {report['model']} (the latest: version "
            f"{report['latest_version']}, {report['examples_learned']} examples learned in all)",
            f"progressive validation loss since the version before it: {loss:.6g}"
            if loss is not None
            else "progressive validation loss: n/a (no examples)",
            f"ended: {report['stopped_by']}; files read and their dead letters in {report['dead_letter_folder']}",
            f"report: {report['report']}",
            f"wall time: {report['wall_seconds']:.1f} s",
        ]
    )


def _describe_windowed_train(report: dict, counts) -> str:
    """Train's lines for models per window: a line per window (its examples, keys and progressive loss)."""
    lines = [f"read: {counts.describe()}", *_warning_lines(report), f"windows ({report['window_spec']}):"]
    for name, entry in report.get("windows", {}).items():
        loss = entry.get("progressive_loss")
        keys = f", {entry['keys']} keys" if "keys" in entry else ""
        lines.append(
            f"  {entry['start']} .. {entry['end']}: {entry.get('examples')} examples{keys}, progressive loss {loss:.6g}"
            if loss is not None
            else f"  {name}: {entry.get('examples')} examples{keys}"
        )
    lines += [
        f"{len(report.get('windows', {}))} windows of models in {report['model']} (index.json lists them); "
        f"dead letters to {report['dead_letter_file']}",
        f"report: {report['report']}",
        f"wall time: {report['wall_seconds']:.1f} s",
    ]
    return "\n".join(lines)


def _warning_lines(report: dict) -> list[str]:
    """A line per warning of the report (train: labels that come sorted)."""
    return [f"warning: {warning}" for warning in report.get("warnings") or ()]


def _kept_model_lines(report: dict) -> list[str]:
    """What train kept and why: the model's kind, apple's guard and the passes' holdout."""
    from polybeam.learners.model import guard_line, holdout_line

    lines = []
    if report.get("model_kind"):
        lines.append(f"model: {report['model_kind']}")
    if report.get("apple_guard"):
        lines.append(guard_line(report["apple_guard"]))
    holdout = report.get("holdout")
    if holdout and holdout.get("passes"):
        lines.append(holdout_line(holdout))
    elif holdout and "keys_judged" in holdout:
        lines.append(
            f"holdout: {holdout['keys_judged']} keys judged on their held-out examples, "
            f"{holdout['keys_stopped_early']} stopped early; {holdout['keys_released']} held out too few "
            "to judge by and learned every example after their first pass"
        )
    finishing = report.get("lbfgs")
    if finishing:
        lines.append(finishing_line(finishing))
    return lines


def finishing_line(finishing: dict) -> str:
    """The L-BFGS finishing stage's line of a report: what it did, why it ran, what it kept and its time.

    >>> print(finishing_line({"evaluations": 5, "kept": "lbfgs", "objective": [320.5, 301.25], "l2": 1.0,
    ...     "online_holdout_loss": 0.52, "holdout_loss": 0.47, "why": "each pass averaged 64 learners",
    ...     "seconds": 3.5}))
    L-BFGS finishing stage (each pass averaged 64 learners): 5 passes, objective 320.5 -> 301.25 (lbfgs_l2 1; held-out loss 0.52 online -> 0.47), 3.5 s
    >>> print(finishing_line({"evaluations": 3, "kept": "lbfgs", "objective": [9.5, 9.0], "l2": 40.0,
    ...     "toward": "online", "weighed_by": "curvature", "strength": 0.1}))
    L-BFGS finishing stage: 3 passes, objective 9.5 -> 9 (pulled toward the online model, 0.1 per example weighed by curvature)
    """
    from polybeam.learners.model import unjudged_finishing_line

    why = f" ({finishing['why']})" if finishing.get("why") not in (None, "asked for") else ""
    took = f", {finishing['seconds']:.3g} s" if finishing.get("seconds") is not None else ""
    if finishing.get("kept") == "online":
        return f"L-BFGS finishing stage{why}: {finishing['evaluations']} passes{took}; {unjudged_finishing_line(finishing)}"
    objective = finishing.get("objective") or []
    if not objective:
        return f"L-BFGS finishing stage{why}: {finishing['evaluations']} passes{took}"
    held = finishing.get("holdout_loss")
    judged = (
        f"; held-out loss {finishing['online_holdout_loss']:.6g} online -> {held:.6g}"
        if held is not None and finishing.get("online_holdout_loss") is not None
        else ""
    )
    penalty = (
        f"pulled toward the online model, {finishing['strength']:g} per example weighed by {finishing['weighed_by']}"
        if finishing.get("toward") == "online"
        else f"lbfgs_l2 {finishing['l2']:g}"
    )
    return (
        f"L-BFGS finishing stage{why}: {finishing['evaluations']} passes, objective {objective[0]:.6g} -> "
        f"{objective[-1]:.6g} ({penalty}{judged}){took}"
    )


def _describe_predict(report: dict) -> str:
    """Predict's lines: what was read (as train says it), what was predicted and what was not, where it went."""
    from polybeam.formats.records import ReadCounts

    unrouted = report.get("examples_without_model", 0)
    # The report counts examples without a model among the dead letters; the read itself read them.
    read = ReadCounts.from_dict(report)
    read = ReadCounts(read.records, read.examples + unrouted, read.dead_letters - unrouted, read.skipped)
    source = report.get("prefixes") or report.get("model")
    kind = f" ({report['predictions']})" if report.get("predictions") else ""
    lines = [
        f"read: {read.describe()}",
        f"predicted {report['examples']} of {read.examples} examples{kind} with {source}",
    ]
    if unrouted:
        lines.append(
            f"{unrouted} of {read.examples} examples unpredicted: their key has no model (--fallback-model names one "
            "for them); they are in the dead letters"
        )
    if read.dead_letters:
        lines.append(f"{read.dead_letters} records could not be read (dead letters)")
    files = report["prediction_files"]
    lines.append(
        "predictions written to standard output" if files == ["-"] else f"predictions written to {', '.join(files)}"
    )
    if report.get("dead_letter_file"):
        lines.append(f"dead letters to {report['dead_letter_file']}")
    if report.get("report"):
        lines.append(f"report: {report['report']}")
    lines.append(f"wall time: {report['wall_seconds']:.1f} s")
    return "\n".join(lines)


def _describe_launch(report: dict) -> str:
    where = ", ".join(f"{name} {path}" for name, path in report["outputs"].items() if path)
    lines = [
        f"launched polybeam {report['command']} as job {report['job_id']} on {report['runner'] or 'FnApiRunner'} "
        f"({report['state']}); it writes its report to {report['report']}",
        f"outputs: {where}",
    ]
    if report.get("log"):
        lines.append(f"the detached local job logs to {report['log']}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None, *, freeze: bool | None = None) -> int:
    """Run ``polybeam`` with ``argv`` (default: the command line); the exit status.

    ``freeze`` (default: whether ``argv`` is the command line's) moves the objects alive before and
    after the job out of the garbage collector's view (``gc.freeze``), for good: right for the
    command's own process, which ends with the job; a caller that runs jobs in its own process
    (tests, a notebook, a service) would keep every job's leftovers, 35-50 MB a softmax job on the
    satellite data (its side inputs' learners), job after job.
    """
    freezes = argv is None if freeze is None else freeze
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(_usage())
        return 0 if argv else 2
    if argv[0] in ("--version", "-V", "version"):
        from polybeam.versions import version_line

        print(version_line())
        return 0
    command, rest = argv[0], argv[1:]
    if command not in COMMANDS:
        print(f"polybeam: error: unknown command {command!r} (polybeam --help lists them)", file=sys.stderr)
        return 2
    if command == "engines":
        from polybeam.engines.command import main as engines

        try:
            return engines(rest, prog="polybeam engines")
        except SystemExit as done:  # its --help, or a mistake it has said in one line
            return done.code if isinstance(done.code, int) else 2
    if any(arg in ("-h", "--help") for arg in rest):
        parsers = {"inspect": _inspect_parser, "template": _template_parser, "plot": _plot_parser}
        parsers.get(command, lambda: _command_parser(command))().print_help()
        return 0
    logs.configure()
    from polybeam.formats.acceptance import InputRejected
    from polybeam.learners.model import ModelFileError
    from polybeam.pipelines.launch import JobFailed

    try:
        if command == "inspect":
            return _run_inspect(rest)
        if command == "template":
            return _run_template(rest)
        if command == "plot":
            return _run_plot(rest)
        import_runner_module(rest)  # before the check: its PipelineOptions classes name options too
        _check_arguments(command, rest)
        _skip_ipython_probe()
        from apache_beam.options.pipeline_options import PipelineOptions

        runner = COMMANDS[command].run_function()
        from polybeam.pipelines import forked_workers

        # Local workers may be forked from the command's process, unless threads other than
        # polybeam's own run in it (main called from a process that ran pipelines over gRPC).
        forked_workers.ENABLED = forked_workers.safe_to_fork()
        # Beam and numba leave ~10^6 long-lived objects behind at import; moving
        # them out of the collector's view saves about a second of full
        # collections on a large job.
        if freezes:
            gc.freeze()
        try:
            report = runner(PipelineOptions(rest))
        finally:
            forked_workers.ENABLED = False
    except BrokenPipeError:  # stdout closed early (polybeam inspect ... | head): nothing more to say
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # (so that exiting flushes nowhere)
        except (OSError, ValueError):  # a caller's stdout without a file descriptor
            pass
        return 141  # as a shell reports a command ended by SIGPIPE
    except InputRejected as error:  # the job's input check refused its read: a line, then the reasons indented
        print(f"polybeam {command}: error: {error}", file=sys.stderr)
        return 1
    except (UsageError, ModelFileError, ValueError, MemoryError, *PATH_ERRORS) as error:
        print(f"polybeam {command}: error: {one_line(error)}", file=sys.stderr)
        return 2
    except (JobFailed, OSError) as error:  # the job ran and failed (an OSError: a disk, a network, ...)
        print(f"polybeam {command}: error: {one_line(error)}", file=sys.stderr)
        return 1
    # With the predictions on standard output, what the command says goes to standard error.
    if report.get("output") == "-":
        with contextlib.redirect_stdout(sys.stderr):
            return _tell(command, report, freezes)
    return _tell(command, report, freezes)


def _tell(command: str, report: dict, freezes: bool) -> int:
    """Print what a command did (a few lines, then its report as JSON on the last line); exit status 0."""
    if "job_id" in report:  # launched, not waited for
        print(_describe_launch(report))
    elif command == "demo":
        from polybeam.pipelines.demo import describe

        print(describe(report, report["learner"]["bits"]))
    elif command == "train":
        print(_describe_train(report))
    elif command == "evaluate":
        from polybeam.pipelines.evaluation_summary import describe_evaluation

        print(describe_evaluation(report))
    elif command == "predict":
        print(_describe_predict(report))
    elif command in ("sequence", "timeliness"):
        from polybeam.pipelines import anytime

        print(anytime.describe(report))
    _print_json(report)
    # Nothing after this needs collecting: skip the teardown's full collection.
    if freezes:
        gc.freeze()
    return 0


if __name__ == "__main__":
    sys.exit(main())
