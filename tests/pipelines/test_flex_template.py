"""Flex templates: metadata generated from the options, validated against Dataflow's documented schema; the
Dockerfile and README; the entry point run as the launcher runs it (``--name=value``), returning before the job
ends."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time

import jsonschema
import pytest

from polybeam import datasets
from polybeam.pipelines import flex_template
from polybeam.pipelines.cli import main
from polybeam.pipelines.flex_template import TEMPLATE_COMMANDS, template_metadata
from polybeam.pipelines.option_specs import command_parser, required_options
from polybeam.pipelines.template_main import TemplateParameterError, command_line
from polybeam.transforms.model_io import read_model

SCHEMA = os.path.join(os.path.dirname(__file__), "data", "dataflow_template_metadata.schema.json")

# A value each regex must accept besides the default, and one it must refuse.
SAMPLES = {
    flex_template.NUMBER: ("-2.5e-3", "fast"),
    flex_template.INTEGER: ("12", "1.5"),
    flex_template.BOOLEAN: ("true", "yes"),
    flex_template.PATH: ("gs://bucket/data/part-*.libsvm.gz", "--model"),
    flex_template.PATH_LIST: ("gs://b/cs-g-omp.jsonl,gs://b/fr.jsonl", "a.jsonl,,b.jsonl"),
    flex_template.NAME_LIST: ("store,region", ","),
    flex_template.NUMBER_OR_AUTO: ("auto", "often"),
    flex_template.KEY: ("column:store", "store"),
    flex_template.WINDOW: ("sliding:1d,1.5h", "daily"),
    flex_template.TIMESTAMP: ("column:ts", "ts"),
}


def sample(regex: str) -> tuple[str, str]:
    if regex in SAMPLES:
        return SAMPLES[regex]
    choices = re.fullmatch(r"\^\((.*)\)\$", regex).group(1).split("|")  # an enumeration
    return choices[-1], choices[0] + "x"


def egrep_matches(regex: str, value: str) -> bool:
    """Whether POSIX egrep accepts ``value`` as a whole line."""
    done = subprocess.run(["grep", "-E", "-x", "-e", regex], input=value + "\n", text=True, capture_output=True)
    assert done.returncode in (0, 1), done.stderr  # 2: grep could not read the regex
    return done.returncode == 0


@pytest.fixture(scope="module")
def schema():
    with open(SCHEMA) as handle:
        return json.load(handle)


@pytest.mark.parametrize("command", TEMPLATE_COMMANDS)
def test_metadata_validates_against_dataflows_schema(command, schema):
    metadata = template_metadata(command)
    jsonschema.validate(metadata, schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    assert metadata["name"] == f"polybeam-{command}" and metadata["description"]


def test_the_schema_refuses_what_dataflow_would(schema):
    good = template_metadata("evaluate")
    for broken in (
        {**good, "parameters": [{**good["parameters"][0], "helpText": None}]},
        {**good, "parameters": [{**good["parameters"][0], "paramType": "FILE"}]},
        {**good, "parameters": [{**good["parameters"][1], "enumOptions": None}]},
        {**good, "paramters": []},
    ):
        broken["parameters"] = [{k: v for k, v in p.items() if v is not None} for p in broken["parameters"]]
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(broken, schema)


@pytest.mark.parametrize("command", TEMPLATE_COMMANDS)
def test_every_option_is_a_parameter_and_every_parameter_an_option(command):
    options = {
        action.dest: action
        for action in command_parser(command)._actions
        if action.option_strings and action.dest != "help"
    }
    parameters = {p["name"]: p for p in template_metadata(command)["parameters"]}
    left_out = {name for name, (commands, _) in flex_template.NOT_IN_TEMPLATES.items() if command in commands}
    assert set(parameters) == set(options) - left_out and left_out <= set(options)
    assert "no_wait" in left_out and ("quiet" in left_out) == (command != "train")
    for name, parameter in parameters.items():
        assert parameter["helpText"].startswith(options[name].help)
        assert parameter["isOptional"] == (name not in required_options(command))


@pytest.mark.parametrize("command", TEMPLATE_COMMANDS)
def test_each_regex_takes_the_default_and_a_valid_value_and_refuses_a_wrong_one(command):
    have_grep = shutil.which("grep") is not None
    for parameter in template_metadata(command)["parameters"]:
        for regex in parameter.get("regexes", []):
            valid, wrong = sample(regex)
            values = [valid] + ([parameter["defaultValue"]] if "defaultValue" in parameter else [])
            for value in values:
                assert re.fullmatch(regex, value), (parameter["name"], regex, value)
                assert not have_grep or egrep_matches(regex, value), (parameter["name"], regex, value)
            assert not re.fullmatch(regex, wrong), (parameter["name"], regex, wrong)
            assert not have_grep or not egrep_matches(regex, wrong), (parameter["name"], regex, wrong)


def test_each_parameters_valid_value_is_what_the_command_accepts():
    """The regexes' valid samples parse with the command's own option types (no regex wider than its option)."""
    for command in TEMPLATE_COMMANDS:
        parser = command_parser(command)
        for parameter in template_metadata(command)["parameters"]:
            if parameter["paramType"] == "BOOLEAN" or not parameter.get("regexes"):
                continue
            value, _ = sample(parameter["regexes"][0])
            parser.parse_args([f"--{parameter['name']}={value}"])  # argparse exits on a value it refuses


def test_types_tell_the_console_what_to_pick():
    train = {p["name"]: p for p in template_metadata("train")["parameters"]}
    predict = {p["name"]: p for p in template_metadata("predict")["parameters"]}
    assert train["model"]["paramType"] == "GCS_WRITE_FILE" and predict["model"]["paramType"] == "GCS_READ_FILE"
    assert train["input"]["paramType"] == "GCS_READ_FILE" and train["checkpoint_dir"]["paramType"] == "GCS_WRITE_FOLDER"
    assert predict["output"]["paramType"] == "GCS_WRITE_FILE"
    assert train["loss"]["paramType"] == "ENUM" and {o["value"] for o in train["loss"]["enumOptions"]} >= {"logistic"}
    assert train["gravity"]["paramType"] == "NUMBER" and train["gravity"]["defaultValue"] == "0.0"
    assert train["no_center"]["paramType"] == "BOOLEAN" and train["no_center"]["defaultValue"] == "false"
    assert "no_wait" not in train  # a template never waits for its job: the entry point says --no-wait


@pytest.mark.parametrize("command", ("train", "evaluate", "predict"))
def test_a_per_key_template_types_its_model_paths_as_folders(command, schema):
    metadata = template_metadata(command, per_key=True)
    jsonschema.validate(metadata, schema)
    per_key = {p["name"]: p for p in metadata["parameters"]}
    single = {p["name"]: p for p in template_metadata(command)["parameters"]}
    folder = "GCS_WRITE_FOLDER" if command == "train" else "GCS_READ_FOLDER"
    assert per_key["model"]["paramType"] == folder and single["model"]["paramType"].endswith("_FILE")
    assert "folder of per-key models" in per_key["model"]["helpText"]
    assert metadata["name"] == f"polybeam-{command}-per-key"
    assert per_key["key"]["isOptional"] is (command != "train")  # evaluate and predict read it from the folder
    if command == "train":
        assert per_key["initial_model"]["paramType"] == "GCS_READ_FOLDER"
    else:
        assert per_key["fallback_model"]["paramType"] == "GCS_READ_FILE"  # one model for keys without their own
    changed = {name for name in single if per_key[name]["paramType"] != single[name]["paramType"]}
    assert changed == ({"model", "initial_model"} if command == "train" else {"model"})


def test_the_template_command_writes_the_build_context(tmp_path, capsys):
    wheel = tmp_path / "polybeam-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"not really a wheel")
    out = tmp_path / "tpl"
    code = main(
        [
            "template",
            "--command",
            "predict",
            "--output-dir",
            str(out),
            "--package",
            str(wheel),
            "--image",
            "europe-docker.pkg.dev/p/r/polybeam-predict:1",
        ]
    )
    written = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert code == 0 and sorted(os.listdir(out)) == sorted(written["files"])
    assert set(written["files"]) == {"metadata.json", "Dockerfile", "main.py", "README.md", wheel.name}
    assert json.loads((out / "metadata.json").read_text()) == template_metadata("predict")
    dockerfile = (out / "Dockerfile").read_text()
    from importlib.metadata import version

    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert f"FROM apache/beam_python{python}_sdk:{version('apache-beam')}" in dockerfile
    launcher = f"gcr.io/dataflow-templates-base/python{python.replace('.', '')}-template-launcher-base:latest"
    assert f"FROM {launcher} AS template_launcher" in dockerfile and written["launcher"] == launcher
    assert "COPY --from=template_launcher /opt/google/dataflow/python_template_launcher" in dockerfile
    assert "ENV FLEX_TEMPLATE_PYTHON_PY_FILE=/template/main.py" in dockerfile
    assert "ENV POLYBEAM_TEMPLATE_COMMAND=predict" in dockerfile and f"/template/{wheel.name}" in dockerfile
    assert "from polybeam.pipelines.template_main import main" in (out / "main.py").read_text()
    readme = (out / "README.md").read_text()
    assert "gcloud dataflow flex-template build" in readme and "europe-docker.pkg.dev/p/r/polybeam-predict:1" in readme


def test_the_launcher_image_is_an_option(tmp_path, capsys):
    wheel = tmp_path / "polybeam-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"not really a wheel")
    image = "europe-docker.pkg.dev/p/mirror/python311-template-launcher-base:20250825-rc00"
    for flags, expected in (
        (["--launcher-image", image], image),
        (["--launcher-tag", "20250825-rc00"], flex_template.launcher_image(tag="20250825-rc00")),
    ):
        assert (
            main(
                [
                    "template",
                    "--command",
                    "train",
                    "--output-dir",
                    str(tmp_path / "tpl"),
                    "--package",
                    str(wheel),
                    *flags,
                ]
            )
            == 0
        )
        assert f"FROM {expected} AS template_launcher" in (tmp_path / "tpl" / "Dockerfile").read_text()
    capsys.readouterr()
    assert (
        main(
            [
                "template",
                "--command",
                "train",
                "--output-dir",
                str(tmp_path / "tpl"),
                "--package",
                str(wheel),
                "--launcher-image",
                image,
                "--launcher-tag",
                "x",
            ]
        )
        == 2
    )
    assert "not both" in capsys.readouterr().err


def test_without_a_package_the_template_ships_the_running_polybeams_wheel(tmp_path, capsys, monkeypatch):
    built = tmp_path / "polybeam-0.1.0-py3-none-any.whl"
    built.write_bytes(b"the running polybeam")

    def running_wheel(wheel_dir):  # what template_wheel does is tested in test_template_wheel.py
        return flex_template.copy_into(str(built), wheel_dir), "built from the source tree X"

    monkeypatch.setattr(flex_template, "running_wheel", running_wheel)
    out = tmp_path / "tpl"
    assert main(["template", "--command", "evaluate", "--output-dir", str(out), "--per-key"]) == 0
    written = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert written["package"] == built.name and written["package_from"] == "built from the source tree X"
    assert (out / built.name).read_bytes() == b"the running polybeam"
    dockerfile = (out / "Dockerfile").read_text()
    assert f"COPY {built.name} /template/\nRUN pip install --no-cache-dir /template/{built.name}" in dockerfile
    assert "polybeam==" not in dockerfile
    assert json.loads((out / "metadata.json").read_text())["name"] == "polybeam-evaluate-per-key"
    readme = (out / "README.md").read_text()
    assert "gs://BUCKET/templates/polybeam-evaluate-per-key.json" in readme and "`quiet` (" in readme
    # A requirement is installed as such (an index that serves it is the user's to name).
    assert (
        main(
            ["template", "--command", "evaluate", "--output-dir", str(tmp_path / "req"), "--package", "polybeam==0.1.0"]
        )
        == 0
    )
    assert "RUN pip install --no-cache-dir 'polybeam==0.1.0'" in (tmp_path / "req" / "Dockerfile").read_text()


def test_the_template_command_refuses_what_it_cannot_build(tmp_path, capsys):
    assert main(["template", "--command", "predict", "--output-dir", str(tmp_path), "--package", "nowhere.whl"]) == 2
    assert "no such wheel file" in capsys.readouterr().err
    assert main(["template", "--command", "inspect", "--output-dir", str(tmp_path)]) == 2
    assert "argument --command: invalid choice: 'inspect'" in capsys.readouterr().err


def test_flags_arrive_as_true_or_false():
    line = command_line(
        ["--input=x", "--no_center=true", "--no-bias=false", "--resume=True"], {"POLYBEAM_TEMPLATE_COMMAND": "train"}
    )
    assert line == ["train", "--input=x", "--no_center", "--resume", "--no-wait"]
    assert command_line(["predict", "--no_wait=true"], {}) == ["predict", "--no_wait"]
    with pytest.raises(TemplateParameterError, match="--no_center is a flag"):
        command_line(["train", "--no_center=maybe"], {})


@pytest.fixture(scope="module")
def spam_split(tmp_path_factory):
    return datasets.write_split("spam", str(tmp_path_factory.mktemp("spam")))


@pytest.mark.slow
@pytest.mark.subprocess
def test_the_entry_point_launches_the_job_and_exits_before_it_ends(tmp_path, spam_split):
    """As the flex-template launcher runs it: the command from the image's environment, every parameter
    spelled --name=value (flags too), Beam's options passed through; it returns at once and the job,
    left to run on its own, writes its model and report."""
    train, _ = spam_split
    model = tmp_path / "out" / "model.bin"
    model.parent.mkdir()  # (commands write into folders that exist)
    parameters = [
        f"--input={train}",
        f"--model={model}",
        "--loss=logistic",
        "--passes=2",
        "--no_center=false",
        "--no_bias=false",
        "--runner=FnApiRunner",
    ]
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "polybeam.pipelines.template_main", *parameters],
        env={**os.environ, "POLYBEAM_TEMPLATE_COMMAND": "train"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    returned = time.perf_counter() - started
    report_path = tmp_path / "out" / "model.bin.report.json"
    assert done.returncode == 0, done.stderr
    assert not report_path.exists()  # returned before the job ended
    launched = json.loads(done.stdout.strip().splitlines()[-1])
    assert launched["state"] == "RUNNING" and launched["job_id"].startswith("local-") and returned < 30
    deadline = time.time() + 180
    while not report_path.exists() and time.time() < deadline:
        time.sleep(0.2)
    report = json.loads(report_path.read_text())
    assert report["examples"] == report["records"] == 3681 and report["reconciles"] and report["passes_run"] == 2
    assert read_model(str(model)).config.passes == 2
