import copy
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def default_config():
    return copy.deepcopy(yaml.safe_load((ROOT / "config" / "config.yaml").read_text()))
