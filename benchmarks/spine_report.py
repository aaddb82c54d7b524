"""The spine benchmark's report: targets, the markdown summary and the estimate of where the time goes.

It reads only the measurements dict that ``bench_spine.py`` stores in
``results/spine.json``, so a report can be rewritten without measuring again
(``bench_spine.py --render``).
"""

from __future__ import annotations

from harness import Target, markdown_table

MIB = 1 << 20
GB = 1e9
# Targets of the spine (see benchmarks/README.md).
KERNEL_VS_VW = 1.0
PIPELINE_VS_VW = 2.0
PIPELINE_MEMORY_BYTES = 2 * GB
SPAM_ERROR = 0.10
LETTER_GAP = 0.02
# Targets of the sparse and tuning-free issue: costs relative to the same learner.
TRUNCATION_OVERHEAD = 0.20
GSA_OVERHEAD = 0.10


def fmt(value, spec: str = ".2f", suffix: str = "") -> str | None:
    if value is None or (isinstance(value, float) and value != value):
        return None
    return f"{value:{spec}}{suffix}"


def targets_of(report: dict) -> list[Target]:
    vw = report["vw"]["seconds"]
    pipeline = report.get("pipeline", {})
    libsvm = pipeline.get("libsvm", {})
    vw_run = pipeline.get("vw", {})
    targets = [Target("learner kernel / VW whole run", report["learner"]["seconds"] / vw, KERNEL_VS_VW, unit="x")]
    for format, run in (("LIBSVM", libsvm), ("VW", vw_run)):
        ok = run.get("returncode") == 0
        targets.append(
            Target(
                f"polybeam train ({format}) / VW whole run",
                run["seconds"] / vw if ok else None,
                PIPELINE_VS_VW,
                unit="x",
            )
        )
        targets.append(
            Target(
                f"polybeam train ({format}) peak memory",
                run["peak_rss_bytes"] / GB if ok else None,
                PIPELINE_MEMORY_BYTES / GB,
                "<",
                unit="GB",
            )
        )
    for name, entry in report.get("overheads", {}).items():
        limit = TRUNCATION_OVERHEAD if name.startswith("truncation") else GSA_OVERHEAD
        targets.append(Target(f"kernel cost of {name}", entry["overhead"] * 100, limit * 100, unit="%"))
    for alpha, entry in report.get("apple", {}).items():
        for format in ("libsvm", "vw"):
            run = entry[format]
            ok = run.get("returncode") == 0
            targets.append(
                Target(
                    f"apple alpha={alpha} ({format.upper() if format == 'vw' else 'LIBSVM'}) / VW --stage_poly",
                    run["seconds"] / entry["stage_poly"]["seconds"] if ok else None,
                    1.0,
                    unit="x",
                )
            )
    real = report.get("real")
    if real:
        targets.append(Target("spam held-out error (polybeam)", real["spam"]["polybeam_error"], SPAM_ERROR))
        targets.append(
            Target("letter binary |polybeam - VW| error", abs(real["letter"]["difference_vs_vw"]), LETTER_GAP)
        )
    return targets


