"""The smoke test of a running service, over HTTP only: what `bin/serve` and the compose
stack (docker/compose.yml) must both pass.

Signed in as an organiser, it uploads a tiny collection (indexed by a worker), topics and
query variants (imported by a worker), asks for a BM25 run over the variants (retrieved by
a worker through Anserini's JVM), builds a depth-3 pool of users' variants (a worker), and
creates a judging task with the organiser as its only assessor. It then judges the first
document on the judging page, as a person does, and reads the judgment back through the
API. Every step is bounded in time and fails saying which step and what the service said.

    .venv/bin/python -m tests.smoke http://127.0.0.1:8000/ USER PASSWORD
"""
from __future__ import annotations

import argparse
import http.cookiejar
import json
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass, field

DOCS = [
    ("d1", "Apple pie: a recipe with apples, butter, sugar and cinnamon."),
    ("d2", "How to grow apple trees in a small garden."),
    ("d3", "Pear cake baked with ripe pears and almonds."),
    ("d4", "Poached pears in red wine, a classic dessert."),
    ("d5", "The history of the bicycle in the nineteenth century."),
    ("d6", "Apple and pear crumble for a winter evening."),
]
TOPICS = ("id\tstatement\n"
          "S1\tYou want to bake something sweet with apples.\n"
          "S2\tYou have ripe pears and want a dessert.\n")
VARIANTS = ("topic\tquery\tworker\n"
            "S1\tapple pie recipe\tw1\n"
            "S1\tapple dessert\tw2\n"
            "S2\tpear cake\tw1\n"
            "S2\tpear dessert wine\tw2\n")


class SmokeError(AssertionError):
    pass


@dataclass
class Response:
    status: int
    url: str
    headers: dict
    text: str

    def json(self):
        return json.loads(self.text)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None  # a 3xx is answered as it is: the caller looks at it


def _multipart(fields: dict, files: dict) -> tuple[bytes, str]:
    boundary = "smoke" + uuid.uuid4().hex
    parts = []
    for name, value in fields.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'
                     f"{value}\r\n".encode())
    for name, (filename, content, ctype) in files.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; '
                     f'filename="{filename}"\r\nContent-Type: {ctype}\r\n\r\n'.encode()
                     + content + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


