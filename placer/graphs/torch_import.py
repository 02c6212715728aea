"""Job graphs from PyTorch models (optional: needs the ``torch`` extra).

``from_torch(module, example_inputs)`` exports the model with ``torch.export`` and makes one
forward graph node per ATen op of the exported graph (``call_function`` node; the ``getitem``
nodes that pick one output of a multi-output op are folded into that op). Per op:

- ``flops``: forward FLOPs (a multiply-add counts 2), counted on the exported graph: each op is
  re-run on its exported fake tensors under ``torch.utils.flop_counter.FlopCounterMode``, so
  composite ops (``linear``, ``matmul``, ``conv2d``) count through their decompositions;
  ``scaled_dot_product_attention`` counts its two batched matmuls explicitly (eager CPU kernels
  hide them from the flop counter);
- ``param_bytes``: bytes of the parameters and buffers the op reads first (each counted once);
- ``activation_bytes``: bytes of the op's outputs (exported tensor metadata);
- ``compute_s``: roofline time on ``device_type`` (:mod:`placer.cluster.devices`) from FLOPs and bytes
  read + written; view ops (outputs alias an input) move nothing and take 0 s.

The graph records ``profiled_on = (device_type, "bf16")`` (the roofline's precision), trains in
bf16, and takes its ``batch_size`` from the first dimension of the first example tensor.
Edges carry the producer's output bytes. The backward op of each forward op costs 2x its
forward FLOPs and 2x its bytes (a gradient for the inputs and one for the weights, each
about a forward), the usual rule; :mod:`placer.graphs.backward` mirrors the graph.
"""

from __future__ import annotations

import io
import logging
import operator
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, redirect_stderr
from pathlib import Path
from typing import Any, cast

import networkx as nx
import torch
from torch._guards import detect_fake_mode
from torch.utils._pytree import tree_flatten
from torch.utils.flop_counter import FlopCounterMode, flop_registry, sdpa_flop_count

from placer.cluster.devices import device_model
from placer.common.errors import GraphImportError
from placer.graphs.backward import training_graph
from placer.graphs.job_graph import JobGraph

BACKWARD_FACTOR = 2.0


def from_torch(
    module: torch.nn.Module,
    example_inputs: Sequence[Any] | Any,
    *,
    device_type: str = "A100-80GB",
    iterations: int = 1000,
    name: str | None = None,
    example_kwargs: dict[str, Any] | None = None,
) -> JobGraph:
    """Export ``module`` on ``example_inputs`` and build its training :class:`JobGraph`."""
    device = device_model(device_type)
    if not isinstance(module, torch.nn.Module):
        raise GraphImportError(f"expected a torch.nn.Module, got {type(module).__name__}")
    args = tuple(example_inputs) if isinstance(example_inputs, list | tuple) else (example_inputs,)
    try:
        with torch.no_grad(), _quiet_torch_logs():
            exported = torch.export.export(module, args, kwargs=example_kwargs or {}, strict=False)
    except Exception as exc:  # export errors are many types; name the cause in one line
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise GraphImportError(f"model {type(module).__name__} does not export with these inputs: {type(exc).__name__}: {first}") from None
    forward = _forward_graph(exported, device)
    if forward.number_of_nodes() == 0:
        raise GraphImportError(f"model {type(module).__name__} exported no ops")
    leaves = tree_flatten((args, example_kwargs or {}))[0]
    batch = next((int(t.shape[0]) for t in leaves if isinstance(t, torch.Tensor) and t.dim() > 0), None)
    return JobGraph(
        training_graph(forward),
        name=name or type(module).__name__.lower(),
        iterations=iterations,
        batch_size=batch,
        profiled_on=(device_type, "bf16"),
        precision="bf16",
        _owned=True,
    )


@contextmanager
def _quiet_torch_logs():
    """Keep torch's export diagnostics off stderr: a failure becomes one PlacerError line."""
    names = [n for n in logging.root.manager.loggerDict if n == "torch" or n.startswith("torch.")]
    loggers = [logging.getLogger(name) for name in names]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL + 1)
    try:
        with redirect_stderr(io.StringIO()):  # torch.export prints the failing graph to stderr
            yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


