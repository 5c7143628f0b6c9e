'use strict';
// Your own application, talking to an rmqemu cluster with ali-ons, a real RocketMQ 4.x client.
//
// A producer sends COUNT messages to RealTopic, one every INTERVAL_MS; a push consumer in the same
// process receives them. While it runs, run.sh kills a broker master and restarts it. At the end
// the app prints one JSON line:
//
//   {"sent":200,"acked":200,"failed":0,"received":200,"lost":0}
//
//   sent      sends attempted (acked + failed)
//   acked     sends the broker confirmed (producer.send() resolved)
//   failed    sends that threw, even after ali-ons' own retries
//   received  distinct messages of this run the consumer got
//   lost      acked messages never received by the deadline: a confirmed message must not vanish
//
// and exits 0 when nothing acked was lost, 1 otherwise (or when no send was acked at all).
//
//   NAMESRV_ADDR=127.0.0.1:41233 node app.js     # the namesrvAddr= line `rmqemu up` printed
//
// Environment: NAMESRV_ADDR (required), COUNT (200), INTERVAL_MS (50), DEADLINE_MS (60000: how
// long to wait for the last messages after the last send), TOPIC (RealTopic).
//
// Keep the bodies under 4 KiB: ali-ons 3.12.0 compresses a body of 4 KiB or more in place on every
// send attempt, so a retried large send arrives deflated twice (docs/real-clients.md).

const crypto = require('crypto');
const util = require('util');
const { Producer, Consumer, Message } = require('ali-ons');

// -- configuration ---------------------------------------------------------------------------

function envInt(name, dflt) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return dflt;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) fail(`${name} must be a whole number, got ${JSON.stringify(raw)}`);
  return n;
}

function fail(message) {
  console.error(`app: ${message}`);
  process.exit(2);
}

if (!process.env.NAMESRV_ADDR) {
  fail('set NAMESRV_ADDR to the namesrvAddr= value `rmqemu up` printed, e.g. NAMESRV_ADDR=127.0.0.1:41233');
}
// "host:port;host:port" (the Java client's format) -> a list: ali-ons does NOT split a string on ';'.
const NAME_SERVERS = process.env.NAMESRV_ADDR.split(';').map(s => s.trim()).filter(Boolean);
const TOPIC = process.env.TOPIC || 'RealTopic';
const COUNT = envInt('COUNT', 200);
const INTERVAL_MS = envInt('INTERVAL_MS', 50);
const DEADLINE_MS = envInt('DEADLINE_MS', 60000);

// Options both clients take. ali-ons' defaults suit a production cluster that rarely changes; in a
// chaos experiment brokers die and come back within seconds, so the client must notice quickly.
const CLIENT_OPTIONS = {
  nameSrv: NAME_SERVERS,
  // ali-ons requires an httpclient; it only uses it to look up Aliyun's name servers (with access
  // keys), never with nameSrv given, so an empty object does.
  httpclient: {},
  // ali-ons defaults to the first eth* IPv4 address, and to the string 'undefined' on a machine
  // without one. The clientIP goes into the clientId the brokers see in heartbeats.
  clientIP: '127.0.0.1',
  // Ask the namesrv for routes every second instead of every 30 s (sic: "Inteval"): the client
  // learns within a second that a broker died, and that it came back.
  pollNameServerInteval: 1000,
  // Heartbeat every second instead of every 30 s: a restarted broker knows the consumer group
  // again at once (a rebalance asks a broker for the group's consumers).
  heartbeatBrokerInterval: 1000,
  // Rebalance (which consumer pulls which queue) every second instead of every 10 s.
  rebalanceInterval: 1000,
  // Commit consumed offsets every second instead of every 5 s: fewer redeliveries after a failure.
  persistConsumerOffsetInterval: 1000,
  // ali-ons' default logger prints a whole stack trace for every failed request while a broker is
  // down; note() below prints one short line instead, and repeats of it at most every 5 s.
  logger: {
    info() {},
    debug() {},
    warn: (...args) => note('warn', args),
    error: (...args) => note('error', args),
  },
};

const noted = new Map(); // a message with its numbers blanked out -> when it was last printed, repeats since

function note(level, args) {
  let text = args[0] instanceof Error ? args[0].message : util.format(...args);
  text = String(text).split('\n')[0].replace(/^(MQPushConsumer occurred an error\s*)+/, '').slice(0, 160);
  const key = `${level} ${text.replace(/\d+/g, '#')}`; // pulls of queue 0, 1, 2, 3 failing: one line
  const last = noted.get(key);
  if (last && Date.now() - last.at < 5000) {
    last.repeats++;
    return;
  }
  noted.set(key, { at: Date.now(), repeats: 0 });
  const repeats = last && last.repeats ? ` (and ${last.repeats} like it before)` : '';
  console.error(`[ali-ons ${level}] ${text}${repeats}`);
}