@dataclass
class Smoke:
    """One pass over a service at ``base`` (e.g. ``http://127.0.0.1:8000/``)."""

    base: str
    username: str
    password: str
    timeout: float = 300.0  # for each step that waits on a worker
    name: str = field(default_factory=lambda: "smoke-" + uuid.uuid4().hex[:8])
    log: list[str] = field(default_factory=list)

    def __post_init__(self):
        self.base = self.base.rstrip("/") + "/"
        self.cookies = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(self.cookies), _NoRedirect())

    # --- HTTP (the standard library's: the smoke test needs nothing installed) --------
    def url(self, path: str) -> str:
        return urllib.parse.urljoin(self.base, path.lstrip("/"))

    def cookie(self, name: str) -> str:
        return next((c.value for c in self.cookies if c.name == name), "")

    def request(self, method: str, path: str, *, params=None, data=None, json_body=None,
                files=None) -> Response:
        url = self.url(path)
        if params:
            url += "?" + urllib.parse.urlencode(params)
        headers = {"Accept": "application/json, text/html"}
        body = None
        if method != "GET":
            headers.update({"X-CSRFToken": self.cookie("csrftoken"), "Referer": self.base})
            if files:
                body, headers["Content-Type"] = _multipart(data or {}, files)
            elif json_body is not None:
                body, headers["Content-Type"] = json.dumps(json_body).encode(), "application/json"
            else:
                body = urllib.parse.urlencode(data or {}).encode()
                headers["Content-Type"] = "application/x-www-form-urlencoded"
        req = urllib.request.Request(url, data=body, headers=headers, method=method)
        try:
            with self.opener.open(req, timeout=120) as r:
                return Response(r.status, url, dict(r.headers), r.read().decode("utf-8", "replace"))
        except urllib.error.HTTPError as r:
            return Response(r.code, url, dict(r.headers), r.read().decode("utf-8", "replace"))

    def get(self, path: str, params=None) -> Response:
        return self.request("GET", path, params=params)

    def post(self, path: str, **kw) -> Response:
        return self.request("POST", path, **kw)

    def expect(self, response: Response, status: int, step: str) -> Response:
        if response.status != status:
            raise SmokeError(f"{step}: HTTP {response.status} from {response.url} "
                             f"(expected {status}): {response.text[:2000]}")
        return response

    def wait(self, path: str, step: str, done=("done",), failed=("failed",)) -> dict:
        """Poll an API object until its ``status`` is one of ``done``."""
        deadline = time.monotonic() + self.timeout
        body: dict = {}
        while time.monotonic() < deadline:
            body = self.expect(self.get(path), 200, step).json()
            if body.get("status") in done:
                self.log.append(f"{step}: {body.get('status')}")
                return body
            if body.get("status") in failed:
                raise SmokeError(f"{step} failed: {json.dumps(body)[:2000]}")
            time.sleep(0.5)
        raise SmokeError(f"{step}: not done after {self.timeout:g} s: {json.dumps(body)[:2000]}")

    # --- the steps --------------------------------------------------------------------
    def sign_in(self) -> None:
        page = self.expect(self.get("accounts/login/"), 200, "sign-in page").text
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
        if token is None:
            raise SmokeError("sign-in page: no CSRF token in the form")
        r = self.post("accounts/login/", data={"username": self.username,
                                               "password": self.password,
                                               "csrfmiddlewaretoken": token.group(1)})
        if r.status != 302:
            raise SmokeError(f"sign-in as {self.username!r}: HTTP {r.status}, not a "
                             f"redirect: {r.text[:1000]}")
        self.log.append(f"signed in as {self.username}")

    def upload(self, kind: str, filename: str, text: str, **fields) -> dict:
        r = self.expect(self.post(f"api/uploads/{kind}/", data=fields,
                                  files={"file": (filename, text.encode(), "text/plain")}),
                        202, f"upload {kind}")
        return self.wait(r.json()["url"], f"upload {kind} ({filename})")

    def run(self) -> dict:
        """Everything, in order; returns what was made."""
        name = self.name
        self.sign_in()
        docs = "".join(json.dumps({"id": i, "contents": t}) + "\n" for i, t in DOCS)
        self.upload("collections", "docs.jsonl", docs, name=name, format="jsonl")
        self.upload("topics", "topics.tsv", TOPICS, topic_set=name, format="tsv")
        self.upload("variants", "variants.tsv", VARIANTS, topic_set=name, format="tsv")

        r = self.expect(self.post("api/runs/", json_body={
            "topic_set": name, "collection": name, "model": "bm25", "source": "variants",
            "depth": 10}), 201, "create a run")
        run = self.wait(f"api/runs/{r.json()['id']}/", "retrieval run")
        rankings = self.expect(self.get(f"api/runs/{run['id']}/rankings/",
                                        params={"topic": "S1", "depth": 10}),
                               200, "the run's rankings").json()
        ranked = [e["docid"] for row in rankings["results"] for e in row["entries"]]
        if "d1" not in ranked:
            raise SmokeError(f"retrieval run: 'apple pie recipe' did not retrieve d1: {rankings}")

        r = self.expect(self.post("api/pools/", json_body={
            "topic_set": name, "sources": "users", "depth": 3, "name": name}),
            201, "create a pool")
        pool = self.wait(f"api/pools/{r.json()['id']}/", "pool build")
        documents = self.expect(self.get(f"api/pools/{name}/documents/", params={"topic": "S1"}),
                                200, "the pool's documents").json()
        if not documents["results"]:
            raise SmokeError(f"pool build: no documents pooled for S1: {documents}")

        self.expect(self.post("api/judging-tasks/", json_body={
            "name": name, "pool": name, "mode": "topic", "scale": "binary",
            "assessors": [self.username]}), 201, "create a judging task")
        page = self.expect(self.get(f"judging/tasks/{name}/"), 200, "the judging page").text
        ref = re.search(r'name="ref" value="([^"]+)"', page)
        if ref is None:
            raise SmokeError(f"the judging page: no document to judge:\n{page[:2000]}")
        r = self.post(f"judging/tasks/{name}/", data={
            "ref": ref.group(1), "grade_0": "1", "action": "judge",
            "csrfmiddlewaretoken": self.cookie("csrftoken")})
        if r.status != 302:
            raise SmokeError(f"judging: HTTP {r.status}, not a redirect: {r.text[:2000]}")
        task = self.expect(self.get(f"api/judging-tasks/{name}/"), 200, "the judging task").json()
        if task["progress"]["total"]["done"] != 1:
            raise SmokeError(f"judging: the task does not count the judgment: {task['progress']}")
        self.log.append("judged one document")
        return {"run": run, "pool": pool, "task": task}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", help="the service's address, e.g. http://127.0.0.1:8000/")
    parser.add_argument("username", help="an organiser (staff) account")
    parser.add_argument("password")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds each background step may take (default 300)")
    args = parser.parse_args(argv)
    smoke = Smoke(args.base, args.username, args.password, timeout=args.timeout)
    try:
        smoke.run()
    except SmokeError as exc:
        print("\n".join(smoke.log), file=sys.stderr)
        print(f"smoke test FAILED: {exc}", file=sys.stderr)
        return 1
    print("\n".join(smoke.log))
    print("smoke test passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
