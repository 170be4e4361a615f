// Docker HEALTHCHECK: GET /health/ready of the service running in this container.
// `node healthcheck.js <url>` checks that URL; without one, the service is found from the running
// process's command line, so one image-wide HEALTHCHECK serves every service.
const fs = require('node:fs');
const http = require('node:http');

const HEALTH_PORTS = { 'turn-orchestrator': 3101, 'attachment-ingest': 3102, 'compaction-worker': 3103 };

function runningApp() {
  for (const pid of fs.readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    let cmdline = '';
    try {
      cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      continue;
    }
    const app = /dist\/apps\/([a-z-]+)\/src\/main\.js/.exec(cmdline);
    if (app) return app[1];
    if (cmdline.includes('dist/tools/migrate.js')) return 'migrate';
  }
  return process.env.PORTAL_APP;
}

function healthUrl(app) {
  if (app === 'gateway') return `http://127.0.0.1:${process.env.PORT || 3000}/health/ready`;
  if (HEALTH_PORTS[app])
    return `http://127.0.0.1:${process.env.HEALTH_PORT || HEALTH_PORTS[app]}/health/ready`;
  return null;
}

const url = process.argv[2] || healthUrl(runningApp());
// A one-shot migration has nothing to probe.
if (!url) process.exit(0);
const req = http.get(url, { timeout: 4000 }, (res) => {
  res.resume();
  process.exit(res.statusCode === 200 ? 0 : 1);
});
req.on('timeout', () => req.destroy(new Error('timeout')));
req.on('error', (err) => {
  console.error(`${url}: ${err.message}`);
  process.exit(1);
});
