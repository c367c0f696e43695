"""The API proxy's config: where it listens, the key it asks for, and the routes its keyless probe asks."""

import pytest

from ansible_collections.dgxspark.ds41f.plugins.module_utils import proxy


def test_it_listens_on_loopback_and_each_named_address_once():
    assert proxy.listeners(["192.168.1.11", "192.168.1.11", "fd00::11"], 8000) == [
        "127.0.0.1:8000", "192.168.1.11:8000", "[fd00::11]:8000"]
    assert proxy.listeners(["0.0.0.0", "192.168.1.11"], 8000) == ["0.0.0.0:8000"]


@pytest.mark.parametrize("value", ["head", "192.168.1.300", "192.168.1.11:8000", "192.168.1.0/24", "1.2.3.4 ;"])
def test_a_listen_value_that_is_not_an_address_is_refused_naming_the_field(value):
    with pytest.raises(proxy.ProxyError, match=r"^serve_listen\[0\]: .* Fix: "):
        proxy.listeners([value], 8000)


@pytest.mark.parametrize("key", ["", "a b", 'k"ey', "key;\n}", "ключ", "k\\ey"])
def test_a_key_nginx_would_have_to_quote_is_refused_without_its_value(key):
    with pytest.raises(proxy.ProxyError) as err:
        proxy.key_map(key)
    assert str(err.value).startswith("serve_api_key: ") and (not key or key not in str(err.value))


def test_every_path_but_health_asks_for_the_key():
    text = proxy.config(["192.168.1.11"], 8000, 18000, "/etc/ds41f/proxy/key.conf", ["192.168.1.50"])
    assert "listen 127.0.0.1:8000;" in text and "listen 192.168.1.11:8000;" in text
    assert "server 127.0.0.1:18000;" in text
    assert "include /etc/ds41f/proxy/key.conf;" in text
    locations = [line.split()[1:-1] for line in text.splitlines() if line.strip().startswith("location")]
    assert locations == [["=", "/health"], ["=", "/metrics"], ["/"]]
    catch_all = text.split("location / {")[1]
    assert "if ($ds41f_key_ok = 0)" in catch_all and "return 401" in catch_all
    assert "192.168.1.50 1;" in text  # a scrape address reads /metrics without the key


def test_the_key_map_matches_the_bearer_header_exactly():
    text = proxy.key_map("abc-DEF_1.2+3=")
    assert '"~^Bearer abc-DEF_1\\.2\\+3=$" 1;' in text and "default 0;" in text


def test_the_probe_asks_every_route_of_the_table_and_what_engines_serve_outside_it():
    table = {"paths": {"/v1/chat/completions": {"post": {}}, "/v1/models/{model}": {"get": {}},
                       "/invocations": {"post": {}}, "/health": {"get": {}}}}
    paths = proxy.routes(table)
    assert {"/v1/chat/completions", "/v1/models/x", "/invocations", "/health", "/metrics"} <= set(paths)
    assert proxy.keyless_verdict("/health", 200) is None
    assert proxy.keyless_verdict("/invocations", 401) is None
    assert proxy.keyless_verdict("/invocations", 405) == "HTTP 405 without the key"
    assert proxy.keyless_verdict("/tokenize", 0) == "HTTP 0 without the key"


LISTEN_CASES = [[], ["192.168.1.11"], ["192.168.1.11", "10.12.0.1"], ["127.0.0.1", "192.168.1.11"], ["0.0.0.0"],
                ["0.0.0.0", "fd00::11"], ["fd00::11"]]
TLS_FILES = ("/etc/ds41f/proxy/tls.crt", "/etc/ds41f/proxy/tls.key")


def listen_lines(text):
    return [line.strip()[len("listen "):-1] for line in text.splitlines() if line.strip().startswith("listen ")]


@pytest.mark.parametrize("listen", LISTEN_CASES, ids=[",".join(c) or "loopback only" for c in LISTEN_CASES])
def test_with_tls_every_listener_but_loopback_is_tls_and_without_none_is(listen):
    plain = proxy.config(listen, 8000, 18000, "/etc/ds41f/proxy/key.conf")
    tls = proxy.config(listen, 8000, 18000, "/etc/ds41f/proxy/key.conf", tls=TLS_FILES)
    assert not any(word in plain for word in ("ssl", "tls.crt", "tls.key"))
    assert listen_lines(plain) == proxy.listeners(listen, 8000)
    lines = listen_lines(tls)
    # Loopback stays plain HTTP, first, even where 0.0.0.0 covers it (nginx tells them apart by the local address).
    assert lines[0] == "127.0.0.1:8000"
    assert lines[1:] == ["%s ssl" % x for x in proxy.listeners(listen, 8000) if x != "127.0.0.1:8000"]
    assert "ssl_certificate %s;" % TLS_FILES[0] in tls and "ssl_certificate_key %s;" % TLS_FILES[1] in tls
    assert "ssl_protocols TLSv1.2 TLSv1.3;" in tls
    # The rest of the config, the key's locations above all, is the same with or without TLS.
    assert [x for x in tls.splitlines() if "listen" not in x and "ssl" not in x] == [
        x for x in plain.splitlines() if "listen" not in x]
