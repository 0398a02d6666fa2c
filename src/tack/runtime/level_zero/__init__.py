"""The Level Zero backend (Intel GPUs through libze_loader and ctypes): see backend.py."""
