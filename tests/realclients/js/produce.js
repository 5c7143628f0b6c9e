'use strict';
// node produce.js CONFIG  (CONFIG: inline JSON, a path to a JSON file, or absent/"-" for stdin)
//
// Sends `count` messages one after another with an ali-ons Producer and prints one JSON line per send:
//   {"i", "ok", "status", "msgId", "queue": {"broker", "queueId"}, "queueOffset", "ms", "sha256", "size",
//    "body_b64" (bodies up to 4 KiB), "tags", "keys", "properties" (the message's properties as ali-ons sends
//    them, null ones left out), "delayTimeLevel", "born" (ms before send()), "ts", and on failure "error",
//    "error_name", "error_code"}
// then {"done": true, "sent", "failed", "stopped", "unhandled", "client_errors"} and {"closed": bool, "close_ms"}.
// With trace_attempts, each attempt of a send (ali-ons retries a failed one on another queue, up to
// 1 + retryTimesWhenSendFailed attempts) is also a line, printed before its send's line:
//   {"attempt": n (1-based), "i", "broker", "addr" (the broker address ali-ons sent to), "queueId", "ok",
//    "code" (the answer's, or null: no answer), "msgId" when ok, "error", "error_name", "error_code" when not,
//    "born", "ms", "ts"}
// "ok" means producer.send() resolved; "status" is ali-ons' SendStatus (SEND_OK, FLUSH_DISK_TIMEOUT, ...).
// A failed send does not end the run. Exit 0 after a run; 2 for a bad config; 1 for a crash.
// SIGTERM/SIGINT (and stdin EOF when stdin_eof_stops) stop after the send in flight.
//
// Config: nameSrv ("h:p;h:p" or list), topic, producerGroup, count, bodies (base64 list, used in turn),
// body_size (random bytes when no bodies; default: a short text body), tags (string or list used in turn),
// keys (true: "key-<i>"; a list of strings: those on every message; a list of lists: used in turn; [] none;
// ali-ons joins them with " " and trims), user_properties (a list of {name: value} used in turn, set in
// msg.properties: ali-ons has no setter), delay_levels (a list used in turn: msg.delayTimeLevel, 0 none),
// interval_ms, sendTimeout (ali-ons sendMsgTimeout),
// retryTimesWhenSendFailed, compressMsgBodyOverHowmuch, the client intervals (pollNameServerInteval,
// heartbeatBrokerInterval, ...), options (passed verbatim to new Producer), stdin_eof_stops,
// ready_timeout_ms, close_timeout_ms, trace_attempts (true: the attempt lines above).

const crypto = require('crypto');
const c = require('./common');

const PRODUCER_KEYS = [ 'sendMsgTimeout', 'retryTimesWhenSendFailed', 'compressMsgBodyOverHowmuch',
  'retryAnotherBrokerWhenNotStoreOK', 'createTopicKey', 'defaultTopicQueueNums' ];
const ALLOWED = [ 'nameSrv', 'topic', 'producerGroup', 'count', 'bodies', 'body_size', 'tags', 'keys', 'user_properties',
  'delay_levels', 'interval_ms', 'sendTimeout', 'options', 'stdin_eof_stops', 'ready_timeout_ms', 'close_timeout_ms',
  'pollNameServerInteval', 'heartbeatBrokerInterval', 'persistConsumerOffsetInterval', 'rebalanceInterval',
  'instanceName', 'clientIP', 'responseTimeout', 'connectTimeout', 'trace_attempts' ].concat(PRODUCER_KEYS);
const PRINT_BODY_MAX = 4096;

const cfg = c.loadConfig();
c.checkKeys(cfg, ALLOWED);
const topic = c.requireString(cfg, 'topic');
const producerGroup = c.requireString(cfg, 'producerGroup');
const count = c.optionalInt(cfg, 'count', 1);
const intervalMs = c.optionalInt(cfg, 'interval_ms', 0);
const bodySize = c.optionalInt(cfg, 'body_size', null);
const readyTimeoutMs = c.optionalInt(cfg, 'ready_timeout_ms', 30000, 1);
const closeTimeoutMs = c.optionalInt(cfg, 'close_timeout_ms', 5000, 1);
if (cfg.bodies !== undefined && (!Array.isArray(cfg.bodies) || !cfg.bodies.length
    || cfg.bodies.some(b => typeof b !== 'string'))) c.fatal('config.bodies must be a non-empty list of base64 strings');
if (cfg.sendTimeout !== undefined) cfg.sendMsgTimeout = c.optionalInt(cfg, 'sendTimeout', 3000, 1);
const bodies = (cfg.bodies || []).map(b => Buffer.from(b, 'base64'));
const tagList = cfg.tags === undefined || cfg.tags === null ? [ null ] : [].concat(cfg.tags);
if (cfg.delay_levels !== undefined && (!Array.isArray(cfg.delay_levels) || !cfg.delay_levels.length
    || cfg.delay_levels.some(l => !Number.isInteger(l) || l < 0))) c.fatal('config.delay_levels must be a non-empty list of ints >= 0');
const delayLevels = cfg.delay_levels || [ 0 ];
const strings = l => Array.isArray(l) && l.every(k => typeof k === 'string');
if (cfg.keys !== undefined && cfg.keys !== true && !(strings(cfg.keys) || (Array.isArray(cfg.keys) && cfg.keys.length
    && cfg.keys.every(strings)))) c.fatal('config.keys must be true, a list of strings or a non-empty list of lists of strings');
