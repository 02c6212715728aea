"""The service's API docs at ``/docs``, readable offline: one page served from the package with the OpenAPI schema
inside it, rendered by a short inline script: every route with its method, summary, parameters, body and responses,
then every schema with its fields. No asset comes from elsewhere (FastAPI's Swagger UI and ReDoc pages load theirs
from a CDN and are blank without one; :func:`placer.serve.http.create_app` switches them off), and the page's
Content-Security-Policy allows only its own script and style. The machine-readable schema stays at ``/openapi.json``.
"""

from __future__ import annotations

import base64
import hashlib
import json

from fastapi import FastAPI
from starlette.responses import HTMLResponse

STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; max-width: 60em; margin: 2em auto; padding: 0 1em; color: #222; }
h2 { border-bottom: 1px solid #ccc; margin-top: 2em; }
.route { border: 1px solid #ddd; border-radius: 4px; margin: 1em 0; padding: 0.5em 1em; }
.method { display: inline-block; min-width: 4.5em; font-weight: bold; text-transform: uppercase; }
.get { color: #0a6; } .post { color: #06c; } .delete { color: #c33; } .put, .patch { color: #a60; }
code, .path { font-family: ui-monospace, monospace; }
table { border-collapse: collapse; margin: 0.3em 0; }
td, th { border: 1px solid #ddd; padding: 2px 8px; text-align: left; vertical-align: top; }
.muted { color: #666; }
"""

SCRIPT = """
const api = JSON.parse(document.getElementById("schema").textContent);
const root = document.getElementById("docs");
function el(tag, text, cls) { const e = document.createElement(tag); if (text) e.textContent = text; if (cls) e.className = cls; return e; }
function typeOf(s) {
  if (!s) return "any";
  if (s.$ref) { const name = s.$ref.split("/").pop(); const a = el("a", name); a.href = "#schema-" + name; return a; }
  const span = el("span");
  const add = (part) => span.append(part);
  const union = s.anyOf || s.oneOf || s.allOf;
  if (union) union.forEach((u, i) => { if (i) add(" | "); add(typeOf(u)); });
  else if (s.type === "array") { add("array of "); add(typeOf(s.items)); }
  else if (s.enum) add("one of " + s.enum.map((v) => JSON.stringify(v)).join(", "));
  else add(String(s.type || (s.const !== undefined ? JSON.stringify(s.const) : "object")));
  const keys = ["minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "minLength", "maxLength", "minItems", "maxItems"];
  const limits = keys.concat(["pattern", "default"])
    .filter((k) => s[k] !== undefined).map((k) => k + " " + JSON.stringify(s[k]));
  if (limits.length) add(el("span", " (" + limits.join(", ") + ")", "muted"));
  return span;
}
function table(head, rows) {
  const t = el("table"); const h = t.insertRow(); head.forEach((x) => h.append(el("th", x)));
  rows.forEach((r) => { const tr = t.insertRow(); r.forEach((x) => { const td = tr.insertCell(); td.append(x); }); });
  return t;
}
root.append(el("h1", (api.info.title || "API") + " " + (api.info.version || "")));
if (api.info.description) root.append(el("p", api.info.description));
root.append(el("p", "The schema itself: /openapi.json", "muted"));
root.append(el("h2", "Routes"));
for (const [path, item] of Object.entries(api.paths || {})) {
  for (const [method, op] of Object.entries(item)) {
    const box = el("div", null, "route");
    const title = el("div"); title.append(el("span", method, "method " + method), el("span", path, "path")); box.append(title);
    if (op.summary) box.append(el("strong", op.summary));
    if (op.description) box.append(el("p", op.description));
    if (op.parameters && op.parameters.length)
      box.append(el("div", "Parameters"), table(["name", "in", "required", "type"],
        op.parameters.map((p) => [p.name, p.in, p.required ? "yes" : "no", typeOf(p.schema)])));
    const body = op.requestBody && op.requestBody.content;
    for (const [kind, c] of Object.entries(body || {})) {
      const d = el("div", "Body (" + kind + "): "); d.append(typeOf(c.schema)); box.append(d);
    }
    if (op.responses) box.append(el("div", "Responses"), table(["status", "meaning", "body"],
      Object.entries(op.responses).map(([code, r]) => {
        const c = r.content && Object.values(r.content)[0];
        return [code, r.description || "", c ? typeOf(c.schema) : ""];
      })));
    root.append(box);
  }
}
root.append(el("h2", "Schemas"));
for (const [name, s] of Object.entries((api.components || {}).schemas || {})) {
  const h = el("h3", name); h.id = "schema-" + name; root.append(h);
  if (s.description) root.append(el("p", s.description));
  const required = new Set(s.required || []);
  const props = Object.entries(s.properties || {});
  if (props.length) root.append(table(["field", "type", "required", "description"],
    props.map(([k, p]) => [el("code", k), typeOf(p), required.has(k) ? "yes" : "no", p.description || p.title || ""])));
  else root.append(typeOf(s));
}
"""


def _digest(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


POLICY = f"default-src 'none'; script-src '{_digest(SCRIPT)}'; style-src '{_digest(STYLE)}'; base-uri 'none'; form-action 'none'"


def docs_page(schema: dict) -> str:
    """The page for ``schema`` (an OpenAPI document): no URL in it points off the page."""
    data = json.dumps(schema).replace("<", "\\u003c")  # inert inside its <script> element whatever the schema holds
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>placer API</title>'
        f'<style>{STYLE}</style></head><body><div id="docs"></div>'
        f'<script id="schema" type="application/json">{data}</script><script>{SCRIPT}</script></body></html>'
    )


def add_docs(app: FastAPI, path: str = "/docs") -> None:
    """Serve :func:`docs_page` of ``app``'s schema at ``path`` (built once, on the first request)."""
    page: list[str] = []

    @app.get(path, include_in_schema=False)
    def docs() -> HTMLResponse:
        if not page:
            page.append(docs_page(app.openapi()))
        return HTMLResponse(page[0], headers={"Content-Security-Policy": POLICY, "Cache-Control": "no-cache"})
