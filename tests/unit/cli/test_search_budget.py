"""The whole-gang search budget is an option like every other planner setting."""

from __future__ import annotations

from click.testing import CliRunner

from services.cli.main import app, planner_config


def test_the_search_budget_reaches_the_planner_config() -> None:
    assert planner_config({"search_budget_steps": 0}).search_budget_steps == 0
    assert planner_config({}).search_budget_steps == 1000


def test_a_negative_search_budget_is_a_usage_error() -> None:
    result = CliRunner().invoke(app, ["simulate", "--search-budget-steps", "-1", "examples"])
    assert result.exit_code == 2
    assert "--search-budget-steps" in result.output and "Traceback" not in result.output
