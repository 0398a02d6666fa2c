"""Tack scalar types as LLVM types."""

from __future__ import annotations

from llvmlite import ir

from ...types import ScalarType

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F32 = ir.FloatType()
F64 = ir.DoubleType()
VOID = ir.VoidType()
BYTE_PTR = ir.PointerType(I8)


def llvm_type(dtype: ScalarType) -> ir.Type:
    if dtype.is_float:
        return F32 if dtype.bits == 32 else F64
    return ir.IntType(dtype.bits)


def pointer_to(dtype: ScalarType) -> ir.PointerType:
    return ir.PointerType(llvm_type(dtype))
