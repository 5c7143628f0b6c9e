'use strict';
// Shared by produce.js and consume.js: config loading and checking, loading ali-ons from NODE_PATH,
// one-JSON-object-per-line output, and process-level hooks. Output goes to stdout as JSON lines;
// ali-ons' own warnings and errors go to stderr.

const crypto = require('crypto');
const fs = require('fs');
const path = require('path');

// ali-ons spells it "Inteval"; the correct spelling is accepted too so that a typo is not silently ignored.
const ALIASES = { pollNameServerInterval: 'pollNameServerInteval' };
// ClientConfig options (lib/client_config.js) every client takes.
const CLIENT_KEYS = [ 'pollNameServerInteval', 'heartbeatBrokerInterval', 'persistConsumerOffsetInterval',
  'rebalanceInterval', 'instanceName', 'clientIP', 'responseTimeout', 'connectTimeout' ];

const stats = { unhandled: 0, clientErrors: 0 };

function emit(obj) {
  // stdout to a file or a pipe is synchronous on Linux, so nothing is lost at process.exit()
  process.stdout.write(JSON.stringify(obj) + '\n');
}

function fatal(message, code) {
  emit({ fatal: message });
  process.stderr.write(`fatal: ${message}\n`);
  process.exit(code === undefined ? 2 : code);
}

function logError(where, err) {
  const msg = err && err.stack ? err.stack.split('\n').slice(0, 3).join(' | ') : String(err);
  process.stderr.write(`${new Date().toISOString()} [${where}] ${err && err.name}: ${msg}\n`);
}

// argv[2] is inline JSON (starts with "{") or a path to a JSON file; without it the config is read from stdin.
function loadConfig() {
  const arg = process.argv[2];
  let text;
  let fromStdin = false;
  try {
    if (arg === undefined || arg === '-') {
      text = fs.readFileSync(0, 'utf8');
      fromStdin = true;
    } else if (arg.trim().startsWith('{')) {
      text = arg;
    } else {
      text = fs.readFileSync(arg, 'utf8');
    }
  } catch (err) {
    fatal(`cannot read config ${arg === undefined ? '(stdin)' : arg}: ${err.message}`);
  }
  let cfg;
  try {
    cfg = JSON.parse(text);
  } catch (err) {
    fatal(`config is not JSON: ${err.message}`);
  }
  if (!cfg || typeof cfg !== 'object' || Array.isArray(cfg)) fatal('config must be a JSON object');
  for (const [ alias, real ] of Object.entries(ALIASES)) {
    if (alias in cfg) {
      cfg[real] = cfg[alias];
      delete cfg[alias];
    }
  }
  cfg.__fromStdin = fromStdin;
  return cfg;
}

function checkKeys(cfg, allowed) {
  const unknown = Object.keys(cfg).filter(k => !k.startsWith('__') && !allowed.includes(k));
  if (unknown.length) fatal(`unknown config keys ${JSON.stringify(unknown)}; allowed: ${allowed.join(', ')}`);
}

function requireString(cfg, key) {
  if (typeof cfg[key] !== 'string' || !cfg[key]) fatal(`config.${key} must be a non-empty string`);
  return cfg[key];
}

function optionalInt(cfg, key, dflt, min) {
  if (cfg[key] === undefined || cfg[key] === null) return dflt;
  if (!Number.isInteger(cfg[key]) || cfg[key] < (min === undefined ? 0 : min)) {
    fatal(`config.${key} must be an integer >= ${min === undefined ? 0 : min}`);
  }
  return cfg[key];
}

// "h1:p1;h2:p2" or ["h1:p1", "h2:p2"] -> array. ali-ons itself does NOT split a string on ";":
// remoting_client.js wraps a string in a one-element list and channel.js splits it on ":".
function nameServers(cfg) {
  let list = cfg.nameSrv;
  if (typeof list === 'string') list = list.split(';');
  if (!Array.isArray(list)) fatal('config.nameSrv must be "host:port;host:port" or a list of "host:port"');
  list = list.map(s => String(s).trim()).filter(Boolean);
  if (!list.length || list.some(s => !/^[^:;\s]+:\d+$/.test(s))) {
    fatal(`config.nameSrv has no usable "host:port": ${JSON.stringify(cfg.nameSrv)}`);
  }
  return list;
}

