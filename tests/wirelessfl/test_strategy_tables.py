"""One scenario holds the settings of several algorithms (a table each), and ``--set`` reaches
list items: the layout that lets any scenario switch algorithm."""

from __future__ import annotations

import pytest
import yaml

from wirelessfl.config.loader import apply_overrides, scenario_from_dict, scenario_yaml
from wirelessfl.errors import ConfigError

TABLES = {
    "algorithm": {"name": "soft"},
    "strategy": {
        "soft": {"zeta": 0.01},
        "fslora": {"ratio_choices": [0.25, 0.5], "download": "sketch"},
        "hetlora": {"self_pruning": True},
    },
}


def test_the_running_algorithm_takes_its_table_and_the_others_are_kept() -> None:
    sc = scenario_from_dict(TABLES)
    assert sc.strategy.zeta == 0.01
    assert set(sc.strategy_tables) == {"fslora", "hetlora"}
    assert sc.strategy_tables["fslora"].ratio_choices == [0.25, 0.5]
    switched = scenario_from_dict(TABLES, ["algorithm.name=fslora"])
    assert switched.strategy.download == "sketch" and switched.strategy.ratio_choices == [0.25, 0.5]
    assert set(switched.strategy_tables) == {"soft", "hetlora"}
    plain = scenario_from_dict(TABLES, ["algorithm.name=fedit"])  # no table: its defaults
    assert plain.strategy.aggregation == "weighted_mean"


def test_written_back_as_tables_and_read_back_the_same() -> None:
    sc = scenario_from_dict(TABLES, ["algorithm.name=hetlora"])
    data = yaml.safe_load(scenario_yaml(sc))
    assert set(data["strategy"]) == {"hetlora", "soft", "fslora"}
    assert data["strategy"]["hetlora"]["self_pruning"] is True
    again = scenario_from_dict(data)
    assert scenario_yaml(again) == scenario_yaml(sc)


def test_keys_directly_under_strategy_are_the_running_algorithms_over_its_table() -> None:
    sc = scenario_from_dict(TABLES, ["strategy.zeta=0.5"])
    assert sc.strategy.zeta == 0.5
    flat = scenario_from_dict({"algorithm": {"name": "fslora"}, "strategy": {"sketch_ratio": 0.5}})
    assert flat.strategy.sketch_ratio == 0.5 and flat.strategy_tables == {}


@pytest.mark.parametrize(
    ("overrides", "needle"),
    [
        # a setting of another algorithm left directly under strategy
        (
            ["algorithm.name=fedit", "strategy.self_pruning=true"],
            "strategy.self_pruning: a setting of algorithm 'hetlora', not of 'fedit'",
        ),
        (["strategy.zetta=1"], "strategy.zetta: unknown key"),
        (["strategy.fslora.download=full_rank"], "strategy.fslora.download: must be one of"),
        (["strategy.hetlora.bogus=1"], "strategy.hetlora.bogus: unknown key"),
    ],
)
def test_a_wrong_key_in_any_table_is_one_line(overrides: list[str], needle: str) -> None:
    with pytest.raises(ConfigError) as err:
        scenario_from_dict(TABLES, overrides)
    assert needle in str(err.value)
    assert "\n" not in str(err.value)


def test_set_reaches_list_items() -> None:
    data = {
        "algorithm": {"name": "h2tune"},
        "strategy": {"h2tune": {"groups": [{"clients": 2, "rank": 2}, {"clients": 3, "rank": 8}]}},
        "n_clients": 5,
        "n_scheduled": 2,
    }
    sc = scenario_from_dict(data, ["strategy.h2tune.groups[0].rank=4"])
    assert [g.rank for g in sc.strategy.groups] == [4, 8]
    assert apply_overrides({"a": [[1, 2], [3]]}, ["a[0][1]=7"]) == {"a": [[1, 7], [3]]}


@pytest.mark.parametrize(
    ("item", "needle"),
    [
        (
            "strategy.h2tune.groups[2].rank=4",
            "strategy.h2tune.groups has 2 item(s), so there is no item [2]",
        ),
        ("strategy.h2tune[0].rank=4", "strategy.h2tune is not a list"),
        ("strategy.h2tune.groups.rank=4", "strategy.h2tune.groups is not a table"),
        ("strategy.h2tune.groups[x].rank=4", "is not a key name"),
    ],
)
def test_a_bad_list_path_is_one_line(item: str, needle: str) -> None:
    data = {"strategy": {"h2tune": {"groups": [{"rank": 2}, {"rank": 8}]}}}
    with pytest.raises(ConfigError) as err:
        apply_overrides(data, [item])
    assert needle in str(err.value)
