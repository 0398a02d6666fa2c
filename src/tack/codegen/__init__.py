"""Code generators: LLVM IR for the CPU; the C family for GPUs (later issues)."""
