"""The actor of a trained policy as plain numpy, for one decision at a time.

A decision's network is a handful of small matmuls; torch's per-call overhead (module dispatch,
tensor wrapping) costs more than the arithmetic. :class:`NumpyActor` copies the weights once and
evaluates the same functions as :class:`policies.extractor.PlacementExtractor` and
:class:`policies.scorer.OptionScorer` in float32, scoring only the options the mask leaves open.
The graph encoding still comes from the torch GNN (once per graph, cached by the caller).
"""

from __future__ import annotations

import numpy as np
from torch import nn

from envs.observation import JOB_EXTRAS


def _linear(layer: nn.Linear) -> tuple[np.ndarray, np.ndarray]:
    """(in, out) weight and (out,) bias of ``layer`` as float32 copies."""
    bias = layer.bias.detach().numpy() if layer.bias is not None else np.zeros(layer.out_features, dtype=np.float32)
    return layer.weight.detach().numpy().T.astype(np.float32, copy=True), bias.astype(np.float32, copy=True)


def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0, out=x)


class NumpyActor:
    """Masked argmax of a policy's logits, weights copied at construction (copy again after training)."""

    def __init__(self, policy) -> None:
        extractor, scorer = policy.pi_features_extractor, policy.mlp_extractor
        self.job = _linear(extractor.job[0])
        self.group = (_linear(extractor.group[0]), _linear(extractor.group[2]))
        self.context = (_linear(scorer.context[0]), _linear(scorer.context[2]))
        weight, self.option_bias = _linear(scorer.option[0])
        features = scorer.option_features
        self.option_rows, self.option_context = weight[:features], weight[features:]  # [row, context] split
        self.option_out = _linear(scorer.option[2])
        self.option_score = _linear(scorer.option_score)
        self.reject_score = _linear(scorer.reject_score)

    def act(self, graph: np.ndarray, obs: dict[str, np.ndarray], mask: np.ndarray) -> int:
        """The action for one observation; ``graph`` is its (2 * hidden,) graph encoding, ``mask`` (1 + O,) bool."""
        (w, b) = self.job
        inputs = np.concatenate([obs["job"], *(obs[key] for key in JOB_EXTRAS if key in obs)])
        job = _relu(inputs @ w + b)
        groups = obs["groups"][obs["group_mask"] > 0.5]
        (w1, b1), (w2, b2) = self.group
        per_group = _relu(_relu(groups @ w1 + b1) @ w2 + b2)
        if len(per_group):
            mean, maximum = per_group.mean(0), per_group.max(0)
        else:
            mean, maximum = np.zeros(w2.shape[1], np.float32), np.full(w2.shape[1], -1.0, np.float32)
        context = np.concatenate([graph, job, mean, maximum, obs["cluster"]]).astype(np.float32, copy=False)
        (w1, b1), (w2, b2) = self.context
        context = _relu(_relu(context @ w1 + b1) @ w2 + b2)
        open_options = np.flatnonzero(mask[1:])
        best, best_score = 0, -np.inf
        if mask[0]:
            w, b = self.reject_score
            best_score = float(context @ w[:, 0] + b[0])
        if len(open_options):
            rows = obs["options"][open_options]
            hidden = _relu(rows @ self.option_rows + (context @ self.option_context + self.option_bias))
            w, b = self.option_out
            hidden = _relu(hidden @ w + b)
            w, b = self.option_score
            scores = hidden @ w[:, 0] + b[0]
            top = int(np.argmax(scores))
            if scores[top] > best_score:
                best = 1 + int(open_options[top])
        return best
