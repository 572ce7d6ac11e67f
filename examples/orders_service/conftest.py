"""The example service is not installed: make its modules importable for its tests."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
