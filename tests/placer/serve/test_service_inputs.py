"""Request bodies the audit found costly or wrong: huge malformed graphs, all-backward graphs, retried JSON."""

import json
import time

from fastapi.testclient import TestClient

from placer.baselines.registry import make_heuristic
from placer.serve.http import create_app
from placer.serve.settings import ServiceSettings
from tests.placer.toys import chain, toy_cluster

CLUSTER = toy_cluster(2, 2, inter=(1e9, 0.0))
HEAD = '{"beta":1.0,"graph":{"schema":"placer.job_graph","schema_version":2,"name":"g","graph":{"edges":[],"nodes":['
NODE = '{"id":"n%d","name":"x","pass":"forward","compute_s":1.0,"param_bytes":0,"activation_bytes":0}'


def _client(**settings) -> TestClient:
    return TestClient(create_app(CLUSTER, make_heuristic("fixed:1"), ServiceSettings(**settings)))


def _post(client: TestClient, body: bytes, **headers):
    return client.post("/v1/placements", content=body, headers={"content-type": "application/json", **headers})


def test_a_huge_malformed_graph_is_refused_at_its_first_bad_op_in_one_pass():
    body = (HEAD + ",".join(f'{{"id":"n{i}"}}' for i in range(400_000)) + "]}}}").encode()  # 5.9 MB, the audit's size
    with _client(max_graph_ops=400_000) as client:  # a limit it is within: parsed, and refused at its first op
        started = time.monotonic()
        response = _post(client, body)
        elapsed = time.monotonic() - started
    assert response.status_code == 422 and response.json() == {"detail": "graph: node #0 field 'name' is missing"}
    assert elapsed < 10, elapsed  # was about a minute (every op's errors built twice)
    with _client() as client:  # 800,000 JSON values: more than a graph of the default limits holds, refused unparsed
        response = _post(client, body)
    assert response.status_code == 413 and "JSON values, more than a graph of 20000 ops and 60000 edges" in response.text


def test_a_graph_over_the_op_limit_is_refused_before_it_is_parsed():
    body = (HEAD + ",".join(NODE % i for i in range(30)) + "]}}}").encode()
    with _client(max_graph_ops=20) as client:
        response = _post(client, body)
        assert response.status_code == 413 and "more than 20 ops" in response.text
        assert _post(client, body.replace(b'"pass"', b'"pass" ', 25))  # whitespace before the colon counts the same
        assert _post(client, body.replace(b'"pass"', b'"pass" ', 25)).status_code == 413


def test_a_graph_at_the_op_limit_is_placed():
    graph = chain().to_dict()
    with _client(max_graph_ops=len(graph["graph"]["nodes"])) as client:
        assert _post(client, json.dumps({"graph": graph, "beta": 1.0}).encode()).status_code == 200


def test_a_graph_whose_ops_are_all_backward_gets_one_line_not_a_500():
    graph = chain().to_dict()
    for node in graph["graph"]["nodes"]:
        node["pass"] = "backward"
    with _client() as client:
        response = _post(client, json.dumps({"graph": graph, "beta": 1.0}).encode())
    assert response.status_code == 422 and "has no forward ops" in response.json()["detail"]
