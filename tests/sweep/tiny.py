"""The one-broker topology the sweep unit tests vary (a file under each test's tmp_path)."""

TINY_TOPOLOGY = """name: tiny
timing: {scale: 0.01}
namesrvs: 1
brokers: [{name: broker-a}]
topics: [{name: T, brokers: [broker-a], queues: 2}]
producers: [{group: pg, topics: [T], rate: 2}]
duration: 100s
"""
