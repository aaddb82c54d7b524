"""Real Beam engines for polybeam's tests, benchmarks and users' offline machines.

Beam's Flink and Spark runners start a Java job server from a jar that Beam
normally downloads from Maven Central at run time, and its Prism runner (what
the ``DirectRunner`` name reaches for) downloads a Go binary from GitHub. On a
machine that reaches only package registries neither download works, so this
package builds them from the registries instead, into a cache:

- ``jobserver``: a job-server jar from Beam's runner artifacts on Maven
  (Maven resolves the runner and its dependencies; a small launcher jar names
  them on its manifest class path and the driver as its main class);
- ``prism``: Prism built by ``go install`` from the Go module proxy and put
  where Beam looks for a downloaded one;
- ``flink`` and ``spark``: standalone clusters (a master and two workers, each
  its own JVM) started and stopped by the caller;
- ``running``: an engine started for many jobs (a job server, a standalone
  cluster, an external worker pool from ``pools``), and stopped with all it
  started.

Each engine is one entry of ``specs.ENGINE_SPECS`` (its module, the programs
it needs, its master, what ``fetch`` builds, whether it has a standalone
cluster), which everything here reads. ``polybeam engines fetch flink spark
prism`` fetches and builds all three (:mod:`~polybeam.engines.command`),
``polybeam engines options ENGINE`` prints the options that run a polybeam
command on one, and ``polybeam engines start ENGINE`` starts one here and
prints the options that send a job to it; ``tools.require`` says what is
missing (Java, Maven, Go) in one line. It ships in the wheel; the learning
code never imports it (only the command line, and the launcher to say what
to pass when Beam cannot download a job server). The engine suite
(``tests/engines``) and ``benchmarks/bench_engines.py`` start engines with it.
"""
