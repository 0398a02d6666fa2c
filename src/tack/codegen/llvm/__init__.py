"""The CPU code generator: typed Tack IR to an LLVM module through llvmlite."""
