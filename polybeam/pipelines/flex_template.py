"""Dataflow flex templates, generated from a command's options so that they can never drift from the CLI.

``polybeam template --command train --output-dir DIR`` writes what
``gcloud dataflow flex-template build`` needs into DIR:

- ``metadata.json``: the template's name, description and one parameter per
  option of the command, with its label, help, default, type and the regexes
  the console checks a value against before launching;
- ``Dockerfile``: Apache Beam's Python SDK image of the installed Beam
  version as both launcher and worker image, the launcher binary copied in from
  Google's template-launcher base image (``--launcher-image``; default: its
  ``latest`` tag for this Python), polybeam installed from the wheel of the
  running installation, copied into DIR (:mod:`polybeam.pipelines.template_wheel`),
  or from what ``--package`` names;
- ``main.py``: the file ``FLEX_TEMPLATE_PYTHON_PY_FILE`` names; it runs
  :mod:`polybeam.pipelines.template_main`, which submits the job and exits;
- ``README.md``: the build and run commands.

The parameters come from the option schema (:mod:`polybeam.pipelines.option_specs`),
as ``polybeam COMMAND --help`` and the PipelineOptions classes do: their types,
choices, defaults, which are required and which name files or folders, but for
the options a template has no use for (:data:`NOT_IN_TEMPLATES`); a
template for per-key models (``--per-key``) types its model paths as folders
(:data:`PER_KEY_FOLDERS`).

>>> metadata = template_metadata("evaluate")
>>> metadata["name"]
'polybeam-evaluate'
>>> model = next(p for p in metadata["parameters"] if p["name"] == "model")
>>> model["paramType"], model["isOptional"]
('GCS_READ_FILE', False)
>>> fmt = next(p for p in metadata["parameters"] if p["name"] == "format")
>>> fmt["paramType"], fmt["regexes"], "defaultValue" in fmt  # evaluate reads the model's format unless given one
('ENUM', ['^(libsvm|vw|csv|parquet|jsonl|avro)$'], False)
>>> {"no_wait", "quiet"} & {p["name"] for p in metadata["parameters"]}
set()
>>> per_key = {p["name"]: p for p in template_metadata("train", per_key=True)["parameters"]}
>>> per_key["model"]["paramType"], per_key["key"]["isOptional"]
('GCS_WRITE_FOLDER', False)
>>> launcher_image("3.11")
'gcr.io/dataflow-templates-base/python311-template-launcher-base:latest'
"""

from __future__ import annotations

import json
import os
import sys

import polybeam
from polybeam.pipelines import option_specs as specs
from polybeam.pipelines.commands import COMMANDS
from polybeam.pipelines.template_wheel import copy_into, running_wheel

TEMPLATE_COMMANDS = ("train", "evaluate", "predict", "sequence", "timeliness")

# Google's flex-template launcher base image of a Python version; only its launcher binary is copied. Google's
# "Flex Templates base images" reference names the image tagged `latest` the official release it recommends
# (dated tags pin one: --launcher-image REPOSITORY:TAG).
LAUNCHER_REPOSITORY = "gcr.io/dataflow-templates-base/python{version}-template-launcher-base"
LAUNCHER_TAG = "latest"

# Options of the commands that a template leaves out, with why (every other option is a parameter).
# `resume` stays in train's: relaunching a failed job with resume=true continues from its last complete pass
# in checkpoint_dir, which lives in the bucket.
NOT_IN_TEMPLATES = {
    "no_wait": (TEMPLATE_COMMANDS, "a template never waits for its job: the entry point always adds --no-wait"),
    "quiet": (("evaluate", "predict", "sequence", "timeliness"), "only training prints progress lines"),
}

# Path options' parameter types, for the console's pickers, by what the schema says the path names (its
# ``path``; ``written_by``: commands that write what others read, train's --model).
PATH_KINDS = {"read": "GCS_READ_FILE", "write": "GCS_WRITE_FILE", "folder": "GCS_WRITE_FOLDER"}
# A template for per-key models (polybeam template --per-key): these paths are folders of per-key models (an
# index.json and a model per key), and these options are required.
PER_KEY_FOLDERS = {
    "model": "GCS_READ_FOLDER",
    ("train", "model"): "GCS_WRITE_FOLDER",
    ("train", "initial_model"): "GCS_READ_FOLDER",
}
PER_KEY_REQUIRED = {"train": ("key",)}

