import time

import requests

from erp.testing.fake_http import FakeResponse, FakeServer


def test_fake_server_routes_records_and_streams():
    with FakeServer() as server:
        server.route(
            "POST",
            r"/v1/things/(?P<name>\w+)",
            lambda r: FakeResponse.json({"name": r.params["name"], "echo": r.json()}),
        )
        server.route("GET", r"/stream", FakeResponse.sse([{"i": 0}, {"i": 1}], chunk_delay=0.2))

        reply = requests.post(f"{server.url}/v1/things/abc", json={"x": 1}, timeout=5)
        assert reply.json() == {"name": "abc", "echo": {"x": 1}}
        assert server.requests[0].json() == {"x": 1}

        started = time.monotonic()
        with requests.get(f"{server.url}/stream", stream=True, timeout=5) as resp:
            arrivals = [time.monotonic() - started for line in resp.iter_lines() if line]
        assert len(arrivals) == 2 and arrivals[1] - arrivals[0] >= 0.15

        missing = requests.get(f"{server.url}/nope", timeout=5)
        assert missing.status_code == 404
