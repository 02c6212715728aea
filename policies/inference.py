"""A trained policy as plain numpy, for one decision at a time: no torch, no torch-geometric, no SB3.

A decision's network is a handful of small matmuls; torch's per-call overhead (module dispatch,
tensor wrapping) costs more than the arithmetic, and importing torch, torch-geometric and SB3 costs
seconds more than the decision. :class:`NumpyPolicy` holds copies of the weights the actor uses, by
the torch policy's state-dict names (:func:`load_inference_policy` reads them from a policy file,
:meth:`NumpyPolicy.from_module` from a live policy), and evaluates the same functions in float32:
:class:`NumpyGraphEncoder` those of :class:`placer.policies.gnn.GraphEncoder` for one graph (cached by the
caller), :class:`NumpyActor` those of :class:`placer.policies.extractor.PlacementExtractor` and
:class:`placer.policies.scorer.OptionScorer`, scoring only the options the mask leaves open.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from placer.common.errors import PolicyError
from placer.envs.config import EnvConfig
from placer.envs.observation import (
    CLUSTER_FEATURES,
    EDGE_FEATURES,
    GROUP_FEATURES,
    HISTORY_FEATURES,
    JOB_EXTRAS,
    JOB_FEATURES,
    METER_FEATURES,
    NODE_FEATURES,
    OPTION_FEATURES,
)
from placer.envs.resize import RESIZE_FEATURES
from placer.policies.policy_file import read_policy_file

LAYER_NORM_EPS = 1e-5  # torch.nn.LayerNorm's default, as GraphEncoder builds its norms
ACTOR, SCORER = "pi_features_extractor.", "mlp_extractor."  # the actor's weights in the torch policy's state dict

Dense = tuple[np.ndarray, np.ndarray]  # a linear layer: (in, out) weight and (out,) bias, float32


def _dense(weights: Mapping[str, np.ndarray], name: str, inputs: int) -> Dense:
    """The linear layer ``name`` of ``weights`` as float32 copies; ValueError unless it reads ``inputs`` values."""
    weight, bias = weights[f"{name}.weight"], weights[f"{name}.bias"]
    if weight.ndim != 2 or weight.shape[1] != inputs or bias.shape != (weight.shape[0],):
        raise ValueError(f"{name} is {tuple(weight.shape)} + {tuple(bias.shape)}, expected (*, {inputs}) + (*,)")
    return weight.T.astype(np.float32, copy=True), bias.astype(np.float32, copy=True)


def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0, out=x)


@dataclass(frozen=True, eq=False)
class NumpyGraphEncoder:
    """:class:`placer.policies.gnn.GraphEncoder` for one graph: embed, ``rounds`` GINE convolutions each added to its input
    and layer-normed, then masked mean and max over the nodes (2 * hidden,)."""

    embed: Dense
    convs: tuple[tuple[float, Dense, Dense, Dense], ...]  # per round: eps, edge projection, the MLP's two layers
    norms: tuple[Dense, ...]  # per round: LayerNorm weight and bias, (hidden,) each

    @classmethod
    def from_state_dict(cls, weights: Mapping[str, np.ndarray], prefix: str = ACTOR + "graph.") -> NumpyGraphEncoder:
        """The encoder whose weights are ``weights[prefix + ...]`` (KeyError or ValueError when they are not there)."""
        embed = _dense(weights, f"{prefix}embed.0", NODE_FEATURES)
        hidden = embed[0].shape[1]
        convs, norms = [], []
        rounds = 0
        while f"{prefix}convs.{rounds}.eps" in weights:
            rounds += 1
        for i in range(rounds):
            conv, norm = f"{prefix}convs.{i}.", f"{prefix}norms.{i}."
            eps = weights[f"{conv}eps"]
            if eps.shape != (1,):
                raise ValueError(f"{conv}eps is {tuple(eps.shape)}, expected (1,)")
            layers = (
                _dense(weights, f"{conv}lin", EDGE_FEATURES),
                _dense(weights, f"{conv}nn.0", hidden),
                _dense(weights, f"{conv}nn.2", hidden),
            )
            convs.append((float(eps[0]), *layers))
            scale, shift = weights[f"{norm}weight"], weights[f"{norm}bias"]
            if scale.shape != (hidden,) or shift.shape != (hidden,) or layers[2][0].shape[1] != hidden or layers[0][0].shape[1] != hidden:
                raise ValueError(f"round {i} of {prefix[:-1]} does not keep {hidden} features")
            norms.append((scale.astype(np.float32, copy=True), shift.astype(np.float32, copy=True)))
        return cls(embed, tuple(convs), tuple(norms))

    @property
    def hidden(self) -> int:
        return self.embed[0].shape[1]

    def encode(
        self, nodes: np.ndarray, node_mask: np.ndarray, edge_index: np.ndarray, edges: np.ndarray, edge_mask: np.ndarray
    ) -> np.ndarray:
        """(2 * hidden,) float32 encoding of one padded graph: the :data:`placer.envs.observation.GRAPH_KEYS` arrays of
        :func:`placer.envs.observation.graph_arrays` (no batch axis); padding (mask <= 0.5) is dropped."""
        keep = node_mask > 0.5
        compact = np.cumsum(keep) - 1  # padded position -> compact position
        w, b = self.embed
        x = _relu(nodes[keep].astype(np.float32, copy=False) @ w + b)
        edge_keep = edge_mask > 0.5
        source, target = compact[edge_index[:, edge_keep]]
        attrs = edges[edge_keep].astype(np.float32, copy=False)
        for (eps, (wl, bl), (w1, b1), (w2, b2)), (scale, shift) in zip(self.convs, self.norms, strict=True):
            messages = _relu(x[source] + (attrs @ wl + bl))  # GINEConv.message: relu(x_j + lin(e_ij)), j the source
            total = np.zeros_like(x)
            np.add.at(total, target, messages)  # summed at the target i
            out = _relu(_relu((total + np.float32(1.0 + eps) * x) @ w1 + b1) @ w2 + b2)  # nn((1 + eps) x_i + sum), relu
            x = _layer_norm(x + out, scale, shift)
        if not len(x):
            return np.zeros(2 * self.hidden, np.float32)
        return np.concatenate([x.sum(0) / np.float32(len(x)), x.max(0)]).astype(np.float32, copy=False)


def _layer_norm(x: np.ndarray, scale: np.ndarray, shift: np.ndarray) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    centred = x - mean
    variance = (centred * centred).mean(-1, keepdims=True)  # biased, as torch's
    return centred / np.sqrt(variance + np.float32(LAYER_NORM_EPS)) * scale + shift


@dataclass(frozen=True, eq=False)
class NumpyActor:
    """Masked argmax of a policy's logits given the graph encoding."""

    job: Dense
    group: tuple[Dense, Dense]
    context: tuple[Dense, Dense]
    option_rows: np.ndarray  # the option MLP's first layer, split: the part reading the option row ...
    option_context: np.ndarray  # ... and the part reading the context
    option_bias: np.ndarray
    option_out: Dense
    option_score: Dense
    reject_score: Dense
    keep_score: Dense | None = None  # an elastic policy's: action 0 at a resize offer (placer.policies.scorer)

    @classmethod
    def from_state_dict(cls, weights: Mapping[str, np.ndarray], env: EnvConfig, graph_features: int) -> NumpyActor:
        """The actor of ``weights`` (the torch policy's state-dict names) for observations of ``env`` and graph encodings
        of ``graph_features`` values; KeyError or ValueError when the weights are missing or do not fit them."""
        advisers = len(env.advisers)
        job_inputs = JOB_FEATURES + HISTORY_FEATURES * env.history + METER_FEATURES * env.meter + advisers + RESIZE_FEATURES * env.elastic
        job = _dense(weights, f"{ACTOR}job.0", job_inputs)
        first = _dense(weights, f"{ACTOR}group.0", GROUP_FEATURES)
        group = (first, _dense(weights, f"{ACTOR}group.2", first[0].shape[1]))
        group_out = group[1][0].shape[1]
        context_in = graph_features + job[0].shape[1] + 2 * group_out + CLUSTER_FEATURES
        first = _dense(weights, f"{SCORER}context.0", context_in)
        context = (first, _dense(weights, f"{SCORER}context.2", first[0].shape[1]))
        hidden = context[1][0].shape[1]
        option_features = OPTION_FEATURES + advisers
        weight, option_bias = _dense(weights, f"{SCORER}option.0", option_features + hidden)  # reads [option row, context]
        option_out = _dense(weights, f"{SCORER}option.2", weight.shape[1])
        scores = _dense(weights, f"{SCORER}option_score", option_out[0].shape[1]), _dense(weights, f"{SCORER}reject_score", hidden)
        if any(w.shape[1] != 1 for w, _ in scores):
            raise ValueError("option_score and reject_score must give one score each")
        rows, context_part = weight[:option_features], weight[option_features:]
        keep = _dense(weights, f"{SCORER}keep_score", hidden) if env.elastic else None
        return cls(job, group, context, rows, context_part, option_bias, option_out, *scores, keep_score=keep)

    def act(self, graph: np.ndarray, obs: dict[str, np.ndarray], mask: np.ndarray) -> int:
        """The action for one observation (the first of the highest :meth:`logits`: reject wins a tie)."""
        return int(np.argmax(self.logits(graph, obs, mask)))

    def logits(self, graph: np.ndarray, obs: dict[str, np.ndarray], mask: np.ndarray) -> np.ndarray:
        """(1 + O,) float32: the policy's logit of each action of one observation, -inf where ``mask`` (1 + O,) bool
        closes it; ``graph`` is the observation's (2 * hidden,) graph encoding. Only open options are scored."""
        (w, b) = self.job
        inputs = np.concatenate([obs["job"], *(obs[key] for key in JOB_EXTRAS if key in obs)])
        job = _relu(inputs @ w + b)
        groups = obs["groups"][obs["group_mask"] > 0.5]
        (w1, b1), (w2, b2) = self.group
        per_group = _relu(_relu(groups @ w1 + b1) @ w2 + b2)
        if len(per_group):  # .mean(0) and .max(0) without their Python wrappers: the same reductions, the same bits
            mean = np.true_divide(np.add.reduce(per_group, 0), np.intp(len(per_group)), casting="unsafe")
            maximum = np.maximum.reduce(per_group, 0)
        else:
            mean, maximum = np.zeros(w2.shape[1], np.float32), np.full(w2.shape[1], -1.0, np.float32)
        context = np.concatenate([graph, job, mean, maximum, obs["cluster"]]).astype(np.float32, copy=False)
        (w1, b1), (w2, b2) = self.context
        context = _relu(_relu(context @ w1 + b1) @ w2 + b2)
        open_options = np.flatnonzero(mask[1:])
        logits = np.full(len(mask), -np.inf, dtype=np.float32)
        if mask[0]:
            w, b = self.keep_score if self.keep_score is not None and obs["resize"][0] > 0.5 else self.reject_score
            logits[0] = context @ w[:, 0] + b[0]
        if len(open_options):
            rows = obs["options"][open_options]
            hidden = _relu(rows @ self.option_rows + (context @ self.option_context + self.option_bias))
            w, b = self.option_out
            hidden = _relu(hidden @ w + b)
            w, b = self.option_score
            logits[1 + open_options] = hidden @ w[:, 0] + b[0]
        return logits


