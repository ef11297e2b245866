"""Running a program: one return shape, checked where every program ends."""

import pytest

from backend.core.controller.plan import Plan
from backend.core.controller.program import Done, emit, run_program

from .support import cluster


def test_a_program_returns_its_context_and_value_as_done():
    def program(ctx):
        yield from emit(requests=("a request",))
        return Done(ctx, 42)

    ctx = cluster()
    seen = []
    finished = run_program(program(ctx), lambda plan: seen.append(plan) or ())
    assert finished.value == Done(ctx, 42) and finished.value.ctx is ctx and finished.value.value == 42
    assert seen == [Plan(requests=("a request",))]


@pytest.mark.parametrize("returned", ["ctx", "tuple"])
def test_a_program_that_returns_another_shape_is_refused(returned):
    def program(ctx):
        yield from emit(requests=("a request",))
        return ctx if returned == "ctx" else (ctx, 42)

    with pytest.raises(TypeError, match="Done"):
        run_program(program(cluster()), lambda plan: ())