function log(message) {
  console.log(`[app] ${message}`);
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

// -- the experiment --------------------------------------------------------------------------

// Each message's key is "<run>-<seq>": the consumer counts distinct keys of this run, so a
// redelivered message counts once and messages left in the topic by an earlier run not at all.
const RUN_ID = crypto.randomBytes(4).toString('hex');
const KEY_PREFIX = `${RUN_ID}-`;
const acked = new Set(); // seq of every send the broker confirmed
const received = new Set(); // seq of every message of this run the consumer got
let sent = 0;
let failed = 0;
let deliveries = 0;
let stopRequested = false;

async function onMessage(msg) { // ali-ons wants an async function; throwing would ask for a redelivery
  deliveries++;
  const key = msg.keys; // the KEYS property, as the producer set it
  if (key && key.startsWith(KEY_PREFIX)) received.add(Number(key.slice(KEY_PREFIX.length)));
}

function progress() {
  return `sent ${sent}/${COUNT}: acked ${acked.size}, failed ${failed}; received ${received.size}`;
}

// Resolve to true when the promise settles within ms, false otherwise: a close may wait on a dead broker.
function within(promise, ms) {
  return Promise.race([ promise.then(() => true, () => true), sleep(ms).then(() => false) ]);
}

// A client is ready once it has fetched its routes from the namesrv; give up after 30 s.
async function ready(client, what) {
  let timer;
  const timeout = new Promise((resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} not ready after 30 s: is NAMESRV_ADDR right?`)), 30000);
  });
  try {
    await Promise.race([ client.ready(), timeout ]);
  } finally {
    clearTimeout(timer);
  }
  log(`${what} ready`);
}

async function main() {
  log(`run ${RUN_ID}: ${COUNT} messages to ${TOPIC} every ${INTERVAL_MS} ms via namesrv ${NAME_SERVERS.join(', ')}`);

  // The consumer starts first. CONSUME_FROM_FIRST_OFFSET: a group that has never committed an
  // offset starts at the beginning of each queue (ali-ons' default, CONSUME_FROM_LAST_OFFSET,
  // would skip whatever was sent before its first rebalance).
  const consumer = new Consumer(Object.assign({}, CLIENT_OPTIONS, {
    consumerGroup: 'CG_REAL_CLIENT_CHAOS',
    consumeFromWhere: 'CONSUME_FROM_FIRST_OFFSET',
  }));
  consumer.on('error', err => note('error', [ err ]));
  consumer.subscribe(TOPIC, '*', onMessage);
  await ready(consumer, 'consumer');

  const producer = new Producer(Object.assign({}, CLIENT_OPTIONS, { producerGroup: 'PG_REAL_CLIENT_CHAOS' }));
  producer.on('error', err => note('error', [ err ]));
  await ready(producer, 'producer');

  let lastReport = Date.now();
  for (let seq = 0; seq < COUNT && !stopRequested; seq++) {
    const msg = new Message(TOPIC, 'chaos', `hello #${seq}`); // topic, tags, body (a string or a Buffer)
    msg.keys = [ `${KEY_PREFIX}${seq}` ];
    sent++;
    try {
      // Resolves once a broker stored the message; ali-ons retries another broker on a failure
      // (retryTimesWhenSendFailed, 3 by default).
      const result = await producer.send(msg);
      acked.add(seq);
      if (result.sendStatus !== 'SEND_OK') log(`send #${seq} acked with ${result.sendStatus}`); // not yet flushed/replicated
    } catch (err) {
      failed++;
      log(`send #${seq} failed: ${String(err.message).split('\n')[0]}`);
    }
    if (Date.now() - lastReport >= 1000) {
      log(progress());
      lastReport = Date.now();
    }
    if (INTERVAL_MS) await sleep(INTERVAL_MS);
  }
  log(`${stopRequested ? 'stopped early' : 'all sent'}: ${progress()}`);

  // Wait until every acked message has been received, or the deadline passes.
  const deadline = Date.now() + DEADLINE_MS;
  const missing = () => [ ...acked ].filter(seq => !received.has(seq));
  while (missing().length && Date.now() < deadline && !stopRequested) {
    await sleep(200);
    if (Date.now() - lastReport >= 2000) {
      log(`waiting for ${missing().length} acked message(s): received ${received.size} ` +
        `(${Math.ceil((deadline - Date.now()) / 1000)} s left)`);
      lastReport = Date.now();
    }
  }
  const lost = missing();
  if (lost.length) log(`never received (seq): ${lost.slice(0, 20).join(', ')}${lost.length > 20 ? ' ...' : ''}`);
  log(`${deliveries} deliveries for ${received.size} distinct messages`);

  // Close both clients: the consumer commits its offsets and both unregister from the brokers.
  // Bounded, because a close waits on each broker it knows, dead or not.
  const closed = await within(Promise.all([ producer.close(), consumer.close() ]), 10000);
  if (!closed) log('clients did not close within 10 s; exiting anyway');

  const summary = { sent, acked: acked.size, failed, received: received.size, lost: lost.length };
  console.log(JSON.stringify(summary));
  if (lost.length) log(`FAIL: ${lost.length} acked message(s) lost`);
  else if (!acked.size) log('FAIL: no send was acked (is the cluster up, and NAMESRV_ADDR right?)');
  else log('OK: every acked message was received');
  // ali-ons keeps timers and sockets open after close() (its inner producer is never closed):
  // leave explicitly.
  process.exit(lost.length || !acked.size ? 1 : 0);
}

// Ctrl-C once: stop sending and waiting, print the summary. Twice: leave at once.
process.on('SIGINT', () => {
  if (stopRequested) process.exit(130);
  stopRequested = true;
  log('interrupted: finishing up (Ctrl-C again to quit at once)');
});
process.on('SIGTERM', () => process.exit(143));

main().catch(err => {
  console.error(`app: ${err && err.stack ? err.stack : err}`);
  process.exit(2);
});