def render(report: dict) -> str:
    vw = report["vw"]
    base = vw["seconds"]
    n = report["data"]["examples"]

    def row(label: str, entry: dict, *, ratio: bool = True, loss: str | None = None, note: str | None = None) -> list:
        memory = entry.get("peak_rss_bytes")
        return [
            label,
            fmt(entry["seconds"]),
            fmt(entry.get("cpu_seconds")),
            fmt(entry["seconds"] / base) if ratio else None,
            fmt(entry.get(loss), ".6f") if loss else None,
            fmt(memory / MIB, ".0f", " MiB") if memory else None,
            note,
        ]

    learner, parsers = report["learner"], report["parsers"]
    rows = [
        row(
            f"VW linear, whole run (`{vw['command']}`)",
            vw,
            loss="average_loss",
            note=f"best of {len(vw['all_seconds'])}: " + ", ".join(f"{s:.2f}" for s in vw["all_seconds"]),
        ),
    ]
    if report.get("vw_one_core"):
        rows.append(
            row("VW pinned to one core (`taskset -c 0`), for reference", report["vw_one_core"], loss="average_loss")
        )
    rows += [
        row(
            "polybeam learner kernel, pre-parsed 4096-row batches",
            learner,
            loss="progressive_loss",
            note=f"{learner['batches']} batches",
        ),
        row(
            "polybeam LIBSVM parser, 4 MiB blocks",
            parsers["libsvm"],
            note=f"{parsers['libsvm']['mib_per_second']:.0f} MiB/s, {parsers['libsvm']['microseconds_per_example']:.2f} us/example",
        ),
        row(
            "polybeam VW parser, 4 MiB blocks",
            parsers["vw"],
            note=f"{parsers['vw']['mib_per_second']:.0f} MiB/s, {parsers['vw']['microseconds_per_example']:.2f} us/example",
        ),
    ]
    pipeline = report.get("pipeline", {})
    warmup = pipeline.get("warmup_examples", 20_000)
    for format in ("libsvm", "vw"):
        run = pipeline.get(format)
        label = f"`polybeam train` whole pipeline, {'LIBSVM' if format == 'libsvm' else 'VW'} file"
        if run and run["returncode"] == 0:
            note = f"job itself {run['inner_wall_seconds']:.2f} s; runs: " + ", ".join(
                f"{s:.2f}" for s in run["all_seconds"]
            )
            rows.append(row(label, run, loss="progressive_loss", note=note))
        else:
            rows.append([label, None, None, None, None, None, "FAILED" if run else "not run"])
    for key, label in (
        ("cold_cache_warmup_libsvm", f"`polybeam train` {warmup:,} LIBSVM examples, cold numba cache"),
        ("hot_cache_warmup_libsvm", f"`polybeam train` {warmup:,} LIBSVM examples, hot numba cache"),
        ("tiny_libsvm", "`polybeam train` 100 examples (fixed costs)"),
    ):
        run = pipeline.get(key)
        if run and run["returncode"] == 0:
            rows.append(row(label, run, ratio=False, note=f"job itself {run['inner_wall_seconds']:.2f} s"))
    parts = [
        f"# Spine benchmark: polybeam vs Vowpal Wabbit ({n:,} synthetic examples)",
        "",
        f"Measured {report['started']} on {report['machine']['cpus']} CPUs, Python {report['machine']['python']}, "
        f"apache-beam {report['machine']['apache_beam']}, vowpalwabbit {report['machine']['vowpalwabbit']}, "
        f"polybeam at {report['machine']['git_commit']} (plus uncommitted work); load average "
        f"{report['machine']['load_average']} at the start, {report.get('load_average_at_end')} at the end. "
        f"Data: `PlantedPolynomial(seed={report['data']['task']['seed']})`, "
        f"{report['data']['bytes']['libsvm'] / MIB:.0f} MiB LIBSVM / {report['data']['bytes']['vw'] / MIB:.0f} MiB VW, "
        f"generated and written in {report['data']['seconds']:.1f} s. Squared loss, 18 bits, one pass, "
        "normalised adaptive (AdaGrad) safe updates on both sides.",
        "",
        markdown_table(["measurement", "seconds", "CPU s", "x VW", "progressive loss", "peak memory", "note"], rows),
        "",
        *threads_note(report),
        "## Targets",
        "",
        markdown_table(
            ["target", "measured", "goal", "verdict"],
            [
                [
                    t.name,
                    fmt(t.value, ".3f", f" {t.unit}".rstrip()),
                    f"{t.comparison} {t.limit:g} {t.unit}".rstrip(),
                    t.verdict(),
                ]
                for t in targets_of(report)
            ],
        ),
    ]
    real = report.get("real")
    if real:
        rows = []
        for _name, entry in real.items():
            rows.append(
                [
                    entry["task"],
                    fmt(entry["polybeam_pipeline"].get("error"), ".4f"),
                    fmt(entry["polybeam_api"]["error"], ".4f"),
                    fmt(entry["vw"]["error"], ".4f"),
                    fmt(entry["difference_vs_vw"], "+.4f"),
                    fmt(entry["polybeam_api"]["progressive_loss"], ".4f"),
                    fmt(entry["vw"]["progressive_loss"], ".4f"),
                ]
            )
        parts += [
            "",
            "## Real data: held-out error (80/20 split: the last fifth of the pre-shuffled file is the test set; identical files for both)",
            "",
            markdown_table(
                [
                    "task",
                    "polybeam (pipeline)",
                    "polybeam (Python API)",
                    "VW",
                    "polybeam - VW",
                    "polybeam progressive loss",
                    "VW progressive loss",
                ],
                rows,
            ),
        ]
        sweep_rows = [
            [
                name,
                len(entry["sweep"]["seeds"]),
                fmt(entry["sweep"]["polybeam_mean"], ".4f"),
                fmt(entry["sweep"]["vw_mean"], ".4f"),
                fmt(min(entry["sweep"]["polybeam_errors"], default=None), ".4f"),
                fmt(max(entry["sweep"]["polybeam_errors"], default=None), ".4f"),
            ]
            for name, entry in real.items()
            if entry["sweep"]["seeds"]
        ]
        if sweep_rows:
            parts += [
                "",
                "Over several 80/20 splits (seeds 0, 1, ...; polybeam through the Python API, which gives the "
                "pipeline's figure on one worker):",
                "",
                markdown_table(
                    ["data", "splits", "polybeam mean error", "VW mean error", "polybeam min", "polybeam max"],
                    sweep_rows,
                ),
            ]
    apple = report.get("apple")
    if apple:
        rows = []
        for alpha, entry in apple.items():
            vw_entry = entry["stage_poly"]
            rows.append(
                [
                    f"VW `--stage_poly --sched_exponent {alpha}`",
                    fmt(vw_entry["seconds"]),
                    fmt(vw_entry["cpu_seconds"]),
                    "1.00",
                    fmt(vw_entry["average_loss"], ".4f"),
                    fmt(vw_entry["peak_rss_bytes"] / MIB, ".0f", " MiB"),
                    ", ".join(f"{s:.2f}" for s in vw_entry["all_seconds"]),
                ]
            )
            for format in ("libsvm", "vw"):
                run = entry[format]
                if run.get("returncode") != 0:
                    rows.append(
                        [f"polybeam apple alpha={alpha}, {format} file", None, None, None, None, None, "FAILED"]
                    )
                    continue
                rows.append(
                    [
                        f"`polybeam train --expand apple --alpha {alpha}`, {'LIBSVM' if format == 'libsvm' else 'VW'} file",
                        fmt(run["seconds"]),
                        fmt(run["cpu_seconds"]),
                        fmt(run["seconds"] / vw_entry["seconds"]),
                        fmt(run.get("progressive_loss"), ".4f"),
                        fmt(run["peak_rss_bytes"] / MIB, ".0f", " MiB"),
                        ", ".join(f"{s:.2f}" for s in run["all_seconds"]),
                    ]
                )
        parts += [
            "",
            "## Apple against VW --stage_poly (whole runs, same data, same exponent)",
            "",
            "Squared loss, 18 bits, one pass, normalised adaptive steps at rate 0.5 on both sides, runs alternated and "
            "the best of each counts. Expansions: VW after 1000, 2000, 4000, ... examples (its default schedule, to the "
            "end of the data); polybeam after 1000, 2000, 4000, 8000 and 16000 (5 expansions, the paper's 6 epochs; "
            "the count of a file is unknown to a streaming job). Progressive loss: each example's loss before it is learned.",
            "",
            markdown_table(
                ["run", "seconds", "CPU s", "x VW stage_poly", "progressive loss", "peak memory", "runs"], rows
            ),
        ]
    overheads = report.get("overheads")
    if overheads:
        parts += [
            "",
            "## Cost of truncated gradient and GSA (learner kernel, same pre-parsed batches)",
            "",
            "Rounds of every configuration in a shuffled order; the overhead is the median over rounds of the ratio "
            "of the pair's two runs in that round (quartiles beside it); the seconds are each configuration's best run.",
            "",
            markdown_table(
                [
                    "comparison",
                    "base",
                    "changed",
                    "base s",
                    "changed s",
                    "overhead (quartiles)",
                    "progressive loss (base / changed)",
                    "non-zero weights (base / changed)",
                ],
                [
                    [
                        name,
                        _settings(e["base"]),
                        _settings(e["changed"]),
                        fmt(e["base_seconds"]),
                        fmt(e["changed_seconds"]),
                        fmt(e["overhead"] * 100, "+.0f", " %")
                        + (
                            f" ({e['overhead_quartiles'][0] * 100:+.0f}, {e['overhead_quartiles'][1] * 100:+.0f})"
                            if "overhead_quartiles" in e
                            else ""
                        ),
                        f"{e['base_progressive_loss']:.4f} / {e['changed_progressive_loss']:.4f}",
                        f"{e['base_nonzero']} / {e['changed_nonzero']}",
                    ]
                    for name, e in overheads.items()
                ],
            ),
        ]
    pipeline_overheads = report.get("pipeline_overheads")
    if pipeline_overheads and "error" not in pipeline_overheads:
        parts += [
            "",
            "The same settings through the whole `polybeam train` pipeline (LIBSVM file, best of the repeats):",
            "",
            markdown_table(
                ["polybeam train", "seconds", "progressive loss"],
                [
                    [name, fmt(run["seconds"]), fmt(run.get("progressive_loss"), ".4f")]
                    for name, run in pipeline_overheads.items()
                ],
            ),
        ]
    breakdown = report.get("breakdown")
    if breakdown:
        parts += [
            "",
            "## Where the pipeline's time goes (estimate)",
            "",
            markdown_table(
                ["part", "seconds", "share"],
                [
                    [name, fmt(seconds), fmt(seconds / breakdown["total"] * 100, ".0f", " %")]
                    for name, seconds in breakdown["parts"].items()
                ],
            ),
        ]
    return "\n".join(parts) + "\n"