@dataclass(frozen=True, eq=False)
class NumpyPolicy:
    """The decision-making part of a trained policy: its graph encoder and its actor (weights copied: a policy trained
    further needs a new one)."""

    encoder: NumpyGraphEncoder
    actor: NumpyActor

    @classmethod
    def from_state_dict(cls, weights: Mapping[str, np.ndarray], env: EnvConfig) -> NumpyPolicy:
        """From the torch policy's state dict as numpy arrays, for observations of ``env`` (KeyError or ValueError when
        the weights are missing or do not fit)."""
        encoder = NumpyGraphEncoder.from_state_dict(weights)
        return cls(encoder, NumpyActor.from_state_dict(weights, env, 2 * encoder.hidden))

    @classmethod
    def from_module(cls, policy: Any, env: EnvConfig) -> NumpyPolicy:
        """From a live torch policy (:class:`placer.policies.scorer.OptionPolicy`, any device), its weights as they are now."""
        return cls.from_state_dict({k: v.detach().cpu().numpy() for k, v in policy.state_dict().items()}, env)


def load_inference_policy(path: str | Path) -> tuple[NumpyPolicy, EnvConfig]:
    """The numpy policy of the policy file at ``path`` and its env, torch policy never built; PolicyError (one line) as
    :func:`placer.policies.model.load_policy_file` raises it."""
    payload = read_policy_file(path)
    try:
        policy = NumpyPolicy.from_state_dict(payload.state_dict, payload.env)
        if (policy.encoder.hidden, len(policy.encoder.convs)) != (payload.hidden, payload.rounds):
            raise ValueError(f"the graph encoder has {policy.encoder.hidden} features and {len(policy.encoder.convs)} rounds")
    except (KeyError, ValueError) as exc:
        raise PolicyError(f"{path}: weights do not match the policy architecture: {exc}") from None
    return policy, payload.env
