"""The CPU backend: LLVM through llvmlite, MCJIT, and a thread pool."""
