"""A target whose parser lets an unexpected error out, on every input."""


def test_one_input(data: bytes) -> bool:
    raise KeyError(f"planted: {len(data)} bytes")
