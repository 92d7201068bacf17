"""The order tests/conftest.py gives the suite: under `-n 2 --dist loadgroup` the end-to-end reductions
(`slow`) are handed out first and the short tests fill in at the end; the tests that share a reduction
(a module- or session-scoped fixture) carry one xdist group and stay together."""
import pytest


def group_of(item) -> str | None:
    mark = item.get_closest_marker("xdist_group")
    return mark.args[0] if mark else None


def test_no_short_test_comes_before_an_end_to_end_reduction(request):
    items = request.session.items
    slow_groups = {group_of(item) for item in items if item.get_closest_marker("slow")} - {None}
    slow = [item.get_closest_marker("slow") is not None or group_of(item) in slow_groups for item in items]
    assert slow == sorted(slow, reverse=True), [item.nodeid for item in items][:slow.index(False) + 1]


def test_the_tests_of_a_group_are_next_to_each_other(request):
    seen, last = set(), None
    for item in request.session.items:
        group = group_of(item)
        if group is not None and group != last:
            assert group not in seen, f"{item.nodeid}: the group {group} is split"
            seen.add(group)
        last = group


@pytest.fixture(scope="module")
def shared():
    return object()


def test_a_module_scoped_fixture_makes_a_group(request, shared):
    assert (group_of(request.node) or "").endswith("test_suite_order.py::shared"), group_of(request.node)


def test_its_users_share_that_group_and_the_others_have_none(request, shared):
    users = [item for item in request.session.items if item.module is request.module and "shared" in item.fixturenames]
    others = [item for item in request.session.items if item.module is request.module and item not in users]
    assert len(users) == 2 and len({group_of(item) for item in users}) == 1
    assert others and all(group_of(item) is None for item in others)
