"""Suite-wide setup: a private, empty kernel cache directory for the whole run."""

import os
import tempfile

_CACHE = tempfile.mkdtemp(prefix="tack-test-cache-")
os.chmod(_CACHE, 0o700)
os.environ["TACK_CACHE_DIR"] = _CACHE
os.environ.setdefault("TACK_CACHE", "write")
