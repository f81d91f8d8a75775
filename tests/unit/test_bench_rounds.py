"""Rounds of the cluster benchmark: the schedulers run N times, interleaved; the pods/s ratio
gangsched / other is taken within each round and summarised by its median, min and max."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import bench.cluster.__main__ as cli
from bench.cluster import plot
from bench.cluster.analysis import ratio_summary
from bench.cluster.run import Options, control_plane_dir
from bench.cluster.schedulers import Scheduler, all_schedulers
from bench.cluster.workload import Workload


def _round(**pods_per_s: float | None) -> dict[str, Any]:
    return {"ratios": {name: {"pods_per_s": value, "gang_latency_p50": None,
                              "gang_latency_p99": None} for name, value in pods_per_s.items()}}


def test_ratio_summary_is_the_median_min_and_max_of_same_round_ratios() -> None:
    rounds = [_round(**{"kube-scheduler": 1.8, "trivial": 0.65}),
              _round(**{"kube-scheduler": 1.2, "trivial": 0.7}),
              _round(**{"kube-scheduler": 1.5, "trivial": 0.5}),
              _round(**{"kube-scheduler": 2.1, "trivial": 0.6})]
    assert ratio_summary(rounds) == {
        "kube-scheduler": {"pods_per_s": [1.8, 1.2, 1.5, 2.1], "median": 1.65,
                           "min": 1.2, "max": 2.1},
        "trivial": {"pods_per_s": [0.65, 0.7, 0.5, 0.6], "median": 0.625,
                    "min": 0.5, "max": 0.7},
    }


def test_a_round_without_a_ratio_is_none_and_left_out_of_the_summary() -> None:
    rounds = [_round(trivial=0.5), {"ratios": {}}, _round(trivial=None), _round(trivial=0.9)]
    assert ratio_summary(rounds) == {
        "trivial": {"pods_per_s": [0.5, None, None, 0.9], "median": 0.7, "min": 0.5, "max": 0.9}}


def test_no_summary_without_ratios() -> None:
    assert ratio_summary([{"ratios": {}}, _round(trivial=None)]) == {
        "trivial": {"pods_per_s": [None, None], "median": None, "min": None, "max": None}}


def _run(pods_per_s: float) -> dict[str, Any]:
    return {"pods_per_s": pods_per_s, "gang_latency": {"p50_ms": 100.0, "p99_ms": 200.0}}


def _runs_on_disk(path: Path) -> list[tuple[int, str]]:
    """(round, scheduler) of every run the result file at `path` holds, if it exists."""
    if not path.exists():
        return []
    result = json.loads(path.read_text())
    rounds = result.get("rounds", [{"schedulers": result["schedulers"]}])
    return [(number, name) for number, entry in enumerate(rounds, 1)
            for name in entry["schedulers"]]


def test_rounds_run_interleaved_and_the_file_is_written_after_each_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    args = cli.parse(["--nodes", "10", "--rounds", "3", "--out", str(tmp_path)])
    args.gangsched_version = {"ref": "working tree"}
    path = tmp_path / "cluster-n10-a.json"
    rates = {("trivial", 1): 100.0, ("gangsched", 1): 150.0, ("kube-scheduler", 1): 50.0,
             ("trivial", 2): 80.0, ("gangsched", 2): 100.0, ("kube-scheduler", 2): 40.0,
             ("trivial", 3): 100.0, ("gangsched", 3): 90.0, ("kube-scheduler", 3): 60.0}
    calls: list[tuple[int, str, list[tuple[int, str]]]] = []

    def fake_run(scheduler: Scheduler, load: Workload, work: Path, options: Options,
                 round_number: int) -> dict[str, Any]:
        calls.append((round_number, scheduler.name, _runs_on_disk(path)))
        return _run(rates[scheduler.name, round_number])

    monkeypatch.setattr(cli, "run_scheduler", fake_run)
    monkeypatch.setattr(plot, "write", lambda result, path: None)
    cli.run_workload("a", ["trivial", "gangsched", "kube-scheduler"], args, Options(),
                     tmp_path / "work", None)

    order = [(number, name) for number, name, _ in calls]
    assert order == [(1, "trivial"), (1, "gangsched"), (1, "kube-scheduler"),
                     (2, "trivial"), (2, "gangsched"), (2, "kube-scheduler"),
                     (3, "trivial"), (3, "gangsched"), (3, "kube-scheduler")]
    assert [on_disk for _, _, on_disk in calls] == [order[:i] for i in range(len(order))]
    result = json.loads(path.read_text())
    assert _runs_on_disk(path) == order
    assert result["schedulers"] == result["rounds"][0]["schedulers"]
    assert result["schedulers"]["gangsched"]["pods_per_s"] == 150.0
    assert result["ratios"] == result["rounds"][0]["ratios"]
    assert result["rounds"][1]["ratios"]["kube-scheduler"]["pods_per_s"] == 2.5
    assert result["ratio_summary"] == {
        "kube-scheduler": {"pods_per_s": [3.0, 2.5, 1.5], "median": 2.5, "min": 1.5, "max": 3.0},
        "trivial": {"pods_per_s": [1.5, 1.25, 0.9], "median": 1.25, "min": 0.9, "max": 1.5}}


def test_one_round_writes_neither_rounds_nor_a_summary() -> None:
    result: dict[str, Any] = {"schedulers": {}}
    for name, rate in (("gangsched", 150.0), ("trivial", 100.0)):
        cli.record(result, name, _run(rate), 1, 1)
    assert sorted(result) == ["ratios", "schedulers"]
    assert result["ratios"]["trivial"]["pods_per_s"] == 1.5


@pytest.mark.parametrize("value", ["0", "-1", "two"])
def test_rounds_below_one_are_an_argparse_error(
        value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.parse(["--rounds", value])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"python -m bench.cluster: error: argument --rounds: must be an integer >= 1, "
        f"not '{value}'")


def test_update_with_rounds_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.parse(["--update", "--rounds", "2"])
    assert capsys.readouterr().err.splitlines()[-1] == (
        "python -m bench.cluster: error: --update replaces single runs: it cannot be combined "
        "with --rounds > 1")


def test_update_of_a_file_with_rounds_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "cluster-n10-b.json"
    path.write_text(json.dumps({"schedulers": {}, "rounds": []}))
    with pytest.raises(SystemExit):
        cli.parse(["--update", "--nodes", "10", "--workloads", "a,b", "--out", str(tmp_path)])
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"python -m bench.cluster: error: --update cannot replace single runs in {path}: "
        "it has rounds")


def test_round_dirs_do_not_collide_and_round_one_keeps_its_name(tmp_path: Path) -> None:
    names = [*all_schedulers(tmp_path), "ceiling"]
    dirs = [control_plane_dir(tmp_path, kind, name, number)
            for kind in "abc" for name in names for number in range(1, 12)]
    assert len(set(dirs)) == len(dirs)
    assert control_plane_dir(tmp_path, "c", "gangsched") == tmp_path / "c-gangsched"
    assert control_plane_dir(tmp_path, "c", "gangsched", 1) == tmp_path / "c-gangsched"
    assert control_plane_dir(tmp_path, "c", "gangsched", 2) == tmp_path / "c-gangsched-r2"
