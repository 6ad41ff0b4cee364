"""Storage benchmarks: rt_bdev, rt_safe_bdev and recovery throughput next to raw copies."""
