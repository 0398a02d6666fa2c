"""World: one process, communicators, life cycle, and its errors."""

import re

import pytest

import tack
from fakempi import run_ranks


def test_one_process_world():
    world = tack.World()
    assert (world.rank, world.size, world.comm) == (0, 1, None)
    assert repr(world) == "tack.World(rank=0, size=1, one process)"
    assert world.gpu_aware is False
    world.free()
    world.free()                                    # freeing twice is harmless


def test_context_manager_frees_and_use_after_free_raises():
    with tack.World() as world:
        blocks = tack.Blocks(["cpu"], world)
    with pytest.raises(RuntimeError, match=re.escape(
            "Blocks.all_reduce() on a World that was freed")):
        blocks.all_reduce({0: 1.0})


def test_gpu_aware_needs_a_communicator():
    with pytest.raises(ValueError, match=re.escape(
            "World(gpu_aware=True) needs a communicator: a world of one process sends "
            "no messages")):
        tack.World(gpu_aware=True)


def test_gpu_aware_is_a_flag():
    # "0" read from an environment variable turned GPU-aware transport on
    with pytest.raises(TypeError, match=re.escape(
            "tack.World(): gpu_aware must be True or False, not '0'")):
        tack.World(gpu_aware="0")


def test_an_object_without_the_methods_is_refused():
    class Half:
        def Dup(self):
            return self

        def Get_rank(self):
            return 0

    with pytest.raises(TypeError, match=re.escape(
            "World() takes an mpi4py communicator or an object with Dup, Get_rank, "
            "Get_size, allgather, alltoall, Isend, Irecv; Half has no Get_size, "
            "allgather, alltoall, Isend, Irecv")):
        tack.World(Half())


def test_a_communicator_is_duplicated_and_freed():
    def on_rank(comm):
        world = tack.World(comm)
        assert world.comm is not comm and isinstance(world.comm, type(comm))
        assert (world.rank, world.size) == (comm.Get_rank(), 3)
        world.free()
        assert world.comm is None
        return True
    assert run_ranks(3, on_rank) == [True] * 3


def test_a_refused_duplicate_says_to_free_worlds():
    """MPICH's "Too many communicators" once a program made ~2048 worlds without
    freeing them (soak audit): the error gets a note saying what to do."""
    from fakempi import FakeComm

    class Exhausted(FakeComm):
        def Dup(self):
            raise RuntimeError("Other MPI error: Too many communicators (0/2048 free)")

    def on_rank(comm):
        exhausted = Exhausted.__new__(Exhausted)
        exhausted.__dict__.update(comm.__dict__)
        with pytest.raises(RuntimeError, match="Too many communicators") as caught:
            tack.World(exhausted)
        return "".join(getattr(caught.value, "__notes__", []))
    for note in run_ranks(2, on_rank):
        assert "must free each one, or MPI runs out of communicators" in note


def test_blocks_needs_a_world():
    with pytest.raises(TypeError, match=re.escape("Blocks() takes a tack.World, not str")):
        tack.Blocks(["cpu"], "world")
    with pytest.raises(TypeError, match=re.escape(
            "Blocks() takes a sequence of devices, one per block, not str")):
        tack.Blocks("cpu")


def test_free_after_a_skipped_call_raises_on_every_rank():
    """A rank with no blocks skips ``all_reduce`` and frees: the free agrees, so
    both ranks raise instead of the other waiting forever (mpiport audit)."""
    def on_rank(comm):
        world = tack.World(comm)
        blocks = tack.Blocks(["cpu"] if comm.Get_rank() == 0 else [], world)
        if comm.Get_rank() == 0:
            with pytest.raises(ValueError, match=re.escape(
                    "rank 0 is in Blocks.all_reduce() (call 2); rank 1 is in World.free() "
                    "(call 2)")):
                blocks.all_reduce({0: 1.0})
            world.free()            # out of step: released without agreeing
        else:
            with pytest.raises(ValueError, match="collective calls differ between ranks"):
                world.free()
        return world.comm is None
    assert run_ranks(2, on_rank) == [True, True]


def test_an_exception_leaving_a_with_block_does_not_wait_for_the_others():
    """The other ranks may be anywhere (outside Tack): the world is released
    without agreeing, and the exception goes on (review)."""
    def on_rank(comm):
        if comm.Get_rank() == 0:
            with pytest.raises(KeyError):
                with tack.World(comm):
                    raise KeyError("a rank-local mistake")
        else:
            tack.World(comm)        # then on with something else: never frees
        return True
    assert run_ranks(2, on_rank) == [True, True]