# Regexes for the console's checks before a launch. They use only what POSIX
# extended regular expressions (egrep), Java (Dataflow's check) and Python read
# alike: anchors, groups, alternation, bracket expressions, ? * +.
NUMBER = "^[-+]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][-+]?[0-9]+)?$"
INTEGER = "^[-+]?[0-9]+$"
BOOLEAN = "^(true|false)$"
# A path may be almost anything; it is not empty and does not start with a
# blank or a dash (a flag swallowed where a path was meant).
PATH = "^[^ -].*$"
PATH_LIST = "^[^ ,-][^,]*(,[^ ,-][^,]*)*$"
NAME_LIST = "^[^,]+(,[^,]+)*$"
NUMBER_OR_AUTO = "^(auto|[-+]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][-+]?[0-9]+)?)$"
KEY = "^(tag|file|namespace:.+|column:.+)$"
_DURATION = "[0-9]+(\\.[0-9]+)?[smhdw]?"
WINDOW = f"^(fixed:{_DURATION}|sliding:{_DURATION},{_DURATION})$"
TIMESTAMP = "^column:.+$"


ACRONYMS = {"csv": "CSV", "vw": "VW", "gsa": "GSA", "l2": "L2"}


def _label(name: str) -> str:
    """``csv_delimiter`` -> ``CSV delimiter``."""
    words = name.split("_")
    return " ".join([ACRONYMS.get(words[0], words[0].capitalize())] + [ACRONYMS.get(w, w) for w in words[1:]])


def _default_text(option: specs.Option) -> str | None:
    if option.flag:
        return "false"
    default = option.default
    if default is None or default == () or default == "":
        return None
    return str(default)


def _path_kind(option: specs.Option, command: str, per_key: bool) -> str | None:
    """A path option's ``paramType`` (see :data:`PATH_KINDS`, :data:`PER_KEY_FOLDERS`), or None."""
    name = option.attribute
    if per_key and PER_KEY_FOLDERS.get((command, name), PER_KEY_FOLDERS.get(name)):
        return PER_KEY_FOLDERS.get((command, name), PER_KEY_FOLDERS.get(name))
    path = "write" if command in option.written_by else option.path
    return PATH_KINDS[path] if path is not None else None


def _kind(option: specs.Option, command: str, per_key: bool = False) -> tuple[str, list[str]]:
    """The parameter's ``paramType`` and regexes."""
    name = option.attribute
    if option.flag:
        return "BOOLEAN", [BOOLEAN]
    if option.choices:
        return "ENUM", ["^(" + "|".join(option.all_choices()) + ")$"]
    if option.type is float:
        return "NUMBER", [NUMBER]
    if option.type is int:
        return "NUMBER", [INTEGER]
    texts = {
        specs.number_or_auto: NUMBER_OR_AUTO,
        specs.key_spec: KEY,
        specs.window_spec: WINDOW,
        specs.timestamp_spec: TIMESTAMP,
    }
    if option.type in texts:
        return "TEXT", [texts[option.type]]
    if name == "reference":  # a prefix file, or a method's name
        return "TEXT", []
    kind = _path_kind(option, command, per_key)
    if option.type is specs.columns:
        if kind is not None and command == "timeliness":  # several files: no single-file picker
            return "TEXT", [PATH_LIST]
        return (kind, [PATH]) if kind is not None else ("TEXT", [NAME_LIST])
    if kind is not None:
        return kind, [PATH]
    if name == "groups":  # predict: the names of the groups available (not a path to it)
        return "TEXT", [NAME_LIST]
    return "TEXT", []


