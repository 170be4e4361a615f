// Preloaded by `npm run bench:turns -- --profile` into each service (NODE_OPTIONS=--require …;
// Node refuses --cpu-prof there): samples the process's CPU from SIGWINCH (sent when the measured
// runs start; Nest's shutdown hooks take SIGUSR2) to exit and writes
// <BENCH_CPU_PROFILE_DIR>/<app>-<pid>.cpuprofile when it exits.
const fs = require('node:fs');
const path = require('node:path');
const inspector = require('node:inspector');

const dir = process.env.BENCH_CPU_PROFILE_DIR;
if (dir) {
  const session = new inspector.Session();
  session.connect();
  session.post('Profiler.enable');
  let started = false;
  process.on('SIGWINCH', () => {
    if (!started) session.post('Profiler.start');
    started = true;
  });
  let written = false;
  const write = () => {
    if (written || !started) return;
    written = true;
    // A same-thread session answers synchronously, so the profile is written before the exit.
    session.post('Profiler.stop', (err, result) => {
      if (err || !result) return;
      const app = path.basename(path.dirname(path.dirname(process.argv[1] || 'node')));
      fs.writeFileSync(path.join(dir, `${app}-${process.pid}.cpuprofile`), JSON.stringify(result.profile));
    });
  };
  process.on('exit', write);
  // Nest's shutdown hooks close the app, remove their listener and raise SIGTERM again, which
  // would end the process without an 'exit' event: when this listener is the only one, write
  // the profile and exit. While the app's own listener is there, it decides.
  process.on('SIGTERM', () => {
    if (process.listenerCount('SIGTERM') > 1) return;
    write();
    process.exit(0);
  });
}
