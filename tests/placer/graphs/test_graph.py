import json
import math

import networkx as nx
import pytest

from placer.common.errors import GraphValidationError
from placer.graphs.job_graph import JobGraph, job_graph_from_dict, load_job_graph
from placer.graphs.pipedream import load_pipedream, parse_pipedream
from tests.placer.toys import chain, op, toy_graph


def test_round_trip_through_json(tmp_path):
    graph = chain()
    graph.to_json(tmp_path / "g.json")
    again = load_job_graph(tmp_path / "g.json")
    assert again.key == graph.key
    assert again.sequential_iteration_s == 6.0
    assert sorted(again.graph.edges(data="tensor_bytes")) == [("a", "b", 8e9)]


def test_graph_is_immutable_and_copied():
    source = nx.DiGraph()
    source.add_node("a", **op(1.0))
    graph = JobGraph(source, name="x")
    source.add_node("b", **op(1.0))
    assert graph.num_ops == 1
    with pytest.raises(nx.NetworkXError):
        graph.graph.add_node("c")


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d["graph"]["nodes"].clear() or d["graph"]["edges"].clear(), "has no ops"),
        (lambda d: [n.update({"pass": "backward"}) for n in d["graph"]["nodes"]], "has no forward ops (every op is 'backward')"),
        (lambda d: d["graph"]["edges"].append({"source": "b", "target": "a", "tensor_bytes": 1.0}), "has a cycle: "),
        (lambda d: d["graph"]["nodes"][0].pop("compute_s"), "node 'a' field 'compute_s' is missing"),
        (lambda d: d["graph"]["nodes"][0].update(compute_s=-1.0), "node 'a' field 'compute_s' must be greater than or equal to 0"),
        (lambda d: d["graph"]["nodes"][1].update(param_bytes=math.inf), "node 'b' field 'param_bytes' must be a finite number, got inf"),
        (lambda d: d["graph"]["nodes"][1].update(param_bytes="big"), "node 'b' field 'param_bytes' must be a number, got 'big'"),
        (lambda d: d["graph"]["edges"].append({"source": "a", "target": "z", "tensor_bytes": 1.0}), "unknown node 'z'"),
        (lambda d: d["graph"]["nodes"].append(dict(d["graph"]["nodes"][0])), "duplicate node id 'a'"),
        (lambda d: d["graph"]["edges"][0].update(tensor_bytes=math.nan), "edge 'a' -> 'b' field 'tensor_bytes' must be a finite number"),
        (lambda d: d.update(schema_version=99), "unsupported schema_version 99"),
        (lambda d: d.update(iterations=0), "field 'iterations' must be greater than or equal to 1, got 0"),
    ],
)
def test_validation_names_the_problem(mutate, message):
    data = chain().to_dict()
    mutate(data)
    with pytest.raises(GraphValidationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        job_graph_from_dict(data)


def test_loading_bad_files_gives_clear_errors(tmp_path):
    with pytest.raises(GraphValidationError, match="cannot read job graph"):
        load_job_graph(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(GraphValidationError, match="invalid JSON: .* at line 1 column 2"):
        load_job_graph(tmp_path / "bad.json")


def test_pipedream_import_mirrors_backward_ops():
    text = (
        "node1 -- Input -- forward_compute_time=2.000, backward_compute_time=0.000, activation_size=100.0, parameter_size=0.0\n"
        "node2 -- Linear -- forward_compute_time=4.000, backward_compute_time=6.000, activation_size=[10.0; 5.0], parameter_size=40.0\n"
        "\tnode1 -- node2\n"
    )
    graph = parse_pipedream(text, name="t")
    g = graph.graph
    assert set(g.nodes) == {"fw:node1", "fw:node2", "bw:node1", "bw:node2"}
    assert g.nodes["fw:node2"]["compute_s"] == 0.004 and g.nodes["bw:node2"]["compute_s"] == 0.006
    assert g.nodes["fw:node2"]["activation_bytes"] == 15.0  # a list of outputs sums
    assert g.nodes["fw:node2"]["param_bytes"] == 40.0 and g.nodes["bw:node2"]["param_bytes"] == 0.0
    assert g.edges["fw:node1", "fw:node2"] == {"tensor_bytes": 100.0, "local": False}
    assert g.edges["bw:node2", "bw:node1"] == {"tensor_bytes": 100.0, "local": False}
    assert g.edges["fw:node2", "bw:node2"]["local"] is True
    assert graph.sequential_iteration_s == pytest.approx(0.012)
    assert graph.parameter_bytes == 40.0


def test_pipedream_errors_name_the_line():
    with pytest.raises(GraphValidationError, match=r"<text>:2: edge node1 -- node9 refers to unknown node 'node9'"):
        parse_pipedream(
            "node1 -- X -- forward_compute_time=1, backward_compute_time=1, activation_size=1, parameter_size=1\n\tnode1 -- node9\n",
            name="t",
        )


def test_shipped_graphs_match_their_pipedream_source(pipedream_dir):
    profiles = sorted(p for p in pipedream_dir.glob("*.txt") if p.stem != "LICENSE")
    assert len(profiles) == 14
    for path in profiles:
        shipped = load_job_graph(f"data/graphs/{path.stem}.json")
        batch = 32 if path.stem.startswith("gnmt") else None  # GNMT's batch is not an image tensor (data/graphs/README.md)
        assert shipped.key == load_pipedream(path, batch_size=batch).key, path.stem
        assert shipped.num_ops == 2 * sum(1 for line in path.read_text().splitlines() if line.startswith("node"))


def test_forward_flops_is_none_without_flops_and_summed_with():
    assert chain().forward_flops is None
    graph = toy_graph({"a": {**op(1.0), "flops": 10.0}, "b": {**op(1.0), "flops": 5.0}}, {("a", "b"): 0.0})
    assert graph.forward_flops == 15.0
    assert json.loads(json.dumps(graph.to_dict()))["graph"]["nodes"][0]["flops"] == 10.0


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d["graph"]["nodes"][0].update(compute_s=10**309), "field 'compute_s' must be a (finite )?number, got 1000"),
        (lambda d: d["graph"]["nodes"][0].update(param_bytes=1e306), "'param_bytes' must be less than or equal to 1000000000000000000"),
        (lambda d: d.update(name="a\ud800b"), "invalid JSON: .* hex escape at line 1 .*not valid Unicode"),
        (lambda d: d["graph"]["nodes"][0].update(name="\udfff"), "invalid JSON: .*not valid Unicode"),
        (lambda d: [n.update(compute_s=0.0) for n in d["graph"]["nodes"]], "every op takes 0 s"),
        (lambda d: d["graph"]["nodes"][0].update(colour="red"), "unknown field 'colour'"),
        (lambda d: d["graph"]["edges"][0].update(weight=1), "unknown field 'weight'"),
        (lambda d: d.update(extra={"nested": True}), "unknown field 'extra'"),
        (lambda d: d.update(iterations=10**400), "field 'iterations' must be less than or equal to 1000000000000, got 1000"),
        (lambda d: d.update(schema_version=True), "unsupported schema_version True"),
        (lambda d: d.update(schema_version=1.5), "unsupported schema_version 1.5"),
        (lambda d: d["graph"]["nodes"][0].pop("name"), "node 'a' field 'name' is missing"),
        (lambda d: d.update(profiled_on={"device": ["V100"], "precision": "fp32"}), "field 'profiled_on.device' must be a string"),
        (lambda d: d["graph"]["nodes"][1].update(id=7), "node #1 field 'id' must be a string, got 7"),
    ],
)
def test_hostile_graphs_are_refused_with_a_message(mutate, message, tmp_path):
    data = chain().to_dict()
    mutate(data)
    path = tmp_path / "g.json"
    path.write_text(json.dumps(data))  # ensure_ascii: lone surrogates travel as \\ud800 escapes, as from a client
    with pytest.raises(GraphValidationError, match=message):
        load_job_graph(path)
