"""A RocketMQ 5 application against rmqemu: the official Python client (rocketmq-python-client)
sends COUNT messages through the proxies of `rmqemu up` while a SimpleConsumer receives and acks
them. It prints one JSON line per message and a summary, and exits 0 when every message whose send
was acknowledged was also received (nothing acked was lost), 1 otherwise.

    pip install rocketmq-python-client==5.1.2
    rmqemu up topologies/rocketmq5.yaml          # prints endpoints=HOST:PORT;HOST:PORT
    ENDPOINTS='HOST:PORT;HOST:PORT' python app.py

Environment: ENDPOINTS (required), TOPIC (RocketMQ5Topic), GROUP (RocketMQ5Group), COUNT (200),
INTERVAL_MS (20), DEADLINE_S (60: how long the consumer waits for the last messages), INVISIBLE_S
(15: how long a received message stays invisible; one whose ack was lost comes back after it).
"""

import json
import os
import sys
import threading
import time

from rocketmq import ClientConfiguration, Credentials, FilterExpression, Message, Producer, SimpleConsumer

ENDPOINTS = os.environ["ENDPOINTS"]
TOPIC = os.environ.get("TOPIC", "RocketMQ5Topic")
GROUP = os.environ.get("GROUP", "RocketMQ5Group")
COUNT = int(os.environ.get("COUNT", "200"))
INTERVAL_S = int(os.environ.get("INTERVAL_MS", "20")) / 1000
DEADLINE_S = float(os.environ.get("DEADLINE_S", "60"))
INVISIBLE_S = int(os.environ.get("INVISIBLE_S", "15"))  # whole seconds: the client writes a Duration's seconds


_print_lock = threading.Lock()  # the producer and the consumer thread both print: one whole line at a time


def say(**line):
    with _print_lock:
        print(json.dumps(line), flush=True)


def main():
    config = ClientConfiguration(ENDPOINTS, Credentials(), request_timeout=3)  # whole seconds
    producer = Producer(config, (TOPIC,))
    consumer = SimpleConsumer(config, GROUP, {TOPIC: FilterExpression()}, await_duration=5)
    producer.startup()
    consumer.startup()
    acked, received, failed = set(), set(), 0
    sending_done = threading.Event()

    def consume():
        deadline = None
        while deadline is None or time.monotonic() < deadline:
            if sending_done.is_set() and deadline is None:
                deadline = time.monotonic() + DEADLINE_S
            if sending_done.is_set() and acked <= received:
                return
            try:
                for msg in consumer.receive(16, INVISIBLE_S):  # up to 16 messages at a time
                    consumer.ack(msg)
                    received.add(msg.message_id)
                    say(event="received", id=msg.message_id, attempt=msg.delivery_attempt)
            except Exception as exc:  # noqa: BLE001 - a failed receive or ack: the lease runs out, it comes back
                say(event="receive_error", error=str(exc))

    reader = threading.Thread(target=consume)
    reader.start()
    for i in range(COUNT):
        msg = Message()
        msg.topic = TOPIC
        msg.body = f"order {i}: ünïcødé ✓".encode()
        msg.keys = f"order-{i}"
        try:
            receipt = producer.send(msg)
            acked.add(receipt.message_id)
            say(event="sent", id=receipt.message_id)
        except Exception as exc:  # noqa: BLE001 - the client retried and gave up: not acked, maybe stored
            failed += 1
            say(event="send_failed", error=str(exc))
        time.sleep(INTERVAL_S)
    sending_done.set()
    reader.join()
    producer.shutdown()
    consumer.shutdown()
    lost = sorted(acked - received)
    say(sent=COUNT, acked=len(acked), failed=failed, received=len(received), lost=len(lost), lost_ids=lost[:20])
    return 0 if not lost else 1


if __name__ == "__main__":
    sys.exit(main())
