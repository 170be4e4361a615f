// Preloaded by `npm run bench:turns` into the gateway and the orchestrator (NODE_OPTIONS=--require
// …): counts the writes each process makes to its sockets and pipes, by where they go. On this
// VM a socket write is a system call that also does the receiver's share of the loopback work, so
// writes per turn (round trips to Postgres and Redis, responses and stream events, log lines)
// are what the process's CPU per turn follows. SIGURG (ignored by default) writes the counts so
// far to <BENCH_IO_COUNT_DIR>/<pid>.json.
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const { URL } = require('node:url');

const dir = process.env.BENCH_IO_COUNT_DIR;
if (dir) {
  // The service's own settings name where Postgres and Redis are.
  const portOf = (url, fallback) => Number(url ? new URL(url).port : '') || fallback;
  const byPort = new Map([
    [portOf(process.env.DATABASE_URL, 5432), 'postgres'],
    [portOf(process.env.REDIS_URL, 6379), 'redis'],
  ]);
  const counts = {};
  const original = net.Socket.prototype._writeGeneric;
  // One call per write(2) or writev(2) (a corked batch, as pg sends a statement, is one).
  net.Socket.prototype._writeGeneric = function (writev, data, encoding, cb) {
    const where = this.remotePort === undefined ? 'pipes (logs)' : (byPort.get(this.remotePort) ?? 'http');
    counts[where] = (counts[where] ?? 0) + 1;
    return original.call(this, writev, data, encoding, cb);
  };
  // Loggers write to stdout by file descriptor (pino's sonic-boom), not through a socket.
  const writeSync = fs.writeSync;
  fs.writeSync = function (fd, ...rest) {
    if (fd === 1 || fd === 2) counts['pipes (logs)'] = (counts['pipes (logs)'] ?? 0) + 1;
    return writeSync.call(this, fd, ...rest);
  };
  process.on('SIGURG', () => {
    fs.writeFileSync(path.join(dir, `${process.pid}.json`), JSON.stringify(counts));
  });
}
