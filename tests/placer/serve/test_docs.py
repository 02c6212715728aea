"""The API docs at /docs read offline: one page from the package, no asset from a CDN (issue 53, item 4)."""

from __future__ import annotations

import json
import re

from starlette.testclient import TestClient

from placer.baselines.registry import make_heuristic
from placer.serve.docs import POLICY, SCRIPT, STYLE, _digest
from placer.serve.http import create_app
from tests.placer.toys import toy_cluster


def test_docs_are_one_self_contained_page_of_the_schema():
    with TestClient(create_app(toy_cluster(1, 2), make_heuristic("lean"))) as client:
        page = client.get("/docs")
        schema = client.get("/openapi.json").json()
        assert client.get("/redoc").status_code == 404  # FastAPI's other CDN page is off too
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    html = page.text
    assert not re.search(r"<[^>]*\b(src|href)\s*=", html), "the page loads nothing from anywhere"
    assert "cdn" not in html.lower() and "https://" not in html and "http://" not in html
    embedded = re.search(r'<script id="schema" type="application/json">(.*?)</script>', html, re.S)
    assert embedded is not None and json.loads(embedded.group(1)) == schema  # every route, body and schema, as /openapi.json
    assert "/v1/placements" in schema["paths"] and "PlacementRequest" in schema["components"]["schemas"]
    # the browser runs only the page's own script and style
    assert page.headers["content-security-policy"] == POLICY and "default-src 'none'" in POLICY
    assert f"<script>{SCRIPT}</script>" in html and f"<style>{STYLE}</style>" in html
    assert _digest(SCRIPT) in POLICY and _digest(STYLE) in POLICY


def test_a_schema_cannot_close_the_script_element_it_sits_in():
    from placer.serve.docs import docs_page

    html = docs_page({"info": {"title": "</script><script>alert(1)</script>"}, "paths": {}})
    assert html.count("</script>") == 2  # the schema's and the renderer's, nothing from the text
