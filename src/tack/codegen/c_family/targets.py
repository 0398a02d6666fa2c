"""What differs between C dialects: one small class per target.

The emitter asks its target for spellings only; anything a target cannot do
raises ``NotImplementedError`` naming the target and the feature.
"""

from __future__ import annotations

from ... import types as T


# A float atomic's new value in its compare-and-swap loop. min/max keep the old
# value unless v < old (v > old), as Python's min(old, v) and max(old, v) do:
# a NaN on either side and a tie of the two zeros keep it (fmin/fmax do not).
FLOAT_UPDATES = {"add": "old + v", "sub": "old - v", "min": "(v < old ? v : old)",
                 "max": "(v > old ? v : old)"}


class CTarget:
    """Base of the C dialects. Subclasses override class attributes and the
    few methods below; the emitter never tests which target it has."""

    helper_prefix = "static inline"
    name = "C"
    kernel_prefix = "void"
    global_space = ""
    pack_space = "const"
    type_names = {
        T.i8: "signed char", T.i16: "short", T.i32: "int", T.i64: "long long",
        T.u8: "unsigned char", T.u16: "unsigned short", T.u32: "unsigned int",
        T.u64: "unsigned long long", T.f32: "float", T.f64: "double",
    }
    index_type = "long long"
    header = ""
    items_per_thread = 1   # loop iterations per thread (see emitter.items_per_thread)
    restrict = ""          # the qualifier of disjoint array pointers
    # Each array arrives as its allocation and a byte offset into it (after the
    # extents, in parameter order): the OpenCL backend's range views, which
    # OpenCL's sub-buffers could only start at an aligned byte.
    array_offsets = False

    def type(self, dtype) -> str:
        return self.type_names[dtype]

    def global_id(self) -> str:
        raise NotImplementedError(f"the {self.name} target has no thread index")

    def first_id(self, items: int) -> str:
        """The first iteration of this thread (``global_id`` for one per thread)."""
        if items == 1:
            return self.global_id()
        raise NotImplementedError(f"the {self.name} target runs one iteration per thread")

    def saturating(self, dst, expr: str) -> str:
        """Float to integer conversion: saturating, NaN to zero."""
        raise NotImplementedError(f"the {self.name} target has no saturating cast")

    def math(self, name: str, dtype) -> str:
        return name if dtype == T.f64 else name + "f"

    def atomic(self, op: str, dtype, pointer: str, value: str) -> str:
        raise NotImplementedError(f"the {self.name} target has no atomics")

    def literal_suffix(self, dtype) -> str:
        return {T.i64: "LL", T.u64: "ULL", T.u32: "U", T.f32: "f"}.get(dtype, "")

    def float_atomic_helper(self, op: str, dtype) -> str:
        raise NotImplementedError(f"the {self.name} target has no float atomics")

    def atomic_helper(self, op: str, dtype) -> str:
        """C text of a helper the atomic needs ("" when the hardware has it)."""
        return self.float_atomic_helper(op, dtype) if dtype.is_float else ""

    def float_bits(self, dtype, expr: str) -> str:
        """The bit pattern of a float value as an unsigned integer of its width."""
        raise NotImplementedError(f"the {self.name} target has no float bit casts")

    def nan_helper(self, dtype):
        """``(call, C text)`` of a helper giving NaN, or None: the literal is fine."""
        return None

    def rint_helper(self, dtype):
        """``(name, C text)`` of a function to call instead of ``rint``, or None."""
        return None

    def special_float(self, dtype, kind: str) -> str:
        """NaN or +infinity of ``dtype`` (``kind``: "nan" or "inf")."""
        if dtype == T.f32:
            return "((float)NAN)" if kind == "nan" else "INFINITY"
        return "((double)NAN)" if kind == "nan" else "((double)INFINITY)"

    def block_reduce_helper(self, op: str, lanes: int) -> str:
        """A tree reduction over the workgroup in a shared scratch array
        (``scratch_pointer``, synchronized by ``scratch_barrier``)."""
        combine = {"sum": "a + b", "min": "b < a ? b : a", "max": "a < b ? b : a"}[op]
        sync = self.scratch_barrier
        return (f"{self.helper_prefix} float tack_block_{op}({self.scratch_pointer} s, "
                f"float v) {{\n"
                f"  int lane = {self.local_id()};\n"
                f"  {sync}\n"
                f"  s[lane] = v;\n"
                f"  {sync}\n"
                f"  for (int width = {lanes // 2}; width > 0; width >>= 1) {{\n"
                f"    if (lane < width) {{ float a = s[lane], b = s[lane + width]; "
                f"s[lane] = {combine}; }}\n"
                f"    {sync}\n"
                f"  }}\n"
                f"  return s[0];\n}}\n")


