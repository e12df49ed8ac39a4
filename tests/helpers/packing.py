"""Random trajectories and a tiny model for the trainer's packing and prefix tests
(tests/engine/test_training_packing.py, test_agent_gpu.py)."""

from collections.abc import Sequence

import torch
from transformers import LlamaForCausalLM

from engine.agent.trajectory import MODEL, PROMPT, TOOL, Trajectory
from tests.helpers.models import tiny_llama


def trajectory(
    seed: int, prompt: int, tool: int, model: int, system: Sequence[int] = ()
) -> Trajectory:
    """Random tokens: a prompt (after `system`, a prompt every trajectory shares), a model
    turn, a tool result, a model turn."""
    g = torch.Generator().manual_seed(seed)
    t = Trajectory(question=f"q{seed}", model_name="test")
    t.append([*system, *torch.randint(0, 64, (prompt,), generator=g).tolist()], PROMPT)
    t.append(torch.randint(0, 64, (model,), generator=g).tolist(), MODEL, [-1.0] * model)
    t.append(torch.randint(0, 64, (tool,), generator=g).tolist(), TOOL)
    t.append(torch.randint(0, 64, (model,), generator=g).tolist(), MODEL, [-1.0] * model)
    return t


def tiny_model() -> LlamaForCausalLM:
    """The toy's tiny Llama over a vocabulary of 64 ids, at seed 0, in eval mode."""
    torch.manual_seed(0)
    return tiny_llama(64).eval()


SYSTEM = list(range(3, 23))  # 20 tokens every trajectory of a cold start begins with