def _tensor_bytes(value: Any) -> float:
    leaves, _ = tree_flatten(value)
    return float(sum(t.numel() * t.element_size() for t in leaves if isinstance(t, torch.Tensor)))


def _meta(arg: Any) -> Any:
    return arg.meta.get("val") if isinstance(arg, torch.fx.Node) else arg


def _flops(node: torch.fx.Node) -> float:
    packet = getattr(node.target, "overloadpacket", None)
    args = cast(tuple[Any, ...], torch.fx.node.map_arg(node.args, _meta))  # map_arg keeps node.args' tuple
    kwargs = torch.fx.node.map_arg(node.kwargs, _meta)
    if packet in flop_registry:
        return float(flop_registry[packet](*args, out_val=node.meta.get("val"), **kwargs))
    if packet is torch.ops.aten.scaled_dot_product_attention:
        query, key, value = args[:3]
        return float(sdpa_flop_count(query.shape, key.shape, value.shape))
    fake_mode = detect_fake_mode(tree_flatten((args, kwargs))[0])
    if fake_mode is None or not isinstance(node.target, torch._ops.OpOverload):
        return 0.0
    try:
        with fake_mode, FlopCounterMode(display=False) as counter:
            node.target(*args, **kwargs)
    except Exception:  # an op that cannot re-run on fake tensors: no FLOPs known
        return 0.0
    return float(counter.get_total_flops())


def _is_view(node: torch.fx.Node) -> bool:
    schema = getattr(node.target, "_schema", None)
    return schema is not None and any(r.alias_info is not None for r in schema.returns)


def _forward_graph(exported: torch.export.ExportedProgram, device) -> nx.DiGraph:
    signature = exported.graph_signature
    weights = {**signature.inputs_to_parameters, **signature.inputs_to_buffers}
    state = exported.state_dict | dict(exported.constants)
    graph = nx.DiGraph()
    owner: dict[torch.fx.Node, str] = {}  # fx node -> graph node that produces it
    claimed: set[str] = set()
    for node in exported.graph.nodes:
        if node.op != "call_function":
            continue
        if node.target is operator.getitem and node.args[0] in owner:
            owner[node] = owner[node.args[0]]
            continue
        op_id = f"{len(graph):05d}_{node.name}"
        owner[node] = op_id
        inputs = [a for a in node.all_input_nodes]
        params = 0.0
        for arg in inputs:
            if arg.op == "placeholder" and arg.name in weights and weights[arg.name] not in claimed:
                claimed.add(weights[arg.name])
                tensor = state.get(weights[arg.name])
                params += _tensor_bytes(tensor if tensor is not None else arg.meta.get("val"))
        out_bytes = _tensor_bytes(node.meta.get("val"))
        in_bytes = sum(_tensor_bytes(a.meta.get("val")) for a in inputs)
        flops = _flops(node)
        moved = 0.0 if _is_view(node) else in_bytes + out_bytes
        graph.add_node(
            op_id,
            name=str(node.target),
            flops=flops,
            backward_flops=BACKWARD_FACTOR * flops,
            compute_s=device.op_seconds(flops, moved),
            backward_compute_s=device.op_seconds(BACKWARD_FACTOR * flops, BACKWARD_FACTOR * moved),
            param_bytes=params,
            activation_bytes=out_bytes,
        )
        for arg in inputs:
            if arg in owner and owner[arg] != op_id:
                size = _tensor_bytes(arg.meta.get("val"))
                if graph.has_edge(owner[arg], op_id):
                    graph.edges[owner[arg], op_id]["tensor_bytes"] += size
                else:
                    graph.add_edge(owner[arg], op_id, tensor_bytes=size)
    return graph


def export_models(factories: dict[str, Callable[[], tuple[torch.nn.Module, Any]]], out: Path) -> Iterator[JobGraph]:
    """Build each ``name: factory`` (``factory()`` returns a module and its example inputs), write
    ``out/NAME.json`` and yield its graph, one model in memory at a time."""
    out.mkdir(parents=True, exist_ok=True)
    for name, factory in factories.items():
        module, inputs = factory()
        graph = from_torch(module, inputs, name=name)
        graph.to_json(out / f"{name}.json")
        del module
        yield graph