const keysEach = Array.isArray(cfg.keys) && cfg.keys.length > 0 && cfg.keys.every(Array.isArray);
if (cfg.user_properties !== undefined && (!Array.isArray(cfg.user_properties) || !cfg.user_properties.length
    || cfg.user_properties.some(p => !p || typeof p !== 'object' || Array.isArray(p)
      || Object.values(p).some(v => typeof v !== 'string')))) {
  c.fatal('config.user_properties must be a non-empty list of {name: string value} objects');
}
const userProperties = cfg.user_properties || [ {} ];
const options = c.clientOptions(cfg, PRODUCER_KEYS, { producerGroup });

let stopping = false;
const stop = () => { stopping = true; };
c.installHooks(stop);
if (cfg.stdin_eof_stops === true) c.watchStdin(stop);

const { Producer, Message, version } = c.loadAliOns();
const runId = crypto.randomBytes(4).toString('hex');

function bodyFor(i) {
  if (bodies.length) return bodies[i % bodies.length];
  if (bodySize !== null) return crypto.randomBytes(bodySize);
  return Buffer.from(`rmqemu-${runId}-${i}`);
}

function keysFor(i) {
  if (cfg.keys === true) return [ `key-${i}` ];
  const keys = keysEach ? cfg.keys[i % cfg.keys.length] : cfg.keys;
  return Array.isArray(keys) && keys.length ? keys : null;
}

// the properties ali-ons puts in the request (messageProperties2String) but the null ones: a message
// without tags has TAGS null, which ali-ons writes as the text "null"
function sentProperties(msg) {
  return Object.fromEntries(Object.entries(msg.properties).filter(([ , v ]) => v !== null && v !== undefined));
}

// Each attempt of send i as a line: ali-ons's send() calls its MQClient's sendMessage(brokerAddr, brokerName,
// msg, requestHeader, timeout) once per attempt (sendKernelImpl), so a wrapper there sees every attempt and
// the address it went to, which send() itself does not report.
let current = null;
function traceAttempts(producer) {
  const client = producer._mqClient;
  const sendMessage = client.sendMessage;
  client.sendMessage = async function(brokerAddr, brokerName, msg, requestHeader, timeoutMillis) {
    const line = { attempt: current ? ++current.attempts : null, i: current ? current.i : null, broker: brokerName,
      addr: brokerAddr, queueId: requestHeader.queueId, born: Date.now() };
    try {
      const res = await sendMessage.call(this, brokerAddr, brokerName, msg, requestHeader, timeoutMillis);
      Object.assign(line, { ok: true, code: 0, msgId: res.msgId });
      return res;
    } catch (err) {
      // an answer with an error code is an MQClientException carrying it; a failed connection has none
      Object.assign(line, { ok: false, code: Number.isInteger(err && err.code) ? err.code : null }, c.errorInfo(err));
      throw err;
    } finally {
      line.ts = Date.now();
      line.ms = line.ts - line.born;
      c.emit(line);
    }
  };
}

async function main() {
  const producer = new Producer(options);
  producer.on('error', err => { c.stats.clientErrors++; c.logError('producer', err); });
  if (cfg.trace_attempts === true) traceAttempts(producer);
  let readyError = null;
  const ready = await Promise.race([
    producer.ready().then(() => true, err => { readyError = err; return false; }),
    c.sleep(readyTimeoutMs).then(() => false),
  ]);
  c.emit(Object.assign({ ready, clientId: producer.clientId, producerGroup, topic, nameSrv: options.nameSrv,
    ali_ons_version: version, pid: process.pid }, ready ? {} : c.errorInfo(readyError || new Error('ready timeout'))));

  let sent = 0;
  let failed = 0;
  for (let i = 0; i < count && !stopping; i++) {
    const body = bodyFor(i);
    const tags = tagList[i % tagList.length];
    const keys = keysFor(i);
    // sha256 before send: ali-ons deflates bodies >= compressMsgBodyOverHowmuch in place (msg.body)
    const delayTimeLevel = delayLevels[i % delayLevels.length];
    const line = { i, sha256: c.sha256(body), size: body.length, tags, keys, delayTimeLevel };
    if (body.length <= PRINT_BODY_MAX) line.body_b64 = body.toString('base64');
    const msg = new Message(topic, tags, Buffer.from(body));
    if (keys) msg.keys = keys;
    Object.assign(msg.properties, userProperties[i % userProperties.length]);
    if (delayTimeLevel > 0) msg.delayTimeLevel = delayTimeLevel;
    line.properties = sentProperties(msg);
    const started = Date.now();
    line.born = started;
    current = { i, attempts: 0 };
    try {
      const res = await producer.send(msg);
      sent++;
      const mq = res.messageQueue || {};
      // ali-ons passes the response header's queueId through as the string the server sent
      const queueId = /^\d+$/.test(String(mq.queueId)) ? Number(mq.queueId) : mq.queueId;
      Object.assign(line, { ok: true, status: res.sendStatus, msgId: res.msgId,
        queue: { broker: mq.brokerName, queueId }, queueOffset: res.queueOffset });
    } catch (err) {
      failed++;
      Object.assign(line, { ok: false }, c.errorInfo(err));
    }
    line.ms = Date.now() - started;
    line.ts = Date.now();
    c.emit(line);
    if (intervalMs && i + 1 < count) await c.sleep(intervalMs, () => stopping);
  }
  c.emit({ done: true, sent, failed, stopped: stopping && sent + failed < count,
    unhandled: c.stats.unhandled, client_errors: c.stats.clientErrors });

  const closeStarted = Date.now();
  const closed = await c.within(producer.close(), closeTimeoutMs);
  c.emit({ closed, close_ms: Date.now() - closeStarted });
  // ali-ons keeps timers (its inner CLIENT_INNER_PRODUCER client is never closed): exit explicitly
  process.exit(0);
}

main().catch(err => {
  c.logError('main', err);
  c.emit({ fatal: `crash: ${err && err.message}` });
  process.exit(1);
});
