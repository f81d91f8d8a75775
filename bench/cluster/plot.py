"""The PNG of a result file: bound pods over time, and the bind rate, per scheduler.

Layer: bench; needs matplotlib (`pip install -e ".[bench]"`), imported only here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

RATE_BIN_SECONDS = 5.0
COLOURS = {"trivial": "tab:gray", "trivial-gang": "tab:brown", "gangsched": "tab:orange",
           "kube-scheduler": "tab:blue", "kube-scheduler-gang": "tab:green",
           "coscheduling": "tab:purple"}


def _rate(points: list[list[float]]) -> tuple[list[float], list[float]]:
    """Pods/s in bins of RATE_BIN_SECONDS from cumulative `(t, bound)` points."""
    if len(points) < 2:
        return [], []
    end = points[-1][0]
    xs: list[float] = []
    ys: list[float] = []
    i, previous = 0, 0.0
    t = RATE_BIN_SECONDS
    while t <= end + RATE_BIN_SECONDS:
        while i < len(points) and points[i][0] <= t:
            i += 1
        bound = points[i - 1][1] if i else 0
        xs.append(t - RATE_BIN_SECONDS / 2)
        ys.append((bound - previous) / RATE_BIN_SECONDS)
        previous, t = bound, t + RATE_BIN_SECONDS
    return xs, ys


def write(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (cumulative, rate) = plt.subplots(2, 1, figsize=(10, 8), sharex=True)
    for name, metrics in result["schedulers"].items():
        points = metrics.get("timeline")
        if "error" in metrics:
            continue
        if not points or len(points) < 2:  # nothing bound: show how long it was given
            waited_s = metrics.get("creation_s", 0) + metrics.get("stall_seconds", 0)
            cumulative.plot([0, waited_s], [0, 0], linestyle="--", color=COLOURS.get(name),
                            label=f"{name} (0 bound: {metrics.get('outcome')})")
            continue
        label = f"{name} ({metrics.get('pods_per_s')} pods/s)"
        cumulative.step([p[0] for p in points], [p[1] for p in points], where="post",
                        label=label, color=COLOURS.get(name))
        rate.plot(*_rate(points), label=name, linewidth=1, color=COLOURS.get(name))
    workload = result["workload"]
    cumulative.axhline(workload["expected_bound"], color="grey", linestyle=":", linewidth=1)
    ceiling = result.get("ceiling", {}).get("binds_per_s")
    if ceiling:
        rate.axhline(ceiling, color="black", linestyle="--", linewidth=1,
                     label=f"bind ceiling ({ceiling} binds/s)")
    cumulative.set_ylabel("pods bound")
    cumulative.set_title(f"workload {workload['kind']}: {workload['pods']} pods in "
                         f"{workload['gangs']} gangs, {result['nodes']} KWOK nodes "
                         f"(t = 0: first pod created)")
    cumulative.legend(loc="lower right", fontsize=8)
    rate.set_ylabel(f"binds/s ({RATE_BIN_SECONDS:.0f}s bins)")
    rate.set_xlabel("seconds since the first pod was created")
    rate.legend(loc="upper right", fontsize=8)
    for axis in (cumulative, rate):
        axis.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
