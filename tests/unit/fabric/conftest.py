"""Fixtures of the fabric tests: clusters built by the one topology model."""

import pytest

from ansible_collections.dgxspark.ds41f.plugins.module_utils import topology


def _site(shape, count, **extra):
    nodes = [{"name": "dgx%d" % i, "address": "192.168.1.%d" % (10 + i)} for i in range(1, count + 1)]
    return dict({"plugin": "dgxspark.ds41f.spark_topology", "shape": shape, "nodes": nodes}, **extra)


@pytest.fixture
def site():
    """site(shape, count, **extra) -> a site dict with nodes dgx1..dgxN."""
    return _site


@pytest.fixture
def triangle():
    return topology.build(_site("tp3-triangle", 3))


@pytest.fixture
def ring():
    return topology.build(_site("tp4-ring", 4))


@pytest.fixture
def switched():
    return topology.build(_site("tp8-switched", 8))