// ali-ons options: nameSrv, the client keys present in cfg, then cfg.options verbatim (it wins).
function clientOptions(cfg, extraKeys, base) {
  const opts = Object.assign({ nameSrv: nameServers(cfg), httpclient: {} }, base);
  for (const key of CLIENT_KEYS.concat(extraKeys)) {
    if (cfg[key] !== undefined && cfg[key] !== null) opts[key] = cfg[key];
  }
  if (cfg.options !== undefined) {
    if (!cfg.options || typeof cfg.options !== 'object' || Array.isArray(cfg.options)) {
      fatal('config.options must be an object');
    }
    Object.assign(opts, cfg.options);
  }
  return opts;
}

// ali-ons from the directory NODE_PATH names (and only from there, not from a node_modules up the tree).
function loadAliOns() {
  const nodePath = process.env.NODE_PATH;
  if (!nodePath) fatal('NODE_PATH is not set: it must name the node_modules directory holding ali-ons '
    + '(tests/realclients/alions.py: ali_ons_dir() / "node_modules")');
  const dirs = nodePath.split(path.delimiter).filter(Boolean);
  let main;
  try {
    main = require.resolve('ali-ons', { paths: dirs });
  } catch (err) {
    fatal(`ali-ons not found under NODE_PATH=${nodePath}: ${err.message.split('\n')[0]}`);
  }
  const pkgFile = path.join(main.slice(0, main.lastIndexOf(`${path.sep}ali-ons${path.sep}`)), 'ali-ons', 'package.json');
  const lib = require(main);
  lib.version = JSON.parse(fs.readFileSync(pkgFile, 'utf8')).version;
  lib.dir = path.dirname(pkgFile);
  return lib;
}

function installHooks(onSignal) {
  process.on('unhandledRejection', err => {
    stats.unhandled++;
    logError('unhandledRejection', err);
  });
  process.on('uncaughtException', err => {
    logError('uncaughtException', err);
    emit({ fatal: `uncaught exception: ${err && err.message}` });
    process.exit(1);
  });
  let signals = 0;
  for (const sig of [ 'SIGTERM', 'SIGINT' ]) {
    process.on(sig, () => {
      if (++signals > 1) process.exit(sig === 'SIGTERM' ? 143 : 130); // a second signal: no more waiting
      onSignal(sig);
    });
  }
}

// When stdin ends (the Python side closed it, or died), call onEof once.
function watchStdin(onEof) {
  process.stdin.on('error', () => onEof());
  process.stdin.on('end', () => onEof());
  process.stdin.on('close', () => onEof());
  process.stdin.resume();
}

function sha256(buf) {
  return crypto.createHash('sha256').update(buf).digest('hex');
}

function sleep(ms, isStopped) {
  return new Promise(resolve => {
    const started = Date.now();
    const tick = () => {
      if (isStopped && isStopped()) return resolve();
      const left = ms - (Date.now() - started);
      if (left <= 0) return resolve();
      setTimeout(tick, Math.min(left, 50));
    };
    tick();
  });
}

// Resolve with true when promise settles within ms, false otherwise (never rejects).
function within(promise, ms) {
  let timer;
  const timeout = new Promise(resolve => { timer = setTimeout(() => resolve(false), ms); });
  return Promise.race([ promise.then(() => true, err => { logError('close', err); return true; }), timeout ])
    .finally(() => clearTimeout(timer));
}

function errorInfo(err) {
  return { error: (err && err.message) || String(err), error_name: err && err.name, error_code: err && err.code };
}

module.exports = {
  stats, emit, fatal, logError, loadConfig, checkKeys, requireString, optionalInt, nameServers, clientOptions,
  loadAliOns, installHooks, watchStdin, sha256, sleep, within, errorInfo,
};
