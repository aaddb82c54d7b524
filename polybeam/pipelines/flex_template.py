"""Dataflow flex templates, generated from a command's options so that they can never drift from the CLI.

``polybeam template --command train --output-dir DIR`` writes what
``gcloud dataflow flex-template build`` needs into DIR:

- ``metadata.json``: the template's name, description and one parameter per
  option of the command, with its label, help, default, type and the regexes
  the console checks a value against before launching;
- ``Dockerfile``: Apache Beam's Python SDK image of the installed Beam
  version as both launcher and worker image, the launcher binary copied in from
  Google's template-launcher base image (pinned tags), polybeam installed;
- ``main.py``: the file ``FLEX_TEMPLATE_PYTHON_PY_FILE`` names; it runs
  :mod:`polybeam.pipelines.template_main`, which submits the job and exits;
- ``README.md``: the build and run commands.

The parameters come from the option schema (:mod:`polybeam.pipelines.option_specs`),
as ``polybeam COMMAND --help`` and the PipelineOptions classes do: their types,
choices, defaults, which are required and which name files or folders.

>>> metadata = template_metadata("evaluate")
>>> metadata["name"]
'polybeam-evaluate'
>>> model = next(p for p in metadata["parameters"] if p["name"] == "model")
>>> model["paramType"], model["isOptional"]
('GCS_READ_FILE', False)
>>> fmt = next(p for p in metadata["parameters"] if p["name"] == "format")
>>> fmt["paramType"], fmt["regexes"], "defaultValue" in fmt  # evaluate reads the model's format unless given one
('ENUM', ['^(libsvm|vw|csv|parquet)$'], False)
"""

from __future__ import annotations

import json
import os
import shutil
import sys

import polybeam
from polybeam.pipelines import option_specs as specs
from polybeam.pipelines.commands import COMMANDS

TEMPLATE_COMMANDS = ("train", "evaluate", "predict", "sequence", "timeliness")

# Google's template-launcher base image, pinned: only its launcher binary is copied.
LAUNCHER_TAG = "20230622_RC00"

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
        # A template does not wait for its job (Dataflow's launcher requirement).
        return "true" if option.attribute == "no_wait" else "false"
    default = option.default
    if default is None or default == () or default == "":
        return None
    return str(default)


# The console's file pickers, by what a path option names (the schema's ``path``).
PATH_TYPES = {"read": "GCS_READ_FILE", "write": "GCS_WRITE_FILE", "folder": "GCS_WRITE_FOLDER"}


def _kind(option: specs.Option, command: str) -> tuple[str, list[str]]:
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
    texts = {specs.number_or_auto: NUMBER_OR_AUTO, specs.key_spec: KEY, specs.window_spec: WINDOW,
             specs.timestamp_spec: TIMESTAMP}  # fmt: skip
    if option.type in texts:
        return "TEXT", [texts[option.type]]
    if name == "reference":  # a prefix file, or a method's name
        return "TEXT", []
    path = "write" if command in option.written_by else option.path  # train writes --model; others read it
    if option.type is specs.columns:
        if path is not None and command == "timeliness":  # several files: no single-file picker
            return "TEXT", [PATH_LIST]
        return (PATH_TYPES[path], [PATH]) if path is not None else ("TEXT", [NAME_LIST])
    if path is not None:
        return PATH_TYPES[path], [PATH]
    if name == "groups":  # predict: the names of the groups available
        return "TEXT", [NAME_LIST]
    return "TEXT", []


def _parameter(option: specs.Option, command: str) -> dict:
    name = option.attribute
    kind, regexes = _kind(option, command)
    required = name in specs.required_options(command)
    help_text = option.help or _label(name)
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


def template_metadata(command: str) -> dict:
    """The flex template's ``metadata.json`` for ``polybeam COMMAND``: one parameter per option."""
    if command not in TEMPLATE_COMMANDS:
        raise ValueError(f"no template for polybeam {command}; one of: {', '.join(TEMPLATE_COMMANDS)}")
    parameters = [_parameter(option, command) for option in specs.command_options(command)]
    return {
        "name": f"polybeam-{command}",
        "description": f"polybeam {command}: {COMMANDS[command].description}",
        "streaming": False,
        "parameters": parameters,
    }


