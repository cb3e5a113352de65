import pytest
from paths import LS6


@pytest.fixture
def ls6_path():
    if not LS6.exists():
        pytest.skip(f"real trace not available at {LS6}")
    return LS6