class OpenCLTarget(CTarget):
    """OpenCL C 1.2 (with the 64-bit atomics and fp64 extensions when present);
    ``array_offsets``: see :class:`CTarget` (the OpenCL backend's buffers;
    Level Zero passes addresses)."""

    name = "OpenCL"
    kernel_prefix = "__kernel void"
    global_space = "__global"
    pack_space = "__global const"
    type_names = {
        T.i8: "char", T.i16: "short", T.i32: "int", T.i64: "long", T.u8: "uchar",
        T.u16: "ushort", T.u32: "uint", T.u64: "ulong", T.f32: "float", T.f64: "double",
    }
    index_type = "long"
    header = ("#pragma OPENCL FP_CONTRACT OFF\n"  # a*b+c is two roundings, as in Python
              "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
              "#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable\n"
              "#pragma OPENCL EXTENSION cl_khr_int64_extended_atomics : enable\n")

    shared_space = "__local"
    barrier = "barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);"

    def __init__(self, array_offsets: bool = False):
        self.array_offsets = array_offsets

    def global_id(self) -> str:
        return "(long)get_global_id(0)"

    def local_id(self) -> str:
        return "(long)get_local_id(0)"

    scratch_pointer = "__local float*"
    scratch_barrier = "barrier(CLK_LOCAL_MEM_FENCE);"

    def saturating(self, dst, expr: str) -> str:
        return f"convert_{self.type(dst)}_sat({expr})"

    def float_bits(self, dtype, expr: str) -> str:
        return f"as_uint((float)({expr}))" if dtype.bits == 32 else \
            f"as_ulong((double)({expr}))"

    def math(self, name: str, dtype) -> str:
        return name  # OpenCL's math builtins are overloaded on float and double

    def nan_helper(self, dtype) -> tuple:
        """``(call, C text)``: a NaN the compiler cannot see as a constant. PoCL
        (3.1, LLVM 15) dropped the store of exp, pow or // of a NaN literal, and
        crashed on pow of two; read through a volatile, the NaN is a value."""
        t = self.type(dtype)
        name = f"tack_nan_{dtype.name}"
        return (f"{name}()", f"static inline {t} {name}(void) {{ volatile {t} v = "
                             f"({t})NAN; return v; }}\n")

    def rint_helper(self, dtype) -> tuple:
        """``tack_rint_*``: ``rint`` only below the magnitude where every float is
        an integer, the argument itself above (and for NaN). The same values;
        PoCL (3.1) crashed compiling, or dropped the kernel's stores, where
        ``rint`` of an infinity or of a constant past that magnitude folded."""
        t = self.type(dtype)
        name = f"tack_rint_{dtype.name}"
        limit = "0x1p23f" if dtype == T.f32 else "0x1p52"
        return (name, f"static inline {t} {name}({t} x) {{ "
                      f"return fabs(x) < {limit} ? rint(x) : x; }}\n")

    def literal_suffix(self, dtype) -> str:
        return {T.i64: "L", T.u64: "UL", T.u32: "U", T.f32: "f"}.get(dtype, "")

    def atomic(self, op: str, dtype, pointer: str, value: str) -> str:
        if dtype.is_float:
            return f"tack_atomic_{op}_{dtype.name}({pointer}, {value})"
        prefix = "atomic" if dtype.bits == 32 else "atom"
        kind = self.type(dtype)
        return f"{prefix}_{op}((volatile __global {kind}*){pointer}, {value})"

    def float_atomic_helper(self, op: str, dtype) -> str:
        """A compare-and-swap loop for a float atomic OpenCL lacks."""
        t = self.type(dtype)
        bits = "uint" if dtype.bits == 32 else "ulong"
        cas = "atomic_cmpxchg" if dtype.bits == 32 else "atom_cmpxchg"
        as_bits, as_float = f"as_{bits}", f"as_{t}"
        update = FLOAT_UPDATES[op]
        return (f"static inline {t} tack_atomic_{op}_{dtype.name}(volatile __global {t}* p, "
                f"{t} v) {{\n"
                f"  volatile __global {bits}* q = (volatile __global {bits}*)p;\n"
                f"  {bits} seen = *q;\n"
                f"  for (;;) {{\n"
                f"    {t} old = {as_float}(seen);\n"
                f"    {bits} got = {cas}(q, seen, {as_bits}(({t})({update})));\n"
                f"    if (got == seen) return old;\n"
                f"    seen = got;\n"
                f"  }}\n}}\n")


_BLOCK = 256   # threads per block: every launch uses runtime.grid.WORKGROUP
_CUDA_CONVERT = {T.i32: "int", T.u32: "uint", T.i64: "ll", T.u64: "ull"}
_NARROW = {T.i8: (-128, 127), T.i16: (-32768, 32767), T.u8: (0, 255), T.u16: (0, 65535)}
# The __double2*_rz conversions saturate but do not send NaN to 0 (an H200
# gave INT_MIN for int and 0x8000000000000000 for long long), so NaN is
# tested first, as the spec's NaN -> 0 requires.
_CUDA_HELPERS = "".join(
    f"__device__ static inline {t} tack_sat_{n}(double v) {{\n"
    f"  return v != v ? ({t})0 : __double2{n}_rz(v);\n}}\n"
    for t, n in (("int", "int"), ("unsigned int", "uint"), ("long long", "ll"),
                 ("unsigned long long", "ull")))


