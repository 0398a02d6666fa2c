"""What the CUDA and HIP backends share: device buffers, the build, the warm launch."""
