"""The CUDA backend (cuda-python's driver bindings and NVRTC): NVIDIA GPUs."""
