"""Scalar element types and the promotion rules of the kernel language.

A :class:`ScalarType` names one of the ten storage types Tack arrays and kernel
scalars use. Instances are singletons: compare them with ``is`` or ``==``.

Promotion follows the language page (``docs/language.md``):

* two integers of one signedness take the wider type; a signed and an unsigned
  integer take the smallest signed type holding both (``i64`` at most);
* an integer with a float takes the float's type;
* two floats take the wider type.

*Weak* types model Python literals: ``x * 2`` keeps ``x``'s type and
``x * 0.5`` keeps a float ``x``'s type. A weak float meeting an integer gives
the kernel's default float type (``f64`` if any array argument is ``f64``,
else ``f32``), the same rule that types Python ``float`` arguments.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True, eq=False)
class ScalarType:
    """One scalar storage type: its name, kind (``i``, ``u``, ``f``) and bits.

    Instances are singletons (pickling and copying return the same object), so
    equality and hashing are by identity, which keeps signature lookups fast.
    A NumPy dtype or its name compares equal to the Tack type it converts to
    (``a.dtype == np.float32``), as dtypes are given as either everywhere.
    """

    name: str
    kind: str
    bits: int

    __hash__ = object.__hash__

    def __eq__(self, other) -> bool:
        if isinstance(other, ScalarType) or other is None:
            return self is other
        try:
            return np.dtype(other) == self.numpy
        except TypeError:
            return NotImplemented

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_int(self) -> bool:
        return self.kind in "iu"

    @property
    def is_signed(self) -> bool:
        return self.kind != "u"

    @property
    def itemsize(self) -> int:
        return self.bits // 8

    @property
    def numpy(self) -> np.dtype:
        return np.dtype(f"{self.kind}{self.itemsize}")

    def __repr__(self) -> str:
        return f"tack.{self.name}"

    def __str__(self) -> str:
        return self.name

    def __reduce__(self):
        return (scalar_type, (self.name,))

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __call__(self, value):
        """``value`` converted on the host as the cast inside kernels converts:
        integers wrap, floats become integers by truncation and saturate (NaN
        gives 0), and anything becomes a float by rounding to nearest."""
        convert = self.numpy.type
        if self.kind == "f":
            if isinstance(value, int) and -(1 << 63) <= value < (1 << 64):
                # from the 64-bit integer, rounded once (not through f64 first)
                value = (np.int64 if value < (1 << 63) else np.uint64)(value)
                return value.astype(self.numpy)
            with np.errstate(over="ignore"):   # past the range: inf, as in kernels
                return convert(value)
        lo, hi = ((-(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1)
                  if self.kind == "i" else (0, (1 << self.bits) - 1))
        if isinstance(value, (float, np.floating)):
            x = float(value)
            if x != x:
                return convert(0)
            return convert(lo if x <= lo - 1 else hi if x >= hi + 1 else int(x))
        wrapped = int(value) & ((1 << self.bits) - 1)
        return convert(wrapped - (1 << self.bits) if wrapped > hi else wrapped)


i8 = ScalarType("i8", "i", 8)
i16 = ScalarType("i16", "i", 16)
i32 = ScalarType("i32", "i", 32)
i64 = ScalarType("i64", "i", 64)
u8 = ScalarType("u8", "u", 8)
u16 = ScalarType("u16", "u", 16)
u32 = ScalarType("u32", "u", 32)
u64 = ScalarType("u64", "u", 64)
f32 = ScalarType("f32", "f", 32)
f64 = ScalarType("f64", "f", 64)

SCALAR_TYPES = (i8, i16, i32, i64, u8, u16, u32, u64, f32, f64)
_BY_NAME = {t.name: t for t in SCALAR_TYPES}
_BY_NUMPY = {t.numpy: t for t in SCALAR_TYPES}


def scalar_type(name: str) -> ScalarType:
    """The scalar type called ``name`` (``"f32"``, ``"i64"``, ...)."""
    return _BY_NAME[name]


def from_numpy(dtype) -> ScalarType:
    """The Tack type of a NumPy dtype; ``TypeError`` when there is none."""
    dt = np.dtype(dtype)
    try:
        return _BY_NUMPY[dt.newbyteorder("=")]
    except KeyError:
        if dt.kind == "b":
            raise TypeError(
                "Tack has no boolean arrays; convert with astype(numpy.int32) "
                "or pass dtype=tack.i32") from None
        raise TypeError(f"Unsupported numpy dtype: {dt}") from None


def as_scalar_type(dtype) -> ScalarType:
    """Accepts a ScalarType or anything ``np.dtype`` maps to a Tack type."""
    if isinstance(dtype, ScalarType):
        return dtype
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(
            f"dtype must be a Tack type such as tack.f32 or a NumPy dtype, "
            f"not {dtype!r}") from None
    return from_numpy(dt)


def int_type_for(value: int) -> ScalarType:
    """i32 if ``value`` fits, else i64, else u64 (the kernel argument rule)."""
    if -(1 << 31) <= value < (1 << 31):
        return i32
    if -(1 << 63) <= value < (1 << 63):
        return i64
    if 0 <= value < (1 << 64):
        return u64
    raise TypeError(f"integer {value} is outside the 64-bit range")


def float_value(value, dtype: "ScalarType") -> float:
    """A constant of float ``dtype`` as a Python float: an integer rounds once,
    to nearest even, straight to ``dtype`` (through a double, an f32 could
    round twice: 2**60 + 2**36 + 1 is nearest 2**60 + 2**37 in f32, but its
    double is 2**60 + 2**36, a tie that rounds to 2**60)."""
    if dtype.bits != 32 or not isinstance(value, int) or abs(value) < 1 << 24:
        return float(value)
    magnitude = abs(value)
    shift = magnitude.bit_length() - 24
    kept, rest = divmod(magnitude, 1 << shift)
    half = 1 << (shift - 1)
    if rest > half or (rest == half and kept & 1):
        kept += 1
    rounded = float(kept << shift)    # exact: 25 significant bits at most
    return -rounded if value < 0 else rounded


def promote(a: ScalarType, b: ScalarType) -> ScalarType:
    """The type of a binary operation between two (strong) types."""
    if a == b:
        return a
    if a.is_float or b.is_float:
        if a.is_float and b.is_float:
            return a if a.bits >= b.bits else b
        return a if a.is_float else b
    if a.kind == b.kind:
        return a if a.bits >= b.bits else b
    signed, unsigned = (a, b) if a.is_signed else (b, a)
    if signed.bits > unsigned.bits:
        return signed
    return _BY_NAME[f"i{min(64, unsigned.bits * 2)}"]


@dataclass(frozen=True, slots=True)
class Typed:
    """A type during inference: ``weak`` marks a literal's type (see module doc)."""

    dtype: ScalarType
    weak: bool = False