class CUDATarget(CTarget):
    """CUDA C++ for NVRTC: one ``extern "C" __global__`` function per kernel."""

    name = "CUDA"
    kernel_prefix = 'extern "C" __global__ void'
    global_space = ""
    pack_space = "const"
    shared_space = "__shared__"
    barrier = "__syncthreads();"
    index_type = "long long"
    header = _CUDA_HELPERS

    items_per_thread = 4
    restrict = "__restrict__ "

    def global_id(self) -> str:
        return "((long long)blockIdx.x * blockDim.x + threadIdx.x)"

    def first_id(self, items: int) -> str:
        if items == 1:
            return self.global_id()
        return f"((long long)blockIdx.x * {_BLOCK * items} + threadIdx.x)"

    def local_id(self) -> str:
        return "((long long)threadIdx.x)"

    def special_float(self, dtype, kind: str) -> str:
        if dtype == T.f32:
            return "__int_as_float(0x7fc00000)" if kind == "nan" else \
                "__int_as_float(0x7f800000)"
        bits = "0x7ff8000000000000LL" if kind == "nan" else "0x7ff0000000000000LL"
        return f"__longlong_as_double({bits})"

    def float_bits(self, dtype, expr: str) -> str:
        return f"__float_as_uint((float)({expr}))" if dtype.bits == 32 else \
            f"__double_as_longlong((double)({expr}))"

    def saturating(self, dst, expr: str) -> str:
        """``tack_sat_*``: ``__double2*_rz``, which saturates, with NaN to zero;
        narrow integers clamp the 32-bit result."""
        if dst in _NARROW:
            lo, hi = _NARROW[dst]
            inner = f"tack_sat_int((double)({expr}))"
            return f"(({self.type(dst)})min(max({inner}, {lo}), {hi}))"
        return f"tack_sat_{_CUDA_CONVERT[dst]}((double)({expr}))"

    def atomic(self, op: str, dtype, pointer: str, value: str) -> str:
        if dtype.is_float and (op in ("min", "max") or op == "sub"):
            return f"tack_atomic_{op}_{dtype.name}({pointer}, {value})"
        if dtype.bits == 64 and dtype.is_int:
            kind = "unsigned long long" if (op in ("add", "sub") or not dtype.is_signed) \
                else "long long"
            operand = f"({kind})({value})"
            if op == "sub":
                return f"({self.type(dtype)})atomicAdd(({kind}*){pointer}, " \
                       f"({kind})0 - {operand})"
            return f"({self.type(dtype)})atomic{op.capitalize()}(({kind}*){pointer}, " \
                   f"{operand})"
        return f"atomic{op.capitalize()}({pointer}, {value})"

    def float_atomic_helper(self, op: str, dtype) -> str:
        if op == "add":
            return ""
        t = self.type(dtype)
        bits, to_bits, to_float = (("int", "__float_as_int", "__int_as_float")
                                   if dtype.bits == 32 else
                                   ("unsigned long long", "(unsigned long long)"
                                    "__double_as_longlong", "__longlong_as_double"))
        cast = "(long long)" if dtype.bits == 64 else ""
        update = FLOAT_UPDATES[op]
        return (f"__device__ static inline {t} tack_atomic_{op}_{dtype.name}({t}* p, "
                f"{t} v) {{\n"
                f"  {bits}* q = ({bits}*)p;\n"
                f"  {bits} seen = *q;\n"
                f"  for (;;) {{\n"
                f"    {t} old = {to_float}({cast}seen);\n"
                f"    {bits} got = atomicCAS(q, seen, {to_bits}(({t})({update})));\n"
                f"    if (got == seen) return old;\n"
                f"    seen = got;\n"
                f"  }}\n}}\n")

    scratch_pointer = "float*"
    scratch_barrier = "__syncthreads();"

    helper_prefix = "__device__ static inline"
    type_names = dict(CTarget.type_names)


class HIPTarget(CUDATarget):
    """HIP C++ (hipRTC or hipcc): CUDA's spellings, plus the HIP header. HIP has
    no signed 64-bit atomicMin/atomicMax: those are compare-and-swap loops."""

    name = "HIP"
    header = "#include <hip/hip_runtime.h>\n" + _CUDA_HELPERS

    def atomic(self, op: str, dtype, pointer: str, value: str) -> str:
        if dtype == T.i64 and op in ("min", "max"):
            return f"tack_atomic_{op}_i64({pointer}, {value})"
        return super().atomic(op, dtype, pointer, value)

    def atomic_helper(self, op: str, dtype) -> str:
        if dtype != T.i64 or op not in ("min", "max"):
            return super().atomic_helper(op, dtype)
        better = "v < old" if op == "min" else "old < v"
        return (f"__device__ static inline long long tack_atomic_{op}_i64(long long* p, "
                f"long long v) {{\n"
                f"  unsigned long long* q = (unsigned long long*)p;\n"
                f"  unsigned long long seen = *q;\n"
                f"  for (;;) {{\n"
                f"    long long old = (long long)seen;\n"
                f"    if (!({better})) return old;\n"
                f"    unsigned long long got = atomicCAS(q, seen, (unsigned long long)v);\n"
                f"    if (got == seen) return old;\n"
                f"    seen = got;\n"
                f"  }}\n}}\n")
