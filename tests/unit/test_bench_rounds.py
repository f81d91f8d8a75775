"""Rounds of the cluster benchmark: the schedulers run N times, interleaved; the pods/s ratio
gangsched / other is taken within each round and summarised by its median, min and max."""

from __future__ import annotations

from typing import Any

from bench.cluster.analysis import ratio_summary


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
