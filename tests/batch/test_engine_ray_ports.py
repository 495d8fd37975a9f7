"""The ports a test's Ray cluster gives its nodes (`tests/support/raycluster.py`): each used
once. A port found free by binding port 0 and let go at once may be found again by the next
probe; two of a node's components then get the same port and the node stops at its start
("trying to use a port number … that is used by other components"), failing whichever Ray
test drew it, one cluster in thirty or so.
"""

from __future__ import annotations

from tests.support.raycluster import free_ports


def test_the_ports_of_a_cluster_are_never_given_twice() -> None:
    taken: set[int] = set()
    drawn: list[int] = []
    for _ in range(300):  # a node's 18 ports, drawn as for 300 nodes of one cluster
        drawn += free_ports(18, taken)
    assert len(drawn) == len(set(drawn)) == len(taken)


def test_a_port_taken_already_is_never_given() -> None:
    taken = set(free_ports(50, set()))
    before = set(taken)
    for _ in range(100):
        assert not before & set(free_ports(18, taken))
