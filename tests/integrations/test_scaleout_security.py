"""The local Dask cluster that scale-out starts is usable by this process only.

Loopback is open to every user of the machine and a Dask scheduler runs the code its clients
send, so the cluster must refuse any client without its credentials: a plain TCP client, a
TLS client without a certificate, and one with another cluster's certificate. Its HTTP
servers must serve no pages. Every connection here is to 127.0.0.1.
"""

from __future__ import annotations

import socket
import ssl
import urllib.error
import urllib.request

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")
distributed = pytest.importorskip("distributed")
pytest.importorskip("cryptography")

from possibly.integrations.scaleout import _client, changepoints_many  # noqa: E402


def refused(address: str, **kwargs) -> bool:
    try:
        client = distributed.Client(address, timeout=5, **kwargs)
    except Exception:  # noqa: BLE001 - any failure to connect is a refusal
        return True
    client.close()
    return False


def plain_tls_handshake(host: str, port: int) -> bool:
    """True if a TLS handshake without a client certificate completes and the server talks."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        with socket.create_connection((host, port), timeout=5) as raw, \
                ctx.wrap_socket(raw) as tls:
            tls.settimeout(5)
            tls.sendall(b"\x00" * 8)
            return bool(tls.recv(1))  # TLS 1.3: a missing certificate fails at the first read
    except (OSError, ssl.SSLError):
        return False


def test_local_cluster_refuses_unauthenticated_clients():
    with _client(None, 1, 10.0) as client:
        scheduler = client.scheduler.address
        workers = list(client.scheduler_info()["workers"])
        assert client.submit(sum, [1, 2]).result() == 3  # the owner's client works
        for address in (scheduler, *workers):
            scheme, where = address.split("://")
            host, port = where.rsplit(":", 1)
            assert host == "127.0.0.1"
            assert refused(f"tcp://{where}"), address  # plain TCP
            assert scheme == "tls"
            assert not plain_tls_handshake(host, int(port))  # TLS without a certificate
        other = distributed.Security.temporary()
        assert refused(scheduler, security=other)  # another cluster's certificate
        http = client.cluster.scheduler.http_server.port
        for page in ("info/main/workers.html", "json/identity.json", "metrics", "status"):
            with pytest.raises(urllib.error.HTTPError) as exc:
                urllib.request.urlopen(f"http://127.0.0.1:{http}/{page}", timeout=5)
            assert exc.value.code == 404, page


def test_secured_cluster_gives_the_single_process_results():
    rng = np.random.default_rng(1)
    y = np.r_[rng.normal(0, 1, 80), rng.normal(6, 1, 80)]
    df = pd.DataFrame({"id": np.repeat(["a", "b"], 160), "v": np.r_[y, -y]})
    res = changepoints_many(df, "id", "v", n_workers=1, sigma=1.0)
    sync = changepoints_many(df, "id", "v", scheduler="synchronous", sigma=1.0)
    pd.testing.assert_frame_equal(res.events, sync.events)
    assert res.events.query("kind == 'changepoint'")["index"].tolist() == [80, 80]
