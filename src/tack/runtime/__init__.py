"""Devices, arrays, dispatch, and one subpackage per backend."""
