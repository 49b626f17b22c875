import pytest

from searchapp.config import IndexConfig
from searchapp.errors import ConfigError, EncoderMismatchError
from searchapp.keyvalue import parse_params


def test_parse_params_reads_numbers_lists_bools_and_strings() -> None:
    got = parse_params(["layer_start=4", "layers=-2,-1", "combine=concat", "clip_left=true", "x=0.5"])
    assert got == {"layer_start": 4, "layers": [-2, -1], "combine": "concat", "clip_left": True, "x": 0.5}


def test_parse_params_rejects_missing_equals() -> None:
    with pytest.raises(ConfigError, match="KEY=VALUE"):
        parse_params(["window"])


def test_config_round_trips_through_settings() -> None:
    cfg = IndexConfig.from_flat(pooling="sbert-wk", pooling_params={"layer_start": 3, "window": 1}, alpha=0.7)
    assert IndexConfig.from_settings(cfg.to_settings()) == cfg


def test_config_validates_names_and_ranges() -> None:
    with pytest.raises(ConfigError, match="unknown pooling"):
        IndexConfig(pooling="maxx")
    with pytest.raises(ConfigError, match="bad parameters"):
        IndexConfig(pooling="mean", pooling_params={"window": 2})
    with pytest.raises(ConfigError, match="unknown model"):
        IndexConfig(model="no-such-model")
    with pytest.raises(ConfigError, match="alpha"):
        IndexConfig.from_flat(alpha=1.5)


def test_check_encoder_names_the_difference() -> None:
    cfg = IndexConfig(pooling="sbert-wk", pooling_params={"layer_start": 3})
    cfg.check_encoder(None, None, None)
    with pytest.raises(EncoderMismatchError, match="pooling_params"):
        cfg.check_encoder(None, "sbert-wk", {"layer_start": 4})
