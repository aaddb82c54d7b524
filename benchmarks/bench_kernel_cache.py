"""First-command latency of two designs of polybeam's numba kernel cache, on a fresh install and a read-only one.

The designs (issue 25, item 4):

- **wheel**: the design polybeam shipped until issue 25 (git revision ``--ref``): a build
  backend runs ``python -m polybeam.warm`` on the build tree, so the wheel ships the
  compiled kernels, and ``polybeam/learners/kernel_cache.py`` puts its own locator first in
  numba's private ``_locator_classes`` (a read-only site-packages gets a seeded copy of the
  shipped cache under ``~/.cache/polybeam/kernels``).
- **plain**: numba's own cache (``cache=True``, no locator, no build-time compile), with
  ``python -m polybeam.warm`` run after ``pip install`` as a container build step. Made from
  the same revision by deleting the locator and the build backend, so the kernels are the same.

Each design is installed once into its own venv (its "image"); every measured run starts
from a fresh copy of that image and an empty ``$HOME`` (no per-user cache), in a fresh
working folder, and times one first command:

- ``demo``: ``polybeam demo``, the README's quick start;
- ``train``: ``polybeam train`` on the bundled spam data;
- ``python``: ``python -c`` importing polybeam, training on one batch and predicting.

Modes: ``writable`` (site-packages as installed, writable) and ``read-only`` (the venv's
site-packages bind-mounted read-only in a private mount namespace, ``unshare -m``: needs
root, and unlike ``chmod -R a-w`` it also stops root). The plain design has a third
scenario, ``plain+cachedir``: the build step warms into ``NUMBA_CACHE_DIR`` (a folder
outside site-packages that stays writable), which the image also sets for its runs;
mode ``read-only-image`` mounts the whole installation read-only, that folder too.
``plain-nowarm`` (``pip install`` without the warm step) shows what the warm step saves.

The venvs use ``--system-site-packages`` for numpy, numba, scipy, pyarrow and Beam: their
import time is the same in every scenario, and only polybeam (and its kernel cache) is
installed into the venv, which shadows any system polybeam. Scenarios run interleaved
(rotated order per repetition), since the machine may be shared; medians are reported,
with the ratio plain / wheel per mode and command.

Run from the repository root (takes a few minutes per scenario to install and warm)::

    python benchmarks/bench_kernel_cache.py --workdir /tmp/kernel-cache-bench --repeats 3
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The last revision with the wheel design (build backend and locator).
WHEEL_DESIGN_REF = "c18954e"
LOCATOR_IMPORT = "from polybeam.learners import kernel_cache  # noqa"
PLAIN_PYPROJECT = '[build-system]\nrequires = ["setuptools>=64", "wheel"]\nbuild-backend = "setuptools.build_meta"\n'
PYTHON_COMMAND = """
from polybeam.datasets import load
from polybeam.learners.config import LearnerConfig
from polybeam.learners.polynomial import make_learner
batch = load("spam", binary=True)
model = make_learner(LearnerConfig(loss="logistic")).learn(batch.rows_between(0, 1000)).to_model()
print(model.predict(batch.rows_between(1000, 1010)))
"""
# (scenario, image, mode): which installation a run starts from, and how site-packages is mounted.
SCENARIOS = {
    "wheel/writable": ("wheel", "writable"),
    "wheel/read-only": ("wheel", "read-only"),
    "plain/writable": ("plain", "writable"),
    "plain/read-only": ("plain", "read-only"),
    "plain+cachedir/read-only": ("plain+cachedir", "read-only"),
    "wheel/read-only-image": ("wheel", "read-only-image"),
    "plain+cachedir/read-only-image": ("plain+cachedir", "read-only-image"),
    "plain-nowarm/writable": ("plain-nowarm", "writable"),
}
DEFAULT_SCENARIOS = "wheel/writable,plain/writable,wheel/read-only,plain/read-only,plain+cachedir/read-only"


def run(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(command, check=True, **kwargs)


def clean_environment(home: str) -> dict[str, str]:
    """The environment of a first run: no PYTHONPATH, no numba settings, an empty home (no per-user caches)."""
    environment = {
        key: value
        for key, value in os.environ.items()
        if key != "PYTHONPATH" and not key.startswith(("NUMBA_", "XDG_", "POLYBEAM_"))
    }
    environment["HOME"] = home
    return environment


def export_sources(ref: str, workdir: str) -> dict[str, str]:
    """The wheel design's source tree at ``ref`` and the plain design made from it."""
    wheel = os.path.join(workdir, "src-wheel")
    plain = os.path.join(workdir, "src-plain")
    for folder in (wheel, plain):
        shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(wheel)
    archive = subprocess.run(["git", "-C", REPOSITORY, "archive", ref], check=True, capture_output=True).stdout
    run(["tar", "-x", "-C", wheel], input=archive)
    shutil.copytree(wheel, plain, symlinks=True)
    # The plain design: numba's own locators (no polybeam locator) and setuptools' own backend (no build-time compile).
    for path in glob.glob(os.path.join(plain, "polybeam", "**", "*.py"), recursive=True):
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines(keepends=True)
        kept = [line for line in lines if not line.startswith(LOCATOR_IMPORT)]
        if len(kept) != len(lines):
            with open(path, "w", encoding="utf-8") as handle:
                handle.writelines(kept)
    os.remove(os.path.join(plain, "polybeam", "learners", "kernel_cache.py"))
    shutil.rmtree(os.path.join(plain, "build_backend"))
    with open(os.path.join(plain, "pyproject.toml"), "w", encoding="utf-8") as handle:
        handle.write(PLAIN_PYPROJECT)
    with open(os.path.join(plain, "setup.py"), encoding="utf-8") as handle:
        setup = handle.read().replace('    cmdclass={"build_py": BuildPyWithKernels},\n', "")
    with open(os.path.join(plain, "setup.py"), "w", encoding="utf-8") as handle:
        handle.write(setup)
    return {"wheel": wheel, "plain": plain}


