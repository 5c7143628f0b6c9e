'use strict';
// node consume.js CONFIG  (CONFIG: inline JSON, a path to a JSON file, or absent/"-" for stdin)
//
// An ali-ons push Consumer subscribed to one topic. Prints JSON lines:
//   {"ready": true, "clientId", ...} once the consumer is ready (subscription made, routes being fetched);
//   {"assigned": [{"broker", "queueId"}], "topic"} each time a rebalance changes the queues it pulls;
//   one line per delivery: {"msgId", "originMsgId", "topic", "queueId", "queueOffset", "commitLogOffset",
//     "broker", "body_b64", "sha256", "size", "tags", "keys", "reconsumeTimes", "properties", "bornHost",
//     "storeHost", "bornTimestamp", "storeTimestamp", "action" ("consumed" or "failed"), "ts"};
//   {"done": true, "received", "deliveries", "reason", "closed", "close_ms", "unhandled", "client_errors"} at the end.
// "received" counts distinct messages: originMsgId (set on redeliveries through %RETRY%<group>) else msgId.
// Runs until SIGTERM/SIGINT, stdin EOF (unless stdin_eof_stops is false, or the config came on stdin),
// `expect` distinct messages plus linger_ms, or max_runtime_ms; then closes the consumer and exits 0.
//
// Config: nameSrv, topic, consumerGroup, tags ("*" or "a||b"), expect, linger_ms, consumeFromWhere
// (default here CONSUME_FROM_FIRST_OFFSET; ali-ons' own default CONSUME_FROM_LAST_OFFSET skips what was
// sent before the first rebalance), fail_times (throw in the handler for the first N deliveries of each
// message: exercises CONSUMER_SEND_MSG_BACK), the client intervals, pull options, options (verbatim),
// stdin_eof_stops, ready_timeout_ms, close_timeout_ms, max_runtime_ms.

const c = require('./common');

const CONSUMER_KEYS = [ 'consumeFromWhere', 'pullBatchSize', 'pullInterval', 'pullTimeDelayMillsWhenException',
  'brokerSuspendMaxTimeMillis', 'consumerTimeoutMillisWhenSuspend', 'maxReconsumeTimes', 'parallelConsumeLimit',
  'isBroadcast', 'pullThresholdForQueue' ];
const ALLOWED = [ 'nameSrv', 'topic', 'consumerGroup', 'tags', 'expect', 'linger_ms', 'fail_times', 'options',
  'stdin_eof_stops', 'ready_timeout_ms', 'close_timeout_ms', 'max_runtime_ms',
  'pollNameServerInteval', 'heartbeatBrokerInterval', 'persistConsumerOffsetInterval', 'rebalanceInterval',
  'instanceName', 'clientIP', 'responseTimeout', 'connectTimeout' ].concat(CONSUMER_KEYS);

const cfg = c.loadConfig();
c.checkKeys(cfg, ALLOWED);
const topic = c.requireString(cfg, 'topic');
const consumerGroup = c.requireString(cfg, 'consumerGroup');
const expect = c.optionalInt(cfg, 'expect', null, 1);
const lingerMs = c.optionalInt(cfg, 'linger_ms', 0);
const failTimes = c.optionalInt(cfg, 'fail_times', 0);
const readyTimeoutMs = c.optionalInt(cfg, 'ready_timeout_ms', 30000, 1);
const closeTimeoutMs = c.optionalInt(cfg, 'close_timeout_ms', 10000, 1);
const maxRuntimeMs = c.optionalInt(cfg, 'max_runtime_ms', null, 1);
const tags = cfg.tags === undefined || cfg.tags === null ? '*' : String(cfg.tags);
if (cfg.consumeFromWhere === undefined) cfg.consumeFromWhere = 'CONSUME_FROM_FIRST_OFFSET';
const options = c.clientOptions(cfg, CONSUMER_KEYS, { consumerGroup });

const { Consumer, version } = c.loadAliOns();
const seen = new Set();
const attempts = new Map();
let deliveries = 0;
let consumer = null;
let stopping = null;

