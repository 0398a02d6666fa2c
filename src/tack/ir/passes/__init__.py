"""The variant passes of spec stage 5, one module each, run by ``pipeline``."""
