"""A target whose parser holds more memory than the run allows, on every input."""

import time

HELD: list[bytearray] = []


def test_one_input(data: bytes) -> bool:
    block = bytearray(512 << 20)
    block[::4096] = b"x" * len(range(0, len(block), 4096))  # touch every page: real RSS
    HELD.append(block)
    time.sleep(5)  # libFuzzer's memory watch looks once a second
    return True
