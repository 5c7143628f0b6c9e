package rmqemu.example;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.rocketmq.client.ClientConfig;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyContext;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Your own application, talking to an rmqemu cluster with the Apache RocketMQ 4.9 Java client: the
 * same experiment as app.js (ali-ons).
 *
 * <p>A producer sends COUNT messages to RealTopic, one every INTERVAL_MS; a push consumer in the
 * same JVM receives them. While it runs, run.sh (APP=java) kills a broker master and restarts it.
 * At the end it prints one JSON line
 *
 * <pre>{"sent":200,"acked":200,"failed":0,"received":200,"lost":0}</pre>
 *
 * and exits 0 when no acked message was lost (1 otherwise): acked = send() returned a result,
 * received = distinct messages of this run the consumer got, lost = acked but never received
 * within DEADLINE_MS after the last send.
 *
 * <pre>
 *   mvn -q compile
 *   NAMESRV_ADDR=127.0.0.1:41233 mvn -q exec:exec      # the namesrvAddr= line `rmqemu up` printed
 * </pre>
 *
 * Environment: NAMESRV_ADDR (required; "host:port;host:port" with several namesrvs, as printed),
 * COUNT (200), INTERVAL_MS (50), DEADLINE_MS (60000), TOPIC (RealTopic).
 */
public final class RealClientChaos {

    private static final String PRODUCER_GROUP = "PG_REAL_CLIENT_CHAOS_JAVA";
    private static final String CONSUMER_GROUP = "CG_REAL_CLIENT_CHAOS_JAVA";

    private RealClientChaos() {
    }