def boolean_parameters(command: str) -> set[str]:
    """The options of ``command`` that are flags: the launcher passes them as ``--name=true|false``."""
    return {option.attribute for option in specs.command_options(command) if option.flag}


def beam_version() -> str:
    from importlib.metadata import version

    return version("apache-beam")


def dockerfile(command: str, *, package: str, launcher_tag: str = LAUNCHER_TAG) -> str:
    """The image's Dockerfile: Beam's SDK image (launcher and worker), the launcher binary, polybeam."""
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    launcher = f"gcr.io/dataflow-templates-base/python{python.replace('.', '')}-template-launcher-base:{launcher_tag}"
    sdk = f"apache/beam_python{python}_sdk:{beam_version()}"
    wheel = os.path.basename(package) if package.endswith(".whl") else None
    install = (f"COPY {wheel} /template/\nRUN pip install --no-cache-dir /template/{wheel}" if wheel
               else f"RUN pip install --no-cache-dir '{package}'")  # fmt: skip
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
    required = [p["name"] for p in metadata["parameters"] if not p["isOptional"]]
    examples = {"input": "gs://BUCKET/data/train-*.libsvm.gz", "model": "gs://BUCKET/models/model.bin",
                "output": "gs://BUCKET/out/predictions", "groups": "gs://BUCKET/groups.json",
                "prefixes": "gs://BUCKET/out/prefixes.jsonl"}  # fmt: skip
    parameters = ",".join(f"{name}={examples.get(name, 'VALUE')}" for name in required)
    return f"""\
# polybeam {command} as a Dataflow flex template

Written by `polybeam template --command {command}`; `metadata.json` lists one
parameter per option of `polybeam {command}` (see `polybeam {command} --help`).

Build the image and the template spec (Artifact Registry and a bucket of yours):

```sh
gcloud builds submit --tag {image} .
gcloud dataflow flex-template build gs://BUCKET/templates/polybeam-{command}.json \\
    --image {image} --sdk-language PYTHON --metadata-file metadata.json
```

Run it (the launcher submits the job and exits; the job writes its JSON report
next to its output, e.g. MODEL.report.json, and its dead letters beside it):

```sh
gcloud dataflow flex-template run polybeam-{command}-$(date +%Y%m%d-%H%M%S) \\
    --template-file-gcs-location gs://BUCKET/templates/polybeam-{command}.json \\
    --region REGION --temp-location gs://BUCKET/tmp \\
    --additional-experiments use_runner_v2 \\
    --parameters sdk_container_image={image} \\
    --parameters {parameters}
```

Flags are parameters with the value true or false (`--parameters no_center=true`).
The same entry point runs anywhere Beam runs:
`python -m polybeam.pipelines.template_main {command} --name=value ... --runner=...`.
"""


def write_template(command: str, output_dir: str, *, image: str | None = None, package: str | None = None,
                   launcher_tag: str = LAUNCHER_TAG) -> dict:  # fmt: skip
    """Write ``metadata.json``, ``Dockerfile``, ``main.py`` and ``README.md`` for ``polybeam COMMAND`` into
    ``output_dir``; a local wheel given as ``package`` is copied there too. Returns what was written."""
    metadata = template_metadata(command)
    version = polybeam.__version__
    package = package or f"polybeam=={version}"
    if package.endswith(".whl") and not os.path.isfile(package):
        raise ValueError(f"--package {package}: no such wheel file")
    image = image or f"REGION-docker.pkg.dev/PROJECT/REPOSITORY/polybeam-{command}:{version}"
    os.makedirs(output_dir, exist_ok=True)
    files = {
        "metadata.json": json.dumps(metadata, indent=2) + "\n",
        "Dockerfile": dockerfile(command, package=package, launcher_tag=launcher_tag),
        "main.py": MAIN_PY,
        "README.md": readme(command, image, metadata),
    }
    for name, text in files.items():
        with open(os.path.join(output_dir, name), "w", encoding="utf-8") as handle:
            handle.write(text)
    written = sorted(files)
    if package.endswith(".whl"):
        shutil.copy(package, os.path.join(output_dir, os.path.basename(package)))
        written.append(os.path.basename(package))
    return {"command": command, "output_dir": output_dir, "files": written, "image": image, "package": package,
            "parameters": len(metadata["parameters"])}  # fmt: skip
