"""Actor-critic heads that score each (degree, placement) option against the context.

SB3's policy maps features to one latent vector and a linear layer to logits. Here the actor's
latent *is* the logits: a shared MLP scores every option row ``[option features, context
embedding]`` (pointer-network style, so a choice is judged by what it does, not by its index),
and a separate head scores "reject" from the context. An elastic network (``EnvConfig(elastic=True)``) has one more
head, "keep", that scores action 0 at a resize offer (the running job stays as it is): the extractor appends the
offer's resize flag to the features, and action 0's logit is the keep head's where it is 1, the reject head's
elsewhere, so keeping a running job and turning an arrival away are learned apart. The critic reads the context and
the mean of the option embeddings; with ``detach_critic`` it reads them detached, so the value loss trains the critic's
own layers and never moves the graph network and scorer the actor shares with it.
"""

from __future__ import annotations

from typing import cast

import torch
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from torch import nn
from torch.distributions import Categorical
from torch.nn import functional as F

from placer.policies.extractor import PlacementExtractor


class OptionScorer(nn.Module):
    """features (B, C + O * F [+ 1]) -> (logits (B, 1 + O), value latent (B, hidden)); with ``keep_head`` the last
    feature is the resize flag (1 at a resize offer), which picks the keep head over the reject head for action 0.
    ``detach_critic`` (a training setting, never saved in a policy file): the critic reads the shared embeddings
    without their gradient."""

    detach_critic = False

    def __init__(self, context_dim: int, num_options: int, option_features: int, hidden: int = 128, keep_head: bool = False) -> None:
        super().__init__()
        self.context_dim, self.num_options, self.option_features = context_dim, num_options, option_features
        self.context = nn.Sequential(nn.Linear(context_dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.option = nn.Sequential(nn.Linear(option_features + hidden, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.option_score = nn.Linear(hidden, 1)
        self.reject_score = nn.Linear(hidden, 1)
        self.keep_score = nn.Linear(hidden, 1) if keep_head else None
        self.critic = nn.Sequential(nn.Linear(2 * hidden, hidden), nn.ReLU())
        self.latent_dim_pi, self.latent_dim_vf = 1 + num_options, hidden

    def _embed(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(context (B, hidden), option embeddings (B, O, hidden)). The option MLP's first layer reads
        ``[option row, context]``; its context half is applied once per sample and broadcast over the O options
        (the same function as concatenating, without a (B, O, F + hidden) tensor and its gradient)."""
        context = self.context(features[:, : self.context_dim])
        end = self.context_dim + self.num_options * self.option_features
        rows = features[:, self.context_dim : end].reshape(features.shape[0], -1, self.option_features)
        first = cast(nn.Linear, self.option[0])
        weight_rows, weight_context = first.weight[:, : self.option_features], first.weight[:, self.option_features :]
        pre = torch.matmul(rows, weight_rows.T) + F.linear(context, weight_context, first.bias).unsqueeze(1)
        return context, self.option[3](self.option[2](self.option[1](pre)))

    def _logits(self, features: torch.Tensor, context: torch.Tensor, options: torch.Tensor) -> torch.Tensor:
        first = self.reject_score(context)
        if self.keep_score is not None:
            first = torch.where(features[:, -1:] > 0.5, self.keep_score(context), first)
        return torch.cat([first, self.option_score(options).squeeze(-1)], dim=1)

    def forward_actor(self, features: torch.Tensor) -> torch.Tensor:
        context, options = self._embed(features)
        return self._logits(features, context, options)

    def _value_latent(self, context: torch.Tensor, options: torch.Tensor) -> torch.Tensor:
        shared = torch.cat([context, options.mean(1)], dim=1)
        return self.critic(shared.detach() if self.detach_critic else shared)

    def forward_critic(self, features: torch.Tensor) -> torch.Tensor:
        return self._value_latent(*self._embed(features))

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        context, options = self._embed(features)
        return self._logits(features, context, options), self._value_latent(context, options)


class OptionPolicy(MaskableActorCriticPolicy):
    """MaskablePPO policy whose logits come from :class:`OptionScorer` (``net_arch``: [hidden]).

    :meth:`anchor_to` regularises PPO toward a fixed policy (the clone PPO starts from): the loss gains
    ``kl * KL(anchor || policy)`` per sample, so the policy moves off its teacher only where the advantage pays for it.
    """

    features_extractor: PlacementExtractor
    mlp_extractor: OptionScorer  # type: ignore[assignment]  # SB3 types it as its MlpExtractor; replacing it is SB3's documented extension
    _anchor: tuple[OptionPolicy, ...] = ()  # a tuple, so that nn.Module does not register (save, optimise) the anchor
    anchor_kl = 0.0
    entropy_coef = 0.0
    anchor_kls: list[float]  # the mean KL of each minibatch since the caller last cleared it

    def anchor_to(self, anchor: OptionPolicy, kl: float, ent_coef: float) -> None:
        """Add ``kl * KL(anchor || self)`` to PPO's loss, ``anchor`` frozen. It rides in SB3's entropy slot: each
        sample's "entropy" becomes ``ent_coef * H - kl * KL``, so the caller must set MaskablePPO's ``ent_coef`` to 1."""
        anchor.set_training_mode(False)
        anchor.requires_grad_(False)
        self._anchor, self.anchor_kl, self.entropy_coef, self.anchor_kls = (anchor,), kl, ent_coef, []

    def evaluate_actions(self, obs, actions: torch.Tensor, action_masks=None):
        if not self._anchor:
            return super().evaluate_actions(obs, actions, action_masks=action_masks)
        features = self.extract_features(obs)
        latent_pi, latent_vf = self.mlp_extractor(features)
        distribution = self._get_action_dist_from_latent(latent_pi)
        distribution.apply_masking(action_masks)
        with torch.no_grad():
            anchor = cast(Categorical, self._anchor[0].get_distribution(obs, action_masks=action_masks).distribution)
        # logits are log-probabilities after masking; a masked action has probability 0 under the anchor
        kl = (anchor.probs * (anchor.logits - cast(Categorical, distribution.distribution).logits)).sum(-1)
        self.anchor_kls.append(float(kl.detach().mean()))
        regulariser = self.entropy_coef * cast(torch.Tensor, distribution.entropy()) - self.anchor_kl * kl
        return self.value_net(latent_vf), distribution.log_prob(actions), regulariser

    def _build_mlp_extractor(self) -> None:
        extractor = self.features_extractor
        hidden = self.net_arch[0] if isinstance(self.net_arch, list) and self.net_arch else 128
        self.mlp_extractor = OptionScorer(
            extractor.context_dim, extractor.num_options, extractor.option_features, hidden, keep_head=extractor.resize_flag
        )

    def _build(self, lr_schedule) -> None:
        super()._build(lr_schedule)
        self.action_net = nn.Identity()  # the scorer's output already is the logits
        scorer = self.mlp_extractor
        for head in (h for h in (scorer.option_score, scorer.reject_score, scorer.keep_score) if h is not None):
            nn.init.orthogonal_(head.weight, gain=0.01)
            nn.init.zeros_(head.bias)
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)  # type: ignore[call-arg]  # as SB3 calls it: Optimizer's stub lacks lr