def join(a: Typed, b: Typed, default_float: ScalarType) -> Typed:
    """Combine two operand types under the weak-literal rules."""
    if a.weak and b.weak:
        if a.dtype.is_float or b.dtype.is_float:
            return Typed(default_float, True)
        # a literal past i64 is a weak u64; two of them (one local assigned one,
        # typed again by the fixpoint) stay u64, where i64 made them negative
        return a if a.dtype is b.dtype else Typed(i64, True)
    if a.weak or b.weak:
        weak, strong = (a, b) if a.weak else (b, a)
        if weak.dtype.is_float and strong.dtype.is_int:
            return Typed(default_float)
        return Typed(strong.dtype)
    return Typed(promote(a.dtype, b.dtype))


@dataclass(frozen=True, slots=True, eq=False)
class CompositeType:
    """A vector or matrix element type: ``shape`` components of one scalar type.

    ``tack.vec3()`` is ``CompositeType("vec", f32, (3,))`` and ``tack.mat33()``
    is ``CompositeType("mat", f32, (3, 3))`` (row-major). Instances are
    singletons, like :class:`ScalarType`; make them with :func:`composite`.
    """

    kind: str            # "vec" or "mat"
    scalar: ScalarType
    shape: tuple

    @property
    def count(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def itemsize(self) -> int:
        return self.count * self.scalar.itemsize

    @property
    def name(self) -> str:
        return f"{self.kind}{''.join(map(str, self.shape))}"

    @property
    def is_float(self) -> bool:
        return self.scalar.is_float

    @property
    def is_int(self) -> bool:
        return self.scalar.is_int

    def __repr__(self) -> str:
        return f"tack.{self.name}(dtype=tack.{self.scalar.name})"

    def __str__(self) -> str:
        return f"{self.name}({self.scalar.name})"

    def __reduce__(self):
        return (composite, (self.kind, self.shape, self.scalar))

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


_COMPOSITES: dict = {}


def composite(kind: str, shape: tuple, scalar: ScalarType) -> CompositeType:
    """The one vector (``kind="vec"``) or matrix (``"mat"``) type of this shape."""
    key = (kind, tuple(shape), scalar)
    found = _COMPOSITES.get(key)
    if found is None:
        found = _COMPOSITES.setdefault(key, CompositeType(kind, scalar, tuple(shape)))
    return found


def scalar_of(dtype) -> ScalarType:
    """The storage scalar type of a scalar or composite element type."""
    return dtype.scalar if isinstance(dtype, CompositeType) else dtype


def element_shape(dtype) -> tuple:
    """The component dimensions of an element type (``()`` for a scalar)."""
    return dtype.shape if isinstance(dtype, CompositeType) else ()


def as_element_type(dtype):
    """A ScalarType or CompositeType from anything :func:`as_scalar_type`
    takes, or a composite type itself."""
    if isinstance(dtype, CompositeType):
        return dtype
    return as_scalar_type(dtype)


def type_name(dtype) -> str:
    """A stable spelling of a scalar or element type: ``"f32"``, ``"vec3(f32)"``
    (what :func:`from_type_name` reads back; used in messages between ranks)."""
    return str(dtype)


def from_type_name(name: str):
    """The scalar or element type :func:`type_name` spelled."""
    if name.endswith(")"):
        head, _, scalar = name[:-1].partition("(")
        kind, digits = head[:3], head[3:]
        shape = tuple(map(int, digits)) if digits.isascii() and digits.isdigit() else None
        if COMPOSITE_KINDS.get(shape) != kind:
            raise ValueError(f"{name!r} names no vector or matrix type")
        return composite(kind, shape, scalar_type(scalar))
    return scalar_type(name)


# the shapes of the vector and matrix types Tack makes (tack.vec2 ... tack.mat44)
COMPOSITE_KINDS = {(2,): "vec", (3,): "vec", (4,): "vec", (2, 2): "mat", (3, 3): "mat",
                   (4, 4): "mat"}
