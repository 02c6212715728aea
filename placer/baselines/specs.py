"""Policy names, parsed once: ``KIND[=LABEL][:ARG...][+RULE][@DISCIPLINE]`` <-> :class:`PolicySpec`.

``KIND`` is a heuristic or planner of this package (``para_max``, ``fixed:8``, ``lean:admit=0.9``,
``lookahead:k=4:h=16`` ...) or a plug-in's name (``learned``, ``learned:history``); ``ARG`` is
``key=value`` or one positional value (``fixed:8``, ``learned:history``); ``+RULE`` picks the
placement rule (``first_fit``, ``best_fit``, ``spread``); ``@DISCIPLINE`` the order in which the
queue offers waiting jobs (``fifo``, ``edf``, ``sjf``, optionally ``-bf``); ``=LABEL`` names the policy in an
evaluation's results, tables and per-job table (``learned=mine:runs/a/policy.pt``: a policy file of one's own, under
``mine``), so that several of one kind stand side by side. ``str(spec)`` is the exact inverse of :meth:`PolicySpec.parse`.
Every policy name in the project goes through here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from placer.cluster.placement import PLACEMENT_RULES
from placer.common.errors import PolicyError, WorkloadError
from placer.sim.queueing import QueueConfig

_GRAMMAR = re.compile(
    r"(?P<kind>[a-z_][a-z0-9_-]*)(?:=(?P<label>[^:+@=,\[\]]*))?(?P<args>(?::[^:+@]+)*)(?:\+(?P<rule>[a-z_]+))?(?:@(?P<discipline>[a-z-]+))?"
)
LABEL = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*")  # what a label may be: no character the grammar or a merged name ([...]) uses
_RULE_OPTIONS = [f"+{rule}" for rule in PLACEMENT_RULES]
HEURISTIC_USAGE = (
    "para_max, para_min, fixed:K, random, lean, lean:cap=K:admit=Q:free=F (Q: a quantile, auto or best), eff:E, switch:U, "
    "best, single-best, adaptive, elasticflow, chronus, elastic-best, elastic_lean (lean's options but Q: a quantile or auto; "
    "shrink=all: shrinks any job to admit, not only those it grew), "
    "lookahead:k=K:h=H:m=M or hindsight:h=H:m=M, "
    f"optionally {', '.join(_RULE_OPTIONS[:-1])} or {_RULE_OPTIONS[-1]} and @fifo, @edf or @sjf (-bf)"
)


_DECIMAL = re.compile(r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")  # no sign, underscore, space, inf or nan


def _float(text: str) -> float:
    """A plain finite decimal number (``0.9``, ``1e-3``), or ValueError: Python's ``float`` alone also takes ``1_0``,
    `` 1``, ``-0``, ``inf`` and ``1e400`` (inf)."""
    if not _DECIMAL.fullmatch(text) or not math.isfinite(value := float(text)):
        raise ValueError(text)
    return value


def positive_int(text: str) -> int:
    if not text.isascii() or not text.isdigit():
        raise ValueError(text)
    value = int(text)
    if value < 1:
        raise ValueError(text)
    return value


def _fraction(text: str) -> float:
    value = _float(text)
    if not 0 <= value <= 1:
        raise ValueError(text)
    return value


def _share(text: str) -> float:
    value = _float(text)
    if not 0 < value <= 1:
        raise ValueError(text)
    return value


def positive_finite(text: str) -> float:
    """A number in (0, inf), or ValueError."""
    value = _float(text)  # finite
    if not value > 0:
        raise ValueError(text)
    return value


def _non_negative(text: str) -> float:
    value = _float(text)
    if not value >= 0:
        raise ValueError(text)
    return value


def _admission(text: str) -> float | str:
    if text in ("auto", "best"):
        return text
    value = _float(text)
    if not 0 < value <= 1:
        raise ValueError(text)
    return value


def _online_admission(text: str) -> float | str:
    if text == "best":
        raise ValueError(text)  # tuned on other streams: no planner's rollouts can use it
    return _admission(text)


def _shrink_scope(text: str) -> str:
    """``elastic_lean``'s ``shrink=all`` (any running job may shrink to admit; without it, only those it grew)."""
    if text != "all":
        raise ValueError(text)
    return text


