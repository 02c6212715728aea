"""Hostile and malformed requests through the real server: never a 5xx."""

import json
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.placer.serve.test_service import _release_all, server  # noqa: F401  (the module-scoped server fixture)
from tests.placer.toys import chain

EXAMPLES = int(__import__("os").environ.get("PLACER_FUZZ_EXAMPLES", 2600))  # x 4 requests each: > 10,000 requests per run

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**400), max_value=10**400),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(alphabet=st.characters(codec=None, min_codepoint=0, max_codepoint=0x10FFFF), max_size=8),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)),
    max_leaves=6,
)
surrogates = st.sampled_from(["\ud800", "a\udfffb", "\udc00" * 3])


@st.composite
def graphs(draw):
    graph = chain().to_dict()
    mutation = draw(st.integers(0, 9))
    if mutation == 1:
        node = draw(st.sampled_from(graph["graph"]["nodes"]))
        node[draw(st.sampled_from(["compute_s", "param_bytes", "activation_bytes", "pass", "name", "flops", "id"]))] = draw(json_values)
    elif mutation == 2:
        graph[draw(st.sampled_from(["name", "iterations", "batch_size", "profiled_on", "precision", "schema_version"]))] = draw(json_values)
    elif mutation == 3:
        graph["name"] = draw(surrogates)
    elif mutation == 4:
        target = draw(st.sampled_from([graph, graph["graph"], graph["graph"]["nodes"][0], graph["graph"]["edges"][0]]))
        target[draw(st.text(min_size=1, max_size=6))] = draw(json_values)
    elif mutation == 5:
        for node in graph["graph"]["nodes"]:
            node["compute_s"] = draw(st.sampled_from([0.0, 1e306, 1e308, 10**309]))
    elif mutation == 6:
        graph["graph"]["edges"][0]["tensor_bytes"] = draw(json_values)
    elif mutation == 7:
        graph["graph"] = draw(json_values)
    elif mutation == 8:  # shapes: a field missing anywhere
        target = draw(st.sampled_from([graph, graph["graph"], graph["graph"]["nodes"][0], graph["graph"]["edges"][0]]))
        del target[draw(st.sampled_from(sorted(target)))]
    elif mutation == 9:  # shapes: profiled_on's parts of any JSON type
        parts = {"device": st.one_of(st.just("V100-16GB"), json_values), "precision": st.one_of(st.just("fp32"), json_values)}
        graph["profiled_on"] = {key: draw(value) for key, value in parts.items() if draw(st.integers(0, 4))}
    return graph


@st.composite
def bodies(draw) -> bytes:
    body = {}
    if draw(st.booleans()):
        body["graph"] = draw(graphs())
    if draw(st.integers(0, 3)) == 0:
        body["graph_key"] = draw(st.one_of(st.text(max_size=80), json_values))
    body["beta"] = draw(st.one_of(st.floats(0.05, 1.0), json_values, st.just("0.5")))
    if draw(st.booleans()):
        body["iterations"] = draw(st.one_of(st.integers(-5, 10**13), json_values))
    if draw(st.integers(0, 4)) == 0:
        body[draw(st.text(min_size=1, max_size=6))] = draw(json_values)
    text = json.dumps(body, allow_nan=True)
    trick = draw(st.integers(0, 5))
    if trick == 1:
        text = re.sub(r"\b0\.\d+\b", "1e999", text, count=1)
    elif trick == 2:
        text = text.replace("1.0", "NaN", 1)
    elif trick == 3:
        text = text[: draw(st.integers(0, len(text)))]  # truncated JSON
    return text.encode("utf-8", "surrogatepass")


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(body=bodies(), chunked=st.booleans())
def test_no_request_gets_a_5xx(server, body, chunked):  # noqa: F811
    content = iter([body[: len(body) // 2], body[len(body) // 2 :]]) if chunked else body
    response = server.post("/v1/placements", content=content, headers={"content-type": "application/json"})
    assert response.status_code < 500, (response.status_code, response.text[:300], body[:300])
    if response.status_code == 200 and response.json().get("job_id"):
        assert server.delete(f"/v1/jobs/{response.json()['job_id']}").status_code == 200
    else:
        assert server.delete("/v1/jobs/nope").status_code == 404
    cluster = server.get("/v1/cluster")
    assert cluster.status_code == 200 and cluster.json()["devices_free"] == 8
    assert server.get("/v1/health").status_code == 200


def test_oversized_chunked_body_gets_413(server):  # noqa: F811
    big = b'{"beta": 0.5, "graph": "' + b"x" * 300_000 + b'"}'
    response = server.post("/v1/placements", content=iter([big[:150_000], big[150_000:]]), headers={"content-type": "application/json"})
    assert response.status_code == 413 and "over" in response.json()["detail"]
    _release_all(server)
