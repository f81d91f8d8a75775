"""`python -m bench.cluster.report FILE...`: a result file as Markdown tables (for bench/README.md).

Layer: bench, read-only. One table per file: per scheduler, the outcome, pods bound, pods/s,
makespan, gang latency p50/p99, partially placed gangs (max during the run, at the end), the
longest partial window, CPU utilisation and CPU milliseconds per bound pod (all processes);
then the ratios gangsched / other, pods/s counting only pods of gangs bound whole
(`whole_gangs_line`) and the bind ceiling; then the API server's requests per bound
pod by verb and resource, per scheduler (`requests_table`: every client's, read from the API
server's own metrics, so the creator's POSTs and KWOK's lease renewals are in every column
alike and the differences between columns are the schedulers'); then the CPU seconds each
process used from the first pod created until the run ended, the scheduler's by process
(`cpu_table`; results from session 27 on); the cores each process used while the pods were
created and after, until the last bind (`phase_table`; from session 33 on); with `--profile`,
the share of kube-apiserver CPU by handler kind (`apiserver_table`). The other tables are of
round 1; a result of more than one round (`--rounds`) also gets, after the first table, pods/s
by scheduler and round with the median, and the median pods/s ratio gangsched / other of the
same-round ratios (`rounds_table`).
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

COLUMNS = ("scheduler", "outcome", "bound", "pods/s", "makespan s", "gang p50 s", "gang p99 s",
           "partial max / end", "longest partial s", "CPU util", "CPU ms/pod")


def _seconds(ms: float | None) -> str:
    return "-" if ms is None else f"{ms / 1000:.1f}"


def row(name: str, m: dict[str, Any]) -> list[str]:
    if "error" in m:
        return [name, f"error: {m['error'][:60]}", *["-"] * (len(COLUMNS) - 2)]
    cost = (m.get("cpu_ms_per_bound_pod") or {}).get("total")
    return [name, m["outcome"].split(" (")[0], str(m["pods_bound"]), str(m["pods_per_s"] or "-"),
            f"{m['makespan_s']:.1f}", _seconds(m["gang_latency"]["p50_ms"]),
            _seconds(m["gang_latency"]["p99_ms"]),
            f"{m['max_partial_gangs']} / {m['partial_gangs_at_end']}",
            _seconds(m["partial_window"]["max_ms"]), f"{m['utilisation_cpu']:.0%}",
            "-" if cost is None else f"{cost:.1f}"]


def table(result: dict[str, Any]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(row(n, m)) + " |" for n, m in result["schedulers"].items()]
    ratios = ", ".join(f"{other} {r['pods_per_s']}" for other, r in result.get("ratios", {}).items()
                       if r.get("pods_per_s") is not None)
    ceiling = result.get("ceiling", {})
    lines.append("")
    if ratios:
        lines.append(f"gangsched / other, pods/s: {ratios}.")
    whole = whole_gangs_line(result)
    if whole:
        lines.append(whole)
    if ceiling.get("binds_per_s"):
        lines.append(f"Bind ceiling: {ceiling['binds_per_s']} binds/s "
                     f"(creation alone {ceiling['creations_per_s']} pods/s).")
    return "\n".join(lines)


def whole_gang_pods_per_s(run: dict[str, Any]) -> float | None:
    """Pods/s counting only the pods bound in gangs bound whole and bound singletons: pods
    bound less those of gangs left partial at the end, over the same makespan (unrounded).
    None for a run that failed or lacks the counts (results before session 21)."""
    bound, partial = run.get("pods_bound"), run.get("pods_in_partial_gangs_at_end")
    makespan = run.get("makespan_s")
    if "error" in run or bound is None or partial is None or not makespan:
        return None
    rate: float = (bound - partial) / makespan
    return rate


def whole_gangs_line(result: dict[str, Any]) -> str:
    """One line: each scheduler's `whole_gang_pods_per_s` and gangsched's ratio to the others'
    (none bound whole: "no whole gang"). In the contention workload a scheduler that is not
    gang-aware binds pods of gangs that never complete (they hold capacity and run nothing),
    which pods/s counts and this does not. Empty when no scheduler has the counts."""
    rates = {name: whole_gang_pods_per_s(run) for name, run in result["schedulers"].items()}
    known = {name: rate for name, rate in rates.items() if rate is not None}
    if not known:
        return ""
    line = ("Pods/s of gangs bound whole (and singletons): "
            + ", ".join(f"{name} {rate:.1f}" for name, rate in known.items()) + ".")
    mine = known.get("gangsched")
    if mine is None:
        return line
    ratios = [f"{name} {mine / rate:.3f}" if rate else f"{name} (no whole gang)"
              for name, rate in known.items() if name != "gangsched"]
    return line + (f" gangsched / other: {', '.join(ratios)}." if ratios else "")


def rounds_table(result: dict[str, Any]) -> str:
    """Pods/s of each scheduler (rows, in round 1's order) by round (columns), then the median
    over its rounds; then the line of `ratio_summary`: per other scheduler, the median of the
    same-round ratios gangsched / other (min-max). Empty for a result of one round."""
    rounds = result.get("rounds", [])
    if len(rounds) < 2:
        return ""
    names = list(dict.fromkeys(name for entry in rounds for name in entry["schedulers"]))
    lines = ["| pods/s by round | " + " | ".join(f"round {n}" for n in range(1, len(rounds) + 1))
             + " | median |", "|" + "---|" * (len(rounds) + 2)]
    for name in names:
        rates = [_pods_per_s(entry["schedulers"].get(name)) for entry in rounds]
        known = [rate for rate in rates if rate is not None]
        cells = [*rates, statistics.median(known) if known else None]
        lines.append(f"| {name} | " + " | ".join(
            "-" if cell is None else f"{cell:.1f}" for cell in cells) + " |")
    summary = ", ".join(f"{other} {s['median']} ({s['min']}-{s['max']})"
                        for other, s in result.get("ratio_summary", {}).items()
                        if s.get("median") is not None)
    if summary:
        lines += ["", f"gangsched / other, pods/s, median of same-round ratios over "
                      f"{len(rounds)} rounds (min-max): {summary}."]
    return "\n".join(lines)


def _pods_per_s(run: dict[str, Any] | None) -> float | None:
    """A run's pods/s; None if it did not run, failed, or bound nothing."""
    if not run or "error" in run:
        return None
    rate: float | None = run.get("pods_per_s")
    return rate


REQUESTS_SHOWN_FROM = 0.05
"""Request kinds with fewer per bound pod than this under every scheduler are left out."""


def requests_per_pod(m: dict[str, Any]) -> dict[str, float]:
    """`verb resource` → requests the API server served per pod bound, in one run."""
    bound = m.get("pods_bound") or 0
    if not bound:
        return {}
    return {kind: count / bound for kind, count in (m.get("api_requests") or {}).items()}


def requests_table(result: dict[str, Any]) -> str:
    """API requests per bound pod by verb and resource, a column per scheduler, the kinds the
    first scheduler sends most first (module docstring)."""
    names = [name for name, m in result["schedulers"].items() if "error" not in m]
    per_pod = {name: requests_per_pod(result["schedulers"][name]) for name in names}
    kinds = {kind for values in per_pod.values() for kind, value in values.items()
             if value >= REQUESTS_SHOWN_FROM}
    if not names or not kinds:
        return ""
    first = per_pod[names[0]]
    ordered = sorted(kinds, key=lambda kind: (-first.get(kind, 0.0), kind))
    lines = ["| requests per bound pod | " + " | ".join(names) + " |",
             "|" + "---|" * (len(names) + 1)]
    lines += ["| " + kind + " | " + " | ".join(f"{per_pod[name].get(kind, 0.0):.2f}"
                                                for name in names) + " |" for kind in ordered]
    totals = " | ".join(f"{sum(per_pod[name].values()):.2f}" for name in names)
    lines.append(f"| all | {totals} |")
    settled = [result["schedulers"][name].get("reports_settled_s") for name in names]
    if any(s is not None for s in settled):  # results before session 24 lack it
        lines.append("| reports settled, s after the last bind | " + " | ".join(
            "-" if s is None else f"{s:.1f}" for s in settled) + " |")
    return "\n".join(lines)


def cpu_table(result: dict[str, Any]) -> str:
    """CPU seconds from the first pod created until the run ended (the last bind, for a
    complete run), a column per scheduler: each control-plane process, the creator left out
    (it is this process); then the scheduler's own processes (`scheduler: <process>`, e.g.
    `gangsched: binder`), each with its children. Empty for results without these numbers."""
    names = [name for name, m in result["schedulers"].items()
             if "error" not in m and m.get("cpu_seconds_to_end")]
    if not names:
        return ""
    runs = result["schedulers"]
    rows: dict[str, dict[str, float]] = {}
    for name in names:
        for process, seconds in runs[name]["cpu_seconds_to_end"].items():
            rows.setdefault("scheduler" if process == name else process, {})[name] = seconds
        by_process = (runs[name].get("scheduler_cpu_seconds_by_process") or {}).get("to_end")
        for process, seconds in (by_process or {}).items():
            rows.setdefault(f"{name}: {process}", {})[name] = seconds
    lines = ["| CPU s until the run ended | " + " | ".join(names) + " |",
             "|" + "---|" * (len(names) + 1)]
    lines += ["| " + row_name + " | " + " | ".join(
        "-" if name not in values else f"{values[name]:.2f}" for name in names) + " |"
        for row_name, values in rows.items()]
    totals = [sum(runs[name]["cpu_seconds_to_end"].values()) for name in names]
    lines.append("| all | " + " | ".join(f"{total:.2f}" for total in totals) + " |")
    return "\n".join(lines)


def phase_table(result: dict[str, Any]) -> str:
    """Cores each process used while the pods were created and after the last one was, until
    the last bind (`cores_by_phase`, from `cpu_timeline`; results from session 33 on): a
    column per scheduler and phase, processes in the first column's order, then `all` and the
    seconds sampled in the phase (whole half-second samples). Empty for results without
    these numbers."""
    columns = [(name, phase, cores) for name, m in result["schedulers"].items()
               for phase, cores in (m.get("cores_by_phase") or {}).items()]
    if not columns:
        return ""
    totals = ("all", "seconds")  # "seconds": printed as "seconds sampled"
    processes: list[str] = []
    for _, _, cores in columns:
        processes += [p for p in cores if p not in totals and p not in processes]
    lines = ["| cores used | " + " | ".join(f"{name}, {phase}" for name, phase, _ in columns)
             + " |", "|" + "---|" * (len(columns) + 1)]
    for process in [*processes, *totals]:
        lines.append(f"| {'seconds sampled' if process == 'seconds' else process} | " + " | ".join(
            "-" if process not in cores else
            (f"{cores[process]:.1f}" if process == "seconds" else f"{cores[process]:.2f}")
            for _, _, cores in columns) + " |")
    return "\n".join(lines)


def apiserver_table(result: dict[str, Any]) -> str:
    """The share of kube-apiserver CPU each handler kind spent, a column per scheduler profiled
    (`apiserver_profile`, taken with `--profile`), with the CPU seconds profiled."""
    profiles = {name: m["apiserver_profile"] for name, m in result["schedulers"].items()
                if m.get("apiserver_profile")}
    profiled = {name: p for name, p in profiles.items() if p.get("by_kind")}
    failed = [f"{name}: {p['error']}" for name, p in profiles.items() if p.get("error")]
    if not profiled:
        return "kube-apiserver not profiled: " + "; ".join(failed) if failed else ""
    names = list(profiled)
    first = profiled[names[0]]["by_kind"]
    kinds = sorted({kind for p in profiled.values() for kind in p["by_kind"]},
                   key=lambda kind: (-first.get(kind, 0.0), kind))
    lines = ["| kube-apiserver CPU by handler | " + " | ".join(names) + " |",
             "|" + "---|" * (len(names) + 1)]
    lines += ["| " + kind + " | " + " | ".join(f"{profiled[n]['by_kind'].get(kind, 0.0):.1%}"
                                                for n in names) + " |" for kind in kinds]
    lines.append("| CPU s profiled | " + " | ".join(f"{profiled[n]['cpu_seconds']:.1f}"
                                                     for n in names) + " |")
    if failed:
        lines += ["", "kube-apiserver not profiled: " + "; ".join(failed)]
    return "\n".join(lines)


def main() -> None:
    """Print the tables of each result file named on the command line; a file that cannot
    be read as a result is one line on stderr and status 1."""
    for path in sys.argv[1:]:
        try:
            result = json.loads(Path(path).read_text())
        except (OSError, ValueError) as error:
            sys.exit(f"bench.cluster.report: cannot read {path}: {error}")
        w = result["workload"]
        print(f"### {Path(path).name}: workload {w['kind']}, {w['pods']} pods, {w['gangs']} gangs, "
              f"{result['nodes']} nodes; load average at start "
              f"{result['host']['load_average_at_start'][0]}\n")
        print(table(result) + "\n")
        by_round = rounds_table(result)
        if by_round:
            print(by_round + "\n")
        requests = requests_table(result)
        if requests:
            print(requests + "\n")
        used = cpu_table(result)
        if used:
            print(used + "\n")
        phased = phase_table(result)
        if phased:
            print(phased + "\n")
        profiled = apiserver_table(result)
        if profiled:
            print(profiled + "\n")


if __name__ == "__main__":
    main()
