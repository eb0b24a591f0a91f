import httpx
import httpx2


def test_httpx_is_httpx2() -> None:
    assert httpx.Client is httpx2.Client
