import pytest

from searchapp.encode.precision import check_precision, resolve
from searchapp.errors import ConfigError


def test_explicit_precisions_pass_through_and_auto_resolves() -> None:
    assert resolve("fp32") == "fp32"
    assert resolve("bf16") == "bf16"
    assert resolve("int8") == "int8"
    assert resolve("auto") in ("fp32", "bf16", "int8")


def test_unknown_precision_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="fp8"):
        check_precision("fp8")


def test_a_bf16_model_holds_its_linear_weights_in_bf16_once() -> None:
    """Autocast re-cast every fp32 Linear weight on each forward pass (most of a short batch's time, and twice the
    memory); the weights are cast once at load instead, rounded as autocast rounds them: the same states."""
    import torch

    from searchapp.encode.transformer import TransformerModel

    model = TransformerModel("all-MiniLM-L6-v2", precision="bf16")
    linears = [m for m in model.model.modules() if isinstance(m, torch.nn.Linear)]
    assert linears and all(m.weight.dtype == torch.bfloat16 for m in linears)
    assert model.model.embeddings.word_embeddings.weight.dtype == torch.float32  # autocast leaves these fp32
    texts = ["Rotate the signing keys.", "A short one", "Passages are split by sentence within a budget."]
    once = model.forward(texts, all_layers=False).hidden_states
    with torch.no_grad():
        for m, fp32 in zip(linears, [m for m in TransformerModel("all-MiniLM-L6-v2").model.modules()
                                     if isinstance(m, torch.nn.Linear)], strict=True):
            m.weight.data, m.bias.data = fp32.weight.data.clone(), fp32.bias.data.clone()
    per_call = model.forward(texts, all_layers=False).hidden_states  # autocast casting on every call
    assert torch.equal(once, per_call)
