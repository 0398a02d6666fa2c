"""The HIP backend (AMD GPUs through hip-python): see backend.py."""
