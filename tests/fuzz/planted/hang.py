"""A target whose parser never returns in time, on every input."""

import time


def test_one_input(data: bytes) -> bool:
    time.sleep(30)  # libFuzzer's -timeout (1 s in the test) ends the run long before
    return True
