"""The graph document's one schema: any JSON either loads or is refused in one line, by both readers."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placer.common.errors import GraphValidationError
from placer.graphs.document import GraphDocument
from placer.graphs.job_graph import job_graph_from_dict, job_graph_from_json
from tests.placer.toys import chain

json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**30), 10**30), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=6)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)),
    max_leaves=5,
)


@st.composite
def documents(draw) -> dict:
    """The toy chain's document with one part replaced, dropped, or a field added, at any depth."""
    doc = chain().to_dict()
    parents = [doc, doc["graph"], *doc["graph"]["nodes"], *doc["graph"]["edges"]]
    parent = draw(st.sampled_from(parents))
    action = draw(st.sampled_from(["replace", "drop", "add"]))
    if action == "replace":
        parent[draw(st.sampled_from(sorted(parent)))] = draw(json_values)
    elif action == "drop":
        del parent[draw(st.sampled_from(sorted(parent)))]
    else:
        parent[draw(st.text(min_size=1, max_size=8))] = draw(json_values)
    return doc


@settings(max_examples=400, deadline=None)
@given(documents())
def test_any_document_loads_or_is_refused_in_one_line_the_same_way_by_both_readers(doc):
    outcomes = []
    for read in (lambda: job_graph_from_dict(doc, source="g"), lambda: job_graph_from_json(json.dumps(doc), source="g")):
        try:
            outcomes.append(("ok", read().key))
        except GraphValidationError as exc:
            message = str(exc)
            assert message.startswith("g: ") and "\n" not in message and len(message) < 400
            outcomes.append(("refused", message))
    assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("version", [True, 1.5, "2", 3, 0, None])
def test_schema_version_is_an_integer_it_can_read(version):
    doc = chain().to_dict() | {"schema_version": version}
    with pytest.raises(GraphValidationError, match="unsupported schema_version"):
        job_graph_from_dict(doc)


def test_an_integer_is_json_schemas_an_integral_float_reads_as_the_int():
    # the published schema says "integer", which JSON Schema takes 2.0 for: so does the reader (placer.common.integers)
    doc = chain().to_dict() | {"schema_version": 2.0, "iterations": 50.0, "batch_size": 8.0}
    for read in (lambda: job_graph_from_dict(doc), lambda: job_graph_from_json(json.dumps(doc), source="g")):
        assert read().key == job_graph_from_dict(chain().to_dict() | {"iterations": 50, "batch_size": 8}).key
    with pytest.raises(GraphValidationError, match="field 'iterations' must be an integer, got 50.5"):
        job_graph_from_dict(doc | {"iterations": 50.5})
    with pytest.raises(GraphValidationError, match="field 'batch_size' must be a finite number, got inf"):
        job_graph_from_json(json.dumps(doc | {"batch_size": float("inf")}), source="g")


def test_the_schema_is_published_as_json_schema():
    schema = GraphDocument.model_json_schema(by_alias=True)
    node = schema["$defs"]["NodeDocument"]
    assert schema["additionalProperties"] is False and node["additionalProperties"] is False
    assert set(node["required"]) == {"id", "name", "pass", "compute_s", "param_bytes", "activation_bytes"}
    assert schema["properties"]["schema_version"] == {"maximum": 2, "minimum": 1, "title": "Schema Version", "type": "integer"}