def _parameter(option: specs.Option, command: str, per_key: bool = False) -> dict:
    name = option.attribute
    kind, regexes = _kind(option, command, per_key)
    required = name in specs.required_options(command)
    required = required or (per_key and name in PER_KEY_REQUIRED.get(command, ()))
    help_text = option.help or _label(name)
    if per_key and _path_kind(option, command, True) != _path_kind(option, command, False):
        help_text += " (this template's: a folder of per-key models)"
    if required:
        help_text += " (required)"
    parameter = {
        "name": name,
        "label": _label(name),
        "helpText": help_text,
        "isOptional": not required,
        "paramType": kind,
    }
    if regexes:
        parameter["regexes"] = regexes
    if kind == "ENUM":
        parameter["enumOptions"] = [{"value": choice, "label": choice} for choice in option.all_choices()]
    default = _default_text(option)
    if default is not None:
        parameter["defaultValue"] = default
    return parameter


def in_template(name: str, command: str) -> bool:
    """Whether the option ``name`` of ``command`` is a parameter of its template (see :data:`NOT_IN_TEMPLATES`)."""
    commands, _ = NOT_IN_TEMPLATES.get(name, ((), ""))
    return command not in commands


def template_metadata(command: str, *, per_key: bool = False) -> dict:
    """The flex template's ``metadata.json`` for ``polybeam COMMAND``: one parameter per option it uses;
    ``per_key``: a template for per-key models, whose model paths are folders."""
    if command not in TEMPLATE_COMMANDS:
        raise ValueError(f"no template for polybeam {command}; one of: {', '.join(TEMPLATE_COMMANDS)}")
    parameters = [
        _parameter(option, command, per_key)
        for option in specs.command_options(command)
        if in_template(option.attribute, command)
    ]
    return {
        "name": f"polybeam-{command}" + ("-per-key" if per_key else ""),
        "description": f"polybeam {command}: {COMMANDS[command].description}"
        + (" (per-key models)" if per_key else ""),
        "streaming": False,
        "parameters": parameters,
    }


def boolean_parameters(command: str) -> set[str]:
    """The options of ``command`` that are flags: the launcher passes them as ``--name=true|false``."""
    return {option.attribute for option in specs.command_options(command) if option.flag}


def beam_version() -> str:
    from importlib.metadata import version

    return version("apache-beam")


def launcher_image(python: str | None = None, tag: str = LAUNCHER_TAG) -> str:
    """Google's flex-template launcher base image for ``python`` (default: this one's), e.g. ``3.11``."""
    python = python or f"{sys.version_info.major}.{sys.version_info.minor}"
    return f"{LAUNCHER_REPOSITORY.format(version=python.replace('.', ''))}:{tag}"


def dockerfile(command: str, *, package: str, launcher: str | None = None) -> str:
    """The image's Dockerfile: Beam's SDK image (launcher and worker), the launcher binary from ``launcher``
    (default: :func:`launcher_image`), polybeam (``package``: a wheel file in the build context, or a
    requirement)."""
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    launcher = launcher or launcher_image(python)
    sdk = f"apache/beam_python{python}_sdk:{beam_version()}"
    wheel = os.path.basename(package) if package.endswith(".whl") else None
    install = (
        f"COPY {wheel} /template/\nRUN pip install --no-cache-dir /template/{wheel}"
        if wheel
        else f"RUN pip install --no-cache-dir '{package}'"
    )
    return f"""\
# polybeam {command} as a Dataflow flex template (written by `polybeam template`).
# The Beam SDK image of the Beam version polybeam was installed with serves as
# both the launcher image and the workers' image (--sdk_container_image).
FROM {launcher} AS template_launcher
FROM {sdk}

COPY --from=template_launcher /opt/google/dataflow/python_template_launcher /opt/google/dataflow/python_template_launcher

WORKDIR /template
{install}
COPY main.py /template/main.py

ENV FLEX_TEMPLATE_PYTHON_PY_FILE=/template/main.py
ENV POLYBEAM_TEMPLATE_COMMAND={command}
# Everything is installed in the image: the launcher must not pip-install at launch.
ENV PIP_NO_DEPS=True

# Workers start Beam's boot program; the template service runs the launcher binary itself.
ENTRYPOINT ["/opt/apache/beam/boot"]
"""


MAIN_PY = '''\
"""The flex template's entry point: submit polybeam's job, then exit (the launcher must not wait)."""

import sys

from polybeam.pipelines.template_main import main

sys.exit(main())
'''