Converter = Callable[[str], Any]
_LEAN: dict[str, Converter] = {"cap": positive_int, "admit": _admission, "free": _fraction}
_PLANNER: dict[str, Converter] = {**_LEAN, "admit": _online_admission, "h": positive_int, "m": _non_negative}
# heuristic kind -> (its key=value parameters, the converter of its one positional argument or None)
HEURISTIC_KINDS: dict[str, tuple[dict[str, Converter], Converter | None]] = {
    "para_max": ({}, None),
    "para_min": ({}, None),
    "random": ({}, None),
    "fixed": ({}, positive_int),
    "lean": (_LEAN, None),
    "eff": ({}, _share),
    "switch": ({}, _fraction),
    "best": ({}, None),
    "single-best": ({}, None),
    "elastic-best": ({}, None),
    "adaptive": ({}, None),
    "elasticflow": ({}, None),
    "chronus": ({}, None),
    "elastic_lean": ({**_LEAN, "admit": _online_admission, "shrink": _shrink_scope}, None),
    "lookahead": ({**_PLANNER, "k": positive_int}, None),
    "hindsight": (_PLANNER, None),
}
_KIND_USAGE = {  # what each heuristic kind with arguments takes (the others take none)
    "fixed": "fixed:K (K devices)",
    "lean": "lean:cap=K:admit=Q:free=F, each optional and once (Q: a quantile in (0, 1], auto or best; F in [0, 1])",
    "eff": "eff:E (a parallel efficiency in (0, 1])",
    "switch": "switch:U (a utilisation in [0, 1])",
    "elastic_lean": "elastic_lean:cap=K:admit=Q:free=F:shrink=all, each optional and once (Q: a quantile in (0, 1] or auto; "
    "shrink=all: any running job may shrink to admit, not only those it grew)",
    "lookahead": "lookahead:k=K:h=H:m=M and lean's cap, admit (a quantile or auto) and free, each optional and once",
    "hindsight": "hindsight:h=H:m=M and lean's cap, admit (a quantile or auto) and free, each optional and once",
}


def kind_usage(kind: str) -> str:
    """What the heuristic ``kind``'s arguments may be, in a few words (``use fixed:K ...``, ``best takes no arguments``)."""
    return f"use {_KIND_USAGE[kind]}" if kind in _KIND_USAGE else f"{kind} takes no arguments"