def _settings(settings: dict) -> str:
    return ", ".join(f"{key}={value}" for key, value in settings.items())


def threads_note(report: dict) -> list[str]:
    """Say how many cores each side kept busy (CPU time over wall time)."""
    vw = report["vw"]
    run = report.get("pipeline", {}).get("libsvm")
    if not run or run.get("returncode") != 0 or not vw.get("cpu_seconds"):
        return []
    return [
        f"Cores kept busy (CPU s / wall s): VW {vw['cpu_seconds'] / vw['seconds']:.2f} (it parses on a second "
        f"thread while it learns), `polybeam train` {run['cpu_seconds'] / run['seconds']:.2f}.",
        "",
    ]


def estimate_breakdown(report: dict) -> dict | None:
    """Split the LIBSVM pipeline's wall time into start-up, fixed pipeline costs, parsing, learning and the rest."""
    pipeline = report.get("pipeline", {})
    run, tiny = pipeline.get("libsvm"), pipeline.get("tiny_libsvm")
    if not run or run.get("returncode") != 0 or not tiny or tiny.get("returncode") != 0:
        return None
    first_call = pipeline["first_kernel_call_seconds"]
    parts = {
        "process start-up, imports and exit (100-example run, outside the job's own timer)": tiny["seconds"]
        - tiny["inner_wall_seconds"],
        "numba's one-time set-up at the first kernel call": first_call,
        "other fixed job costs: pipeline construction, runner, model and dead-letter writes (100-example run)": tiny[
            "inner_wall_seconds"
        ]
        - first_call,
        "parsing LIBSVM (parser alone, in-process)": report["parsers"]["libsvm"]["seconds"],
        "learning (kernel alone, in-process)": report["learner"]["seconds"],
    }
    # By difference: the parts were timed in separate runs, so a figure near zero is within the noise.
    parts["the rest, by difference: reading blocks through Beam, per-batch Beam work, pickling"] = run["seconds"] - sum(
        parts.values()
    )
    return {"total": run["seconds"], "parts": parts}
