"""The OpenCL backend (pyopencl): GPUs, and PoCL on CPUs for testing the GPU path."""