def site_packages(venv: str) -> str:
    return glob.glob(os.path.join(venv, "lib", "python3*", "site-packages"))[0]


def build_image(name: str, source: str, workdir: str) -> dict[str, float]:
    """Install one design into ``workdir/name/image`` (and keep a pristine copy); seconds per build step."""
    root = os.path.join(workdir, name)
    shutil.rmtree(root, ignore_errors=True)
    image = os.path.join(root, "image")
    venv = os.path.join(image, "venv")
    home = os.path.join(root, "build-home")
    os.makedirs(home)
    environment = clean_environment(home)
    run([sys.executable, "-m", "venv", "--system-site-packages", venv])
    pip = [os.path.join(venv, "bin", "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    run(pip + ["wheel"], env=environment)  # what setuptools needs to build a wheel without build isolation
    steps = {}
    started = time.perf_counter()
    run(pip + ["--no-deps", "--no-build-isolation", "--no-cache-dir", source], env=environment, cwd=root)
    steps["pip install"] = time.perf_counter() - started
    warm = [os.path.join(venv, "bin", "python"), "-m", "polybeam.warm", "--quiet"]
    if name == "plain":
        started = time.perf_counter()
        run(warm, env=environment, cwd=root)
        steps["python -m polybeam.warm"] = time.perf_counter() - started
    elif name == "plain+cachedir":
        environment["NUMBA_CACHE_DIR"] = os.path.join(image, "numba-cache")
        started = time.perf_counter()
        run(warm, env=environment, cwd=root)
        steps["NUMBA_CACHE_DIR=... python -m polybeam.warm"] = time.perf_counter() - started
    shutil.copytree(image, os.path.join(root, "pristine"), symlinks=True)
    return steps


def cache_files(folder: str) -> int:
    return len(glob.glob(os.path.join(folder, "**", "*.nbi"), recursive=True, include_hidden=True))


def first_command(command: str, venv: str, output: str) -> list[str]:
    if command == "demo":
        return [os.path.join(venv, "bin", "polybeam"), "demo", "--output-dir", output]
    if command == "train":
        data = os.path.join(site_packages(venv), "polybeam", "datasets", "data", "spam.libsvm.gz")
        model = os.path.join(output, "spam.model")
        return [os.path.join(venv, "bin", "polybeam"), "train", "--input", data, "--loss", "logistic", "--model", model]
    return [os.path.join(venv, "bin", "python"), "-c", PYTHON_COMMAND]


def measure(scenario: str, command: str, workdir: str, trial: int) -> dict:
    """One first run of ``command``: restore the image, empty home, time the command."""
    name, mode = SCENARIOS[scenario]
    root = os.path.join(workdir, name)
    image = os.path.join(root, "image")
    shutil.rmtree(image)
    run(["cp", "-a", os.path.join(root, "pristine"), image])  # cp -a keeps file times (bytecode stays valid)
    venv = os.path.join(image, "venv")
    scratch = os.path.join(workdir, "runs", f"{trial}-{scenario.replace('/', '-')}-{command}")
    shutil.rmtree(scratch, ignore_errors=True)
    home, output = os.path.join(scratch, "home"), os.path.join(scratch, "out")
    os.makedirs(home)
    os.makedirs(output)
    environment = clean_environment(home)
    if name == "plain+cachedir":
        environment["NUMBA_CACHE_DIR"] = os.path.join(image, "numba-cache")  # the image's ENV
    argv = first_command(command, venv, output)
    if mode in ("read-only", "read-only-image"):
        # read-only: site-packages only; read-only-image: the whole installation, NUMBA_CACHE_DIR too.
        packages = site_packages(venv) if mode == "read-only" else image
        script = f'mount --bind "{packages}" "{packages}" && mount -o remount,bind,ro "{packages}" && exec "$@"'
        argv = ["unshare", "-m", "sh", "-c", script, "sh", *argv]
    before = cache_files(image)
    started = time.perf_counter()
    result = subprocess.run(argv, env=environment, cwd=output, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        raise RuntimeError(f"{scenario} {command} failed:\n{result.stderr[-3000:]}")
    # Where numba (or the wheel design's locator) put cache files under the empty home, e.g. .cache/numba.
    in_home = glob.glob(os.path.join(home, "**", "*.nbi"), recursive=True, include_hidden=True)
    written_home = sorted({os.sep.join(os.path.relpath(path, home).split(os.sep)[:3]) for path in in_home})
    return {
        "scenario": scenario,
        "command": command,
        "trial": trial,
        "seconds": seconds,
        "cache_files_written_in_image": cache_files(image) - before,
        "cache_files_written_in_home": cache_files(home),
        "home_cache_folders": written_home,
    }


def report(results: list[dict], scenarios: list[str], commands: list[str]) -> str:
    """A markdown table of medians (and all runs), with plain / wheel per mode and command."""
    median = {}
    lines = [
        "| scenario | " + " | ".join(f"{command} (s)" for command in commands) + " |",
        "| --- |" + " --- |" * len(commands),
    ]
    for scenario in scenarios:
        cells = []
        for command in commands:
            runs = [row["seconds"] for row in results if row["scenario"] == scenario and row["command"] == command]
            median[scenario, command] = statistics.median(runs)
            cells.append(f"**{median[scenario, command]:.1f}** ({', '.join(f'{value:.1f}' for value in runs)})")
        lines.append(f"| {scenario} | " + " | ".join(cells) + " |")
    lines.append("")
    for mode in ("writable", "read-only", "read-only-image"):
        for plain in ("plain", "plain+cachedir"):
            if (f"wheel/{mode}" in scenarios) and (f"{plain}/{mode}" in scenarios):
                ratios = ", ".join(
                    f"{command} {median[f'{plain}/{mode}', command] / median[f'wheel/{mode}', command]:.2f}"
                    for command in commands
                )
                lines.append(f"- {mode}: {plain} / wheel = {ratios}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", default="/tmp/kernel-cache-bench")
    parser.add_argument("--ref", default=WHEEL_DESIGN_REF, help="git revision of the wheel design")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--scenarios", default=DEFAULT_SCENARIOS, help=f"comma-separated, of {', '.join(SCENARIOS)}")
    parser.add_argument("--commands", default="demo,train,python")
    parser.add_argument("--reuse-images", action="store_true", help="skip the installs (images from an earlier run)")
    args = parser.parse_args(argv)
    scenarios = args.scenarios.split(",")
    commands = args.commands.split(",")
    os.makedirs(args.workdir, exist_ok=True)
    if not args.reuse_images:
        sources = export_sources(args.ref, args.workdir)
        for name in dict.fromkeys(SCENARIOS[scenario][0] for scenario in scenarios):
            steps = build_image(name, sources["wheel" if name == "wheel" else "plain"], args.workdir)
            timings = ", ".join(f"{step} {seconds:.1f} s" for step, seconds in steps.items())
            print(f"built {name}: {timings}", flush=True)
    results = []
    for trial in range(args.repeats):
        shift = trial % len(scenarios)  # rotate the order, so no scenario always runs first or last
        for command in commands:
            for scenario in scenarios[shift:] + scenarios[:shift]:
                row = measure(scenario, command, args.workdir, trial)
                results.append(row)
                print(json.dumps(row), flush=True)
    with open(os.path.join(args.workdir, "results.json"), "w") as handle:
        json.dump(results, handle, indent=1)
    print(report(results, scenarios, commands))
    return 0


if __name__ == "__main__":
    sys.exit(main())