function stop(reason) {
  if (!stopping) stopping = finish(reason);
  return stopping;
}

async function finish(reason) {
  let closed = false;
  const closeStarted = Date.now();
  if (consumer) closed = await c.within(consumer.close(), closeTimeoutMs);
  c.emit({ done: true, received: seen.size, deliveries, reason, closed, close_ms: Date.now() - closeStarted,
    unhandled: c.stats.unhandled, client_errors: c.stats.clientErrors });
  process.exit(0); // ali-ons keeps timers (its inner CLIENT_INNER_PRODUCER client is never closed)
}

c.installHooks(sig => stop(sig));
if (cfg.stdin_eof_stops !== false && !cfg.__fromStdin) c.watchStdin(() => stop('stdin-eof'));
if (maxRuntimeMs) setTimeout(() => stop('max_runtime'), maxRuntimeMs);

function describe(msg, mq) {
  const body = msg.body || Buffer.alloc(0);
  const props = Object.assign({}, msg.properties);
  delete props['']; // ali-ons' property parser leaves an empty key for the trailing separator
  return {
    msgId: msg.msgId, originMsgId: msg.originMessageId || null, topic: msg.topic, queueId: msg.queueId,
    queueOffset: msg.queueOffset, commitLogOffset: msg.commitLogOffset, broker: mq && mq.brokerName,
    body_b64: body.toString('base64'), sha256: c.sha256(body), size: body.length, tags: msg.tags || null,
    keys: msg.keys || null, reconsumeTimes: msg.reconsumeTimes, properties: props, bornHost: msg.bornHost,
    storeHost: msg.storeHost, bornTimestamp: msg.bornTimestamp, storeTimestamp: msg.storeTimestamp,
  };
}

async function handler(msg, mq) {
  const line = describe(msg, mq);
  const key = line.originMsgId || line.msgId;
  const n = (attempts.get(key) || 0) + 1;
  attempts.set(key, n);
  deliveries++;
  if (n <= failTimes) {
    c.emit(Object.assign(line, { action: 'failed', attempt: n, ts: Date.now() }));
    throw new Error(`rmqemu consume.js: induced failure ${n}/${failTimes}`);
  }
  c.emit(Object.assign(line, { action: 'consumed', attempt: n, ts: Date.now() }));
  const before = seen.size;
  seen.add(key);
  if (expect !== null && before < expect && seen.size >= expect) {
    setTimeout(() => stop('expect'), lingerMs);
  }
}

function assigned() {
  const out = [];
  for (const { messageQueue: mq } of consumer.processQueueTable.values()) {
    if (mq.topic === topic) out.push({ broker: mq.brokerName, queueId: mq.queueId });
  }
  return out.sort((a, b) => (a.broker === b.broker ? a.queueId - b.queueId : a.broker < b.broker ? -1 : 1));
}

async function main() {
  consumer = new Consumer(options);
  consumer.on('error', err => { c.stats.clientErrors++; c.logError('consumer', err); });
  consumer.on(`topic_${topic}_queue_changed`, () => c.emit({ assigned: assigned(), topic, ts: Date.now() }));
  consumer.subscribe(topic, tags, handler); // before init runs (next tick), so init already routes the topic
  let readyError = null;
  const ready = await Promise.race([
    consumer.ready().then(() => true, err => { readyError = err; return false; }),
    c.sleep(readyTimeoutMs).then(() => false),
  ]);
  if (stopping) return;
  c.emit(Object.assign({ ready, clientId: consumer.clientId, consumerGroup, topic, tags, nameSrv: options.nameSrv,
    consumeFromWhere: options.consumeFromWhere, ali_ons_version: version, pid: process.pid },
  ready ? {} : c.errorInfo(readyError || new Error('ready timeout'))));
}

main().catch(err => {
  c.logError('main', err);
  c.emit({ fatal: `crash: ${err && err.message}` });
  process.exit(1);
});