def readme(command: str, image: str, metadata: dict) -> str:
    name = metadata["name"]
    required = [p["name"] for p in metadata["parameters"] if not p["isOptional"]]
    model = "gs://BUCKET/models/per-key" if name.endswith("-per-key") else "gs://BUCKET/models/model.bin"
    examples = {
        "input": "gs://BUCKET/data/train-*.libsvm.gz",
        "model": model,
        "output": "gs://BUCKET/out/predictions",
        "groups": "gs://BUCKET/groups.json",
        "prefixes": "gs://BUCKET/out/prefixes.jsonl",
        "key": "column:store",
    }
    parameters = ",".join(f"{name}={examples.get(name, 'VALUE')}" for name in required)
    left_out = ", ".join(
        f"`{option}` ({why})" for option, (commands, why) in NOT_IN_TEMPLATES.items() if command in commands
    )
    return f"""\
# polybeam {command} as a Dataflow flex template

Written by `polybeam template --command {command}`; `metadata.json` lists one
parameter per option of `polybeam {command}` (see `polybeam {command} --help`)
but {left_out}.

Build the image and the template spec (Artifact Registry and a bucket of yours):

```sh
gcloud builds submit --tag {image} .
gcloud dataflow flex-template build gs://BUCKET/templates/{name}.json \\
    --image {image} --sdk-language PYTHON --metadata-file metadata.json
```

Run it (the launcher submits the job and exits; the job writes its JSON report
next to its output, e.g. MODEL.report.json, and its dead letters beside it):

```sh
gcloud dataflow flex-template run {name}-$(date +%Y%m%d-%H%M%S) \\
    --template-file-gcs-location gs://BUCKET/templates/{name}.json \\
    --region REGION --temp-location gs://BUCKET/tmp \\
    --additional-experiments use_runner_v2 \\
    --parameters sdk_container_image={image} \\
    --parameters {parameters}
```

Flags are parameters with the value true or false (`--parameters no_center=true`).
The same entry point runs anywhere Beam runs:
`python -m polybeam.pipelines.template_main {command} --name=value ... --runner=...`.
"""


def write_template(
    command: str,
    output_dir: str,
    *,
    image: str | None = None,
    package: str | None = None,
    launcher: str | None = None,
    per_key: bool = False,
) -> dict:
    """Write ``metadata.json``, ``Dockerfile``, ``main.py`` and ``README.md`` for ``polybeam COMMAND`` into
    ``output_dir``, with the wheel the image installs: ``package`` if it is a wheel file, else (no
    ``package``) the running polybeam's (:func:`~polybeam.pipelines.template_wheel.running_wheel`). A
    ``package`` that is a requirement is what the image pip-installs. Returns what was written."""
    metadata = template_metadata(command, per_key=per_key)
    version = polybeam.__version__
    if package and package.endswith(".whl") and not os.path.isfile(package):
        raise ValueError(f"--package {package}: no such wheel file")
    os.makedirs(output_dir, exist_ok=True)
    if package is None:  # first, so that a template that cannot be built is refused before anything is written
        wheel, origin = running_wheel(output_dir)
    elif package.endswith(".whl"):
        wheel, origin = copy_into(package, output_dir), package
    else:
        wheel, origin = None, package
    image = image or f"REGION-docker.pkg.dev/PROJECT/REPOSITORY/{metadata['name']}:{version}"
    launcher = launcher or launcher_image()
    files = {
        "metadata.json": json.dumps(metadata, indent=2) + "\n",
        "Dockerfile": dockerfile(command, package=wheel or package, launcher=launcher),
        "main.py": MAIN_PY,
        "README.md": readme(command, image, metadata),
    }
    for name, text in files.items():
        with open(os.path.join(output_dir, name), "w", encoding="utf-8") as handle:
            handle.write(text)
    written = sorted(files) + ([os.path.basename(wheel)] if wheel else [])
    return {
        "command": command,
        "output_dir": output_dir,
        "files": written,
        "image": image,
        "launcher": launcher,
        "package": os.path.basename(wheel) if wheel else package,
        "package_from": origin,
        "parameters": len(metadata["parameters"]),
    }
