"""Where CPU arrays live: 64-byte alignment, and large arrays at staggered page
offsets (``HostBuffer``: arrays walked in lockstep must not alias in the low 12
address bits)."""

from __future__ import annotations

import numpy as np
import pytest

import tack


def _address(array) -> int:
    return np.from_dlpack(array).ctypes.data


@pytest.mark.parametrize("n", [0, 1, 7, 1000, 16383])
def test_small_arrays_are_64_byte_aligned(n):
    assert _address(tack.zeros(n, tack.f32)) % 64 == 0 or n == 0


def test_large_arrays_start_at_different_page_offsets():
    # 64 MiB each (never touched): above glibc's largest mmap threshold, so
    # without staggering every one would start at the same page offset
    arrays = [tack.empty(1 << 24, tack.f32) for _ in range(4)]
    offsets = [_address(a) % 4096 for a in arrays]
    assert all(o % 64 == 0 for o in offsets)
    assert len(set(offsets)) == len(offsets)


def test_large_arrays_made_every_way_keep_their_values():
    rng = np.random.default_rng()
    for n in (1 << 14, (1 << 14) + 3, 1 << 18):
        values = rng.standard_normal(n).astype(np.float32)
        made = [tack.array(values), tack.empty(n, tack.f32), tack.zeros(n, tack.f32),
                tack.full(n, 2.5, tack.f32)]
        made[1].fill(-1.0)
        np.testing.assert_array_equal(made[0].numpy(), values)
        np.testing.assert_array_equal(made[1].numpy(), np.full(n, -1.0, np.float32))
        np.testing.assert_array_equal(made[2].numpy(), np.zeros(n, np.float32))
        np.testing.assert_array_equal(made[3].numpy(), np.full(n, 2.5, np.float32))
        for a in made:
            assert _address(a) % 64 == 0
