"""A kernel and device classes made to be dropped, for the GPU backends' tests
that a dropped variant's module is unloaded (tests/runtime)."""

import tack


@tack.kernel
def scaled(obj, x):
    for i in range(len(x)):
        x[i] = x[i] * obj.scale


def scaler(k: float):
    """A new device class: its constant is compiled into its own variant."""
    @tack.device_class
    class Scaler:
        scale = k
    return Scaler


def launch_and_drop(x, scales=(2.0, 3.0)) -> None:
    """``scaled`` on ``x`` through a new class per scale; then the classes are
    collected, and with them their variants' runners (cycles, freed by the
    next collection)."""
    import gc
    for k in scales:
        scaled(scaler(k)(), x)
    gc.collect()
    gc.collect()
