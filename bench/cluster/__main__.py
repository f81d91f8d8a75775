"""`python -m bench.cluster`: run the cluster benchmark and write bench/results/.

    python -m bench.cluster --nodes 100                       # quick, all schedulers, workload a
    python -m bench.cluster --workloads a,b,c --profile       # default 1,000 nodes
    python -m bench.cluster --schedulers gangsched,kube-scheduler --no-ceiling

Writes `<out>/cluster-n<N>-<kind>.json` and `.png` per workload (the JSON is rewritten after
each scheduler, so an interrupted run keeps what it measured). Control-plane dirs (logs,
records, profiles) go under `--work-dir` and are removed unless `--keep`.

With `--rounds N` (N > 1) the schedulers run N times, interleaved (every scheduler once, in
order, then again). `schedulers` and `ratios` stay round 1's, as with one round (the report and
the plot read them); `rounds` holds every round, round 1 included (a copy of the top level),
as `{"schedulers": {name: run}, "ratios": ratios of that round}`; `ratio_summary` the pods/s
ratio gangsched / other of each round and their median, min and max (`analysis.ratio_summary`).
With one round neither key is written.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

from bench.cluster import analysis, plot, schedulers, workload
from bench.cluster.run import Options, control_plane_dir, run_ceiling, run_scheduler

DEFAULT_SCHEDULERS = (
    "trivial,trivial-gang,gangsched,kube-scheduler,kube-scheduler-gang,coscheduling")
DEFAULT_COSCHEDULING_BIN = Path.home() / ".cache/gangsched/scheduler-plugins/v0.34.7/kube-scheduler"


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line (`argv`, default `sys.argv[1:]`); a bad value or combination is an
    argparse error (usage and one line, status 2)."""
    parser = argparse.ArgumentParser(prog="python -m bench.cluster", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--workloads", default="a,b,c", help="comma-separated: a, b, c")
    parser.add_argument("--schedulers", default=DEFAULT_SCHEDULERS)
    parser.add_argument("--seed", type=int, default=8)
    parser.add_argument("--concurrency", type=int, default=256,
                        help="creation (and trivial-binder) requests in flight")
    parser.add_argument("--time-limit-seconds", type=float, default=600.0)
    parser.add_argument("--stall-seconds", type=float, default=30.0)
    parser.add_argument("--no-ceiling", action="store_true", help="skip the bind-ceiling run")
    parser.add_argument("--profile", action="store_true", help="py-spy the schedulers (Python)")
    parser.add_argument("--coscheduling-bin", default=str(DEFAULT_COSCHEDULING_BIN))
    parser.add_argument("--gangsched-arg", action="append", default=[],
                        help="extra `gangsched run` flag (repeatable, `=` form)")
    parser.add_argument("--gangsched-sitecustomize", default=None,
                        help="a what-if: this file is imported at gangsched's start-up "
                             "(see bench/cluster/experiments/)")
    parser.add_argument("--gangsched-ref", default=None,
                        help="benchmark this git ref of gangsched (exported with `git archive` "
                             "into the work dir) instead of the working tree")
    parser.add_argument("--out", type=Path, default=Path("bench/results"))
    parser.add_argument("--work-dir", type=Path, default=None)
    parser.add_argument("--keep", action="store_true", help="keep control-plane dirs and logs")
    parser.add_argument("--tag", default="", help="suffix of the result file names")
    parser.add_argument("--apiserver-arg", action="append", default=[],
                        help="extra kube-apiserver flag, after the common ones (repeatable, `=` "
                             "form), e.g. --apiserver-arg=--max-mutating-requests-inflight=20 "
                             "to slow the API server's writes")
    parser.add_argument("--schedule-timeout-seconds", type=int, default=None,
                        help="PodGroup spec.scheduleTimeoutSeconds of the crd gangs (unset: the "
                             "CRD default)")
    parser.add_argument("--update", action="store_true",
                        help="add to an existing result file (replacing only the schedulers "
                             "run now) instead of starting a new one")
    parser.add_argument("--rounds", type=_at_least_one, default=1,
                        help="run the schedulers this many times, interleaved (each once, in "
                             "order, then again); the result keeps every round")
    args = parser.parse_args(argv)
    refusal = _update_refusal(args)
    if refusal:
        parser.error(refusal)
    return args


def _at_least_one(text: str) -> int:
    """`--rounds`: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, not {text!r}")
    return value


def _update_refusal(args: argparse.Namespace) -> str | None:
    """Why `--update` cannot run as asked, or None: it replaces single runs, which would leave
    the other rounds of a scheduler measured at another time than its round 1."""
    if not args.update:
        return None
    if args.rounds > 1:
        return "--update replaces single runs: it cannot be combined with --rounds > 1"
    for kind in _kinds(args):
        path = _stem(args, kind).with_suffix(".json")
        if path.exists() and "rounds" in json.loads(path.read_text()):
            return f"--update cannot replace single runs in {path}: it has rounds"
    return None


def _kinds(args: argparse.Namespace) -> list[str]:
    return [kind for kind in args.workloads.split(",") if kind]


def _stem(args: argparse.Namespace, kind: str) -> Path:
    """The result files of workload `kind` without their suffix (`.json`, `.png`)."""
    out: Path = args.out
    return out / f"cluster-n{args.nodes}-{kind}{args.tag}"


def export(ref: str, work: Path) -> Path:
    """`git archive <ref>` of this repository into `work/gangsched-<ref>`."""
    target = work / f"gangsched-{ref.replace('/', '_')}"
    target.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(schedulers.REPO), "archive", ref],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target


def source_version(ref: str | None) -> dict[str, Any]:
    """The commit benchmarked and whether uncommitted changes to services/ were included."""
    def git(*argv: str) -> str:
        return subprocess.run(["git", "-C", str(schedulers.REPO), *argv], capture_output=True,
                              text=True).stdout.strip()

    commit = git("rev-parse", ref or "HEAD")
    dirty = False if ref else bool(git("status", "--porcelain", "services"))
    return {"ref": ref or "working tree", "commit": commit, "uncommitted_services": dirty}


def header(args: argparse.Namespace, load: workload.Workload) -> dict[str, Any]:
    return {
        "benchmark": "cluster", "nodes": args.nodes, "seed": args.seed,
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "workload": {"kind": load.kind, "pods": len(load.pods), "gangs": len(load.gangs),
                     "singletons": sum(1 for p in load.pods if p.gang is None),
                     "slots_per_node": load.slots_per_node,
                     "node_cpu_milli": load.node_cpu_milli, "expected_bound": load.expected_bound,
                     "oversubscribed": load.is_oversubscribed},
        "settings": {"api_priority_and_fairness": False, "max_requests_inflight": 10000,
                     "max_mutating_requests_inflight": 5000,
                     "kube_scheduler_qps_burst": schedulers.QPS,
                     "creator_concurrency": args.concurrency,
                     "gangsched_args": args.gangsched_arg,
                     "gangsched_source": args.gangsched_version,
                     "gangsched_sitecustomize": args.gangsched_sitecustomize,
                     "gangsched_client_qps": "none (no client-side rate limit)",
                     "apiserver_args": args.apiserver_arg,
                     "schedule_timeout_seconds": args.schedule_timeout_seconds},
        "host": {"cpus": os.cpu_count(), "python": platform.python_version(),
                 "load_average_at_start": [round(x, 2) for x in os.getloadavg()]},
        "schedulers": {},
    }


def main() -> int:
    args = parse()
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="gangsched-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    options = Options(concurrency=args.concurrency, time_limit_seconds=args.time_limit_seconds,
                      stall_seconds=args.stall_seconds, profile=args.profile,
                      coscheduling_bin=args.coscheduling_bin,
                      gangsched_args=tuple(args.gangsched_arg),
                      gangsched_src=str(export(args.gangsched_ref, work))
                      if args.gangsched_ref else None,
                      gangsched_sitecustomize=args.gangsched_sitecustomize,
                      apiserver_args=tuple(args.apiserver_arg),
                      schedule_timeout_seconds=args.schedule_timeout_seconds)
    args.gangsched_version = source_version(args.gangsched_ref)
    names = [n for n in args.schedulers.split(",") if n]
    try:
        ceiling = None
        if not args.no_ceiling:
            print("bind ceiling (workload a) ...", flush=True)
            load = workload.build("a", args.nodes, args.seed)
            ceiling = _guarded(lambda: run_ceiling(load, work, options))
            _say("a", "ceiling", ceiling)
        for kind in _kinds(args):
            run_workload(kind, names, args, options, work, ceiling)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"work dir kept: {work}", flush=True)
    return 0


def run_workload(kind: str, names: list[str], args: argparse.Namespace, options: Options,
                 work: Path, ceiling: dict[str, Any] | None) -> None:
    """Run the schedulers `names` on workload `kind`, `args.rounds` times interleaved, and
    write the result file after each run (module docstring: the file's shape)."""
    load = workload.build(kind, args.nodes, args.seed)
    stem = _stem(args, kind)
    result = _start(args, load, stem.with_suffix(".json"), names)
    if ceiling is not None:
        result["ceiling"] = ceiling
    for round_number in range(1, args.rounds + 1):
        for name in names:
            run = _run_one(kind, name, round_number, load, args, options, work)
            record(result, name, run, round_number, args.rounds)
            _save(result, stem)
    result["host"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    _save(result, stem)


def _start(args: argparse.Namespace, load: workload.Workload, path: Path,
           names: list[str]) -> dict[str, Any]:
    """A new result, or with `--update` the one at `path` (if any), noting this update."""
    if not (args.update and path.exists()):
        return header(args, load)
    result: dict[str, Any] = json.loads(path.read_text())
    result.setdefault("updates", []).append(
        {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
         "schedulers": names, "load_average_at_start": list(os.getloadavg())})
    return result


def _run_one(kind: str, name: str, round_number: int, load: workload.Workload,
             args: argparse.Namespace, options: Options, work: Path) -> dict[str, Any]:
    """One measured run of scheduler `name` (`run_scheduler`, or `{"error": ...}`)."""
    label = name if args.rounds == 1 else f"{name}, round {round_number}"
    print(f"[{kind}] {label} ...", flush=True)
    scheduler = schedulers.all_schedulers(
        control_plane_dir(work, kind, name, round_number))[name]
    run = _guarded(lambda: run_scheduler(scheduler, load, work, options, round_number)) | {
        "stall_seconds": options.stall_seconds, "time_limit_seconds": options.time_limit_seconds}
    if name == "gangsched":  # the code under test: which commit (HEAD moves between runs)
        run["source"] = args.gangsched_version
    _say(kind, label, run)
    return run


def record(result: dict[str, Any], name: str, run: dict[str, Any], round_number: int,
           rounds: int) -> None:
    """Put `run` of scheduler `name` in round `round_number` (from 1) of `rounds` into
    `result` and recompute the ratios it changes: round 1 at the top level (`schedulers`,
    `ratios`); with more than one round, also in `rounds` and `ratio_summary`."""
    if round_number == 1:
        result["schedulers"][name] = run
        result["ratios"] = analysis.ratios(result["schedulers"])
    if rounds == 1:
        return
    entries = result.setdefault("rounds", [])
    while len(entries) < round_number:
        entries.append({"schedulers": {}, "ratios": {}})
    entry = entries[round_number - 1]
    entry["schedulers"][name] = run
    entry["ratios"] = analysis.ratios(entry["schedulers"])
    result["ratio_summary"] = analysis.ratio_summary(entries)


def _guarded(measure: Any) -> dict[str, Any]:
    try:
        value: dict[str, Any] = measure()
        return value
    except Exception as error:  # one scheduler failing must not lose the others' numbers
        traceback.print_exc()
        return {"error": f"{type(error).__name__}: {error}"}


def _say(kind: str, name: str, metrics: dict[str, Any]) -> None:
    keys = ("error", "outcome", "pods_bound", "makespan_s", "pods_per_s", "binds_per_s",
            "creation_pods_per_s", "creations_per_s", "max_partial_gangs",
            "partial_gangs_at_end", "utilisation_cpu", "cpu_seconds")
    shown = {k: metrics[k] for k in keys if k in metrics}
    if "gang_latency" in metrics:
        shown["gang_latency"] = metrics["gang_latency"]
    print(f"[{kind}] {name}: {json.dumps(shown)}", flush=True)


def _save(result: dict[str, Any], stem: Path) -> None:
    stem.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    try:
        plot.write(result, stem.with_suffix(".png"))
    except ImportError:
        print("matplotlib missing: no plot (pip install -e '.[bench]')", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
