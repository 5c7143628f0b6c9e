'use strict';
// node bench/alions_sync.js CONFIG  (CONFIG: inline JSON or a path to a JSON file)
//
// bench/real_client_bench.py's ali-ons side: `count` synchronous sends one after another, like
// tests/realclients/js/produce.js, but each timed with process.hrtime (produce.js's "ms" is whole
// Date.now() milliseconds, and a send on loopback takes well under one). Prints JSON lines:
//   {"ready", "clientId", "ali_ons_version"}, then per send {"i", "ok", "ms" (float), "end_ms" (hrtime ms
//   since the first send started)} (and "error" on failure), then {"done": true, "sent", "failed"}.
// Config: nameSrv, topic, producerGroup, count, body_size (random bytes, made before the send is timed),
// stdin_eof_stops, ready_timeout_ms. Exit 0 after a run; 2 for a bad config; 1 for a crash.

const crypto = require('crypto');
const path = require('path');
const c = require(path.join(__dirname, '..', 'tests', 'realclients', 'js', 'common'));

const ALLOWED = [ 'nameSrv', 'topic', 'producerGroup', 'count', 'body_size', 'stdin_eof_stops', 'ready_timeout_ms' ];
const cfg = c.loadConfig();
c.checkKeys(cfg, ALLOWED);
const topic = c.requireString(cfg, 'topic');
const producerGroup = c.requireString(cfg, 'producerGroup');
const count = c.optionalInt(cfg, 'count', 1);
const bodySize = c.optionalInt(cfg, 'body_size', 256);
const readyTimeoutMs = c.optionalInt(cfg, 'ready_timeout_ms', 30000, 1);
const options = c.clientOptions(cfg, [], { producerGroup });

let stopping = false;
c.installHooks(() => { stopping = true; });
if (cfg.stdin_eof_stops === true) c.watchStdin(() => { stopping = true; });

const { Producer, Message, version } = c.loadAliOns();
const msNow = () => Number(process.hrtime.bigint()) / 1e6;

async function main() {
  const producer = new Producer(options);
  producer.on('error', err => { c.stats.clientErrors++; c.logError('producer', err); });
  const ready = await Promise.race([ producer.ready().then(() => true, () => false), c.sleep(readyTimeoutMs) ]);
  c.emit({ ready: ready === true, clientId: producer.clientId, ali_ons_version: version, pid: process.pid });
  let sent = 0;
  let failed = 0;
  let origin = null;
  for (let i = 0; i < count && !stopping; i++) {
    const msg = new Message(topic, null, crypto.randomBytes(bodySize));
    const started = msNow();
    if (origin === null) origin = started;
    const line = { i };
    try {
      await producer.send(msg);
      sent++;
      line.ok = true;
    } catch (err) {
      failed++;
      Object.assign(line, { ok: false, error: (err && err.message) || String(err) });
    }
    const ended = msNow();
    line.ms = Math.round((ended - started) * 1000) / 1000;
    line.end_ms = Math.round((ended - origin) * 1000) / 1000;
    c.emit(line);
  }
  c.emit({ done: true, sent, failed, client_errors: c.stats.clientErrors });
  await c.within(producer.close(), 5000);
  process.exit(0); // ali-ons keeps timers (its inner client is never closed)
}

main().catch(err => {
  c.logError('main', err);
  c.emit({ fatal: `crash: ${err && err.message}` });
  process.exit(1);
});