    public static void main(String[] args) throws Exception {
        String namesrvAddr = System.getenv("NAMESRV_ADDR");
        if (namesrvAddr == null || namesrvAddr.trim().isEmpty()) {
            System.err.println("app: set NAMESRV_ADDR to the namesrvAddr= value `rmqemu up` printed,"
                + " e.g. NAMESRV_ADDR=127.0.0.1:41233");
            System.exit(2);
        }
        String topic = envString("TOPIC", "RealTopic");
        int count = envInt("COUNT", 200);
        int intervalMs = envInt("INTERVAL_MS", 50);
        int deadlineMs = envInt("DEADLINE_MS", 60000);

        // The rebalance interval (20 s by default) is a system property read once, when the client
        // classes load: set it before creating any client (or pass -D on the java command line).
        if (System.getProperty("rocketmq.client.rebalance.waitInterval") == null) {
            System.setProperty("rocketmq.client.rebalance.waitInterval", "1000");
        }

        // Each message's key is "<run>-<seq>": the consumer counts distinct keys of this run, so a
        // redelivered message counts once and messages left in the topic by an earlier run not at all.
        final String runId = Long.toHexString(System.nanoTime() & 0xffffffffL);
        final String keyPrefix = runId + "-";
        final Set<Long> acked = ConcurrentHashMap.newKeySet();
        final Set<Long> received = ConcurrentHashMap.newKeySet();
        final AtomicLong deliveries = new AtomicLong();
        log("run " + runId + ": " + count + " messages to " + topic + " every " + intervalMs
            + " ms via namesrv " + namesrvAddr);

        // The consumer starts first. CONSUME_FROM_FIRST_OFFSET: a group that has never committed an
        // offset starts at the beginning of each queue (the default, CONSUME_FROM_LAST_OFFSET, would
        // skip whatever was sent before its first rebalance).
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(CONSUMER_GROUP);
        configure(consumer, namesrvAddr);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener(new MessageListenerConcurrently() {
            @Override
            public ConsumeConcurrentlyStatus consumeMessage(List<MessageExt> msgs, ConsumeConcurrentlyContext context) {
                for (MessageExt msg : msgs) {
                    deliveries.incrementAndGet();
                    String key = msg.getKeys();
                    if (key != null && key.startsWith(keyPrefix)) {
                        received.add(Long.parseLong(key.substring(keyPrefix.length())));
                    }
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS; // RECONSUME_LATER would ask for a redelivery
            }
        });
        consumer.start();
        log("consumer started");

        DefaultMQProducer producer = new DefaultMQProducer(PRODUCER_GROUP);
        configure(producer, namesrvAddr);
        producer.start();
        log("producer started");

        long sent = 0;
        long failed = 0;
        long lastReport = System.currentTimeMillis();
        for (long seq = 0; seq < count; seq++) {
            byte[] body = ("hello #" + seq).getBytes(StandardCharsets.UTF_8);
            Message msg = new Message(topic, "chaos", keyPrefix + seq, body);
            sent++;
            try {
                // Returns once a broker stored the message; the client retries another broker on a
                // failure (retryTimesWhenSendFailed, 2 by default).
                SendResult result = producer.send(msg);
                acked.add(seq);
                if (result.getSendStatus() != SendStatus.SEND_OK) { // stored, not yet flushed or replicated
                    log("send #" + seq + " acked with " + result.getSendStatus());
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            } catch (Exception e) { // MQClientException, RemotingException, MQBrokerException
                failed++;
                log("send #" + seq + " failed: " + firstLine(e.getMessage()));
            }
            if (System.currentTimeMillis() - lastReport >= 1000) {
                log(progress(sent, count, acked.size(), failed, received.size()));
                lastReport = System.currentTimeMillis();
            }
            if (intervalMs > 0) {
                Thread.sleep(intervalMs);
            }
        }
        log("all sent: " + progress(sent, count, acked.size(), failed, received.size()));

        // Wait until every acked message has been received, or the deadline passes.
        long deadline = System.currentTimeMillis() + deadlineMs;
        List<Long> lost = missing(acked, received);
        while (!lost.isEmpty() && System.currentTimeMillis() < deadline) {
            Thread.sleep(200);
            lost = missing(acked, received);
            if (System.currentTimeMillis() - lastReport >= 2000) {
                log("waiting for " + lost.size() + " acked message(s): received " + received.size() + " ("
                    + (deadline - System.currentTimeMillis() + 999) / 1000 + " s left)");
                lastReport = System.currentTimeMillis();
            }
        }
        if (!lost.isEmpty()) {
            log("never received (seq): " + lost.subList(0, Math.min(20, lost.size())) + (lost.size() > 20 ? " ..." : ""));
        }
        log(deliveries.get() + " deliveries for " + received.size() + " distinct messages");

        // Shut both clients down: the consumer commits its offsets, both unregister from the brokers.
        producer.shutdown();
        consumer.shutdown();

        System.out.println("{\"sent\":" + sent + ",\"acked\":" + acked.size() + ",\"failed\":" + failed
            + ",\"received\":" + received.size() + ",\"lost\":" + lost.size() + "}");
        if (!lost.isEmpty()) {
            log("FAIL: " + lost.size() + " acked message(s) lost");
        } else if (acked.isEmpty()) {
            log("FAIL: no send was acked (is the cluster up, and NAMESRV_ADDR right?)");
        } else {
            log("OK: every acked message was received");
        }
        System.exit(!lost.isEmpty() || acked.isEmpty() ? 1 : 0);
    }

    /**
     * Options both clients take (ClientConfig). The defaults suit a production cluster that rarely
     * changes; in a chaos experiment brokers die and come back within seconds, so the client must
     * notice quickly.
     */
    private static void configure(ClientConfig client, String namesrvAddr) {
        // "host:port;host:port", exactly as `rmqemu up` prints it: the Java client splits on ';'.
        client.setNamesrvAddr(namesrvAddr);
        // Ask the namesrv for routes every second instead of every 30 s: the client learns within a
        // second that a broker died, and that it came back.
        client.setPollNameServerInterval(1000);
        // Heartbeat every second instead of every 30 s: a restarted broker knows the consumer group
        // again at once (a rebalance asks a broker for the group's consumers).
        client.setHeartbeatBrokerInterval(1000);
        // Commit consumed offsets every second instead of every 5 s: fewer redeliveries after a failure.
        client.setPersistConsumerOffsetInterval(1000);
    }

    private static List<Long> missing(Set<Long> acked, Set<Long> received) {
        List<Long> out = new ArrayList<>();
        for (Long seq : acked) {
            if (!received.contains(seq)) {
                out.add(seq);
            }
        }
        out.sort(null);
        return out;
    }

    private static String progress(long sent, int count, int acked, long failed, int received) {
        return "sent " + sent + "/" + count + ": acked " + acked + ", failed " + failed + "; received " + received;
    }

    private static String firstLine(String text) {
        if (text == null) {
            return "(no message)";
        }
        int nl = text.indexOf('\n');
        return nl < 0 ? text : text.substring(0, nl);
    }

    private static void log(String message) {
        System.out.println("[app] " + message);
    }

    private static String envString(String name, String dflt) {
        String raw = System.getenv(name);
        return raw == null || raw.isEmpty() ? dflt : raw;
    }

    private static int envInt(String name, int dflt) {
        String raw = System.getenv(name);
        if (raw == null || raw.isEmpty()) {
            return dflt;
        }
        try {
            int n = Integer.parseInt(raw.trim());
            if (n >= 0) {
                return n;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        System.err.println("app: " + name + " must be a whole number, got \"" + raw + "\"");
        System.exit(2);
        return dflt;
    }
}
