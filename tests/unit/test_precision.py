import pytest

from searchapp.encode.precision import check_precision, resolve
from searchapp.errors import ConfigError


def test_explicit_precisions_pass_through_and_auto_resolves() -> None:
    assert resolve("fp32") == "fp32"
    assert resolve("bf16") == "bf16"
    assert resolve("auto") in ("fp32", "bf16")


def test_unknown_precision_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="fp8"):
        check_precision("fp8")