@dataclass(frozen=True)
class PolicySpec:
    """A parsed policy name.

    ``kind``: the policy family; ``args``: its arguments in the order written, each ``(key, text)`` with
    ``key`` None for the positional one; ``rule``: the placement rule, None for the policy's default;
    ``discipline``: the queue discipline it asks for (``edf-bf``), None to use the run's; ``label``: the name it is
    reported under (:attr:`name`), None for the spec itself. A label names; it changes nothing the policy does.
    """

    kind: str
    args: tuple[tuple[str | None, str], ...] = ()
    rule: str | None = None
    discipline: str | None = None
    label: str | None = None

    @classmethod
    def parse(cls, text: str | PolicySpec, *, plugins: Mapping[str, object] | None = None) -> PolicySpec:
        """The spec of ``text`` (a spec passes through). Heuristic kinds are checked fully here; a
        plug-in's arguments are checked by the plug-in when it is built. ``plugins``: the names
        accepted besides the heuristics (default: the installed ``placer.policies`` entry points)."""
        if isinstance(text, PolicySpec):
            return text
        match = _GRAMMAR.fullmatch(text.strip()) if isinstance(text, str) else None
        if match is None:
            raise PolicyError(f"malformed policy name {text!r}: use KIND[=LABEL][:ARG...][+RULE][@DISCIPLINE]; {_valid(plugins)}")
        args = tuple(_argument(part) for part in match["args"].split(":")[1:])
        spec = cls(match["kind"], args, match["rule"], match["discipline"], match["label"])
        spec._check(text, plugins)
        return spec

    def __str__(self) -> str:
        args = "".join(f":{text}" if key is None else f":{key}={text}" for key, text in self.args)
        label = f"={self.label}" if self.label is not None else ""
        return f"{self.kind}{label}{args}{'+' + self.rule if self.rule else ''}{'@' + self.discipline if self.discipline else ''}"

    @property
    def name(self) -> str:
        """What the policy is reported as: its label, else the spec as written."""
        return self.label if self.label is not None else str(self)

    @property
    def unlabelled(self) -> PolicySpec:
        """The policy itself, without its label (what is built and run)."""
        return self.replace(label=None)

    @property
    def positional(self) -> str | None:
        """The positional argument (``8`` of ``fixed:8``, ``history`` of ``learned:history``), if any."""
        return next((text for key, text in self.args if key is None), None)

    @property
    def value(self) -> Any:
        """A heuristic's positional argument, converted (``8`` of ``fixed:8``, ``0.7`` of ``eff:0.7``); None if it has none."""
        _, converter = HEURISTIC_KINDS.get(self.kind, ({}, None))
        text = self.positional
        return None if converter is None or text is None else converter(text)

    @property
    def options(self) -> dict[str, Any]:
        """A heuristic's ``key=value`` arguments, converted (``{"admit": 0.9, "cap": 8}``)."""
        keys, _ = HEURISTIC_KINDS.get(self.kind, ({}, None))
        return {key: keys[key](text) for key, text in self.args if key is not None and key in keys}

    def queue(self, queue: QueueConfig) -> QueueConfig:
        """The queue a run of this policy uses: ``queue`` with the policy's own discipline, if it names one."""
        if self.discipline is None or not queue.enabled:
            return queue
        own = QueueConfig.parse(self.discipline)
        return QueueConfig(queue.capacity, own.discipline, own.backfill)

    def replace(self, **changes: Any) -> PolicySpec:
        """A copy with some fields changed (``spec.replace(discipline=None)``)."""
        fields = {"kind": self.kind, "args": self.args, "rule": self.rule, "discipline": self.discipline, "label": self.label}
        return PolicySpec(**(fields | changes))

    def _check(self, text: str, plugins: Mapping[str, object] | None) -> None:
        if self.label is not None:
            check_label(self.label, text, plugins)
        if self.rule is not None and self.rule not in PLACEMENT_RULES:
            raise PolicyError(f"unknown placement rule {self.rule!r} in {text!r} (rules: {', '.join(PLACEMENT_RULES)})")
        if self.discipline is not None:
            try:
                QueueConfig.parse(self.discipline)
            except WorkloadError:
                raise PolicyError(f"bad queue discipline {self.discipline!r} in {text!r}: use fifo, edf or sjf, optionally -bf") from None
        if self.kind in HEURISTIC_KINDS:
            if not self._heuristic_args_valid():
                raise PolicyError(f"unknown policy {text!r}: {kind_usage(self.kind)}")
        elif self.kind not in _plugin_names(plugins):
            raise PolicyError(f"unknown policy {text!r}: use {_valid(plugins)}")

    def _heuristic_args_valid(self) -> bool:
        keys, positional = HEURISTIC_KINDS[self.kind]
        return self.arguments(keys, positional) is not None

    def arguments(
        self, keys: Mapping[str, Converter], positional: Converter | None, *, optional: bool = False
    ) -> dict[str | None, Any] | None:
        """The arguments converted, ``key`` -> value (None: the positional one), when each key is one of ``keys`` and
        appears once, each converter accepts its text and the positional argument is given where ``positional`` takes
        one (unless ``optional``); else None."""
        converted: dict[str | None, Any] = {}
        for key, text in self.args:
            converter = positional if key is None else keys.get(key)
            if converter is None or key in converted:
                return None
            try:
                converted[key] = converter(text)
            except ValueError:
                return None
        return converted if positional is None or optional or None in converted else None


def check_label(label: str, text: str, plugins: Mapping[str, object] | None = None) -> None:
    """A one-line :class:`PolicyError` unless ``label`` (of the policy written ``text``) is a letter, then letters, digits,
    ``_``, ``.`` or ``-``, and no policy's kind (a label that reads as a policy would be taken for it)."""
    if not LABEL.fullmatch(label):
        raise PolicyError(f"bad label {label!r} in {text!r}: a letter, then letters, digits, '_', '.' or '-' (learned=mine:PATH.pt)")
    if label in HEURISTIC_KINDS or label in _plugin_names(plugins):
        raise PolicyError(f"label {label!r} in {text!r} is the name of a policy: pick another")


def names_a_file(text: str) -> bool:
    """Whether a plug-in's positional argument is a file path (``learned:runs/a/policy.pt``: with a ``/`` or ending
    ``.pt``) rather than a name (``learned:pacml``). A path holds no ``:``, ``+``, ``@`` or ``,`` (the grammar's own)."""
    return "/" in text or "\\" in text or text.endswith(".pt")


def _argument(part: str) -> tuple[str | None, str]:
    key, eq, value = part.partition("=")
    return (key, value) if eq else (None, part)


def _plugin_names(plugins: Mapping[str, object] | None) -> list[str]:
    if plugins is not None:
        return sorted(plugins)
    from placer.baselines.plugins import plugin_names  # entry points: read only when a name is not a heuristic

    return plugin_names()


def _valid(plugins: Mapping[str, object] | None) -> str:
    names = _plugin_names(plugins)
    return HEURISTIC_USAGE + (f"; plug-ins: {', '.join(names)}" if names else "")
