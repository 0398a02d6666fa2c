"""The kernel language frontend: decorators, source capture, validation, lowering."""
