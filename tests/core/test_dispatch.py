"""One dispatch style: a table from name to function, built once from the list of names."""

import pytest

from backend.core.controller.events import EVENTS, ControllerEvent, ShutdownEventThread
from backend.core.dispatch import dispatch_table


def test_a_table_has_exactly_the_names_in_their_order():
    assert list(dispatch_table(["b", "a"], {"a": 1, "b": 2}, "t")) == ["b", "a"]


@pytest.mark.parametrize("functions,message", [
    ({"a": 1}, "t: no function for b"),
    ({"a": 1, "b": 2, "c": 3}, "t: no such name for c"),
])
def test_a_name_without_a_function_or_a_function_without_a_name_is_refused(functions, message):
    with pytest.raises(ValueError, match=message):
        dispatch_table(["a", "b"], functions, "t")


def test_the_events_are_every_controller_event_but_the_thread_s_own():
    assert set(EVENTS.values()) == set(ControllerEvent.__subclasses__()) - {ShutdownEventThread}
    assert all(name == cls.__name__ for name, cls in EVENTS.items())
