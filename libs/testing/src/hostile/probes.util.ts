import { readFileSync } from 'node:fs';
import { PORTAL_APPS, type PortalApp, type RunningPortal } from '../e2e/portal.harness';

/** Resident memory of a process from /proc/<pid>/status, in MB: now (VmRSS) and its peak (VmHWM). */
export function processMemoryMb(pid: number): { rssMb: number; peakMb: number } | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
    return { rssMb: Math.round(kb('VmRSS') / 1024), peakMb: Math.round(kb('VmHWM') / 1024) };
  } catch {
    return null;
  }
}

export interface HealthWatch {
  /** Probes that did not answer 200 within the timeout, with when and what. */
  failures: { app: PortalApp; at: number; what: string }[];
  /** Probes sent. */
  probes: number;
  /** Highest VmRSS sampled per service, MB. */
  maxRssMb: Partial<Record<PortalApp, number>>;
  /** Services whose process id changed or went away while watched. */
  exited: PortalApp[];
  stop(): Promise<void>;
}

/**
 * Probes every service's `/health/ready` every `intervalMs` (each probe given `timeoutMs`, so an
 * event loop held by a hostile file shows up as a failure) and samples each process's memory.
 */
export function watchHealth(
  portal: RunningPortal,
  options: { intervalMs?: number; timeoutMs?: number; apps?: readonly PortalApp[] } = {},
): HealthWatch {
  const apps = options.apps ?? PORTAL_APPS;
  const pids = new Map(apps.map((app) => [app, portal.pid(app)]));
  const watch: HealthWatch = {
    failures: [],
    probes: 0,
    maxRssMb: {},
    exited: [],
    stop: async () => undefined,
  };
  let running = true;
  const round = async () => {
    await Promise.all(
      apps.map(async (app) => {
        const pid = portal.pid(app);
        if (pid === undefined || pid !== pids.get(app)) {
          if (!watch.exited.includes(app)) watch.exited.push(app);
          return;
        }
        const memory = processMemoryMb(pid);
        if (memory) watch.maxRssMb[app] = Math.max(watch.maxRssMb[app] ?? 0, memory.rssMb);
        watch.probes++;
        const what = await fetch(portal.healthURL(app), {
          signal: AbortSignal.timeout(options.timeoutMs ?? 5000),
        }).then(
          async (res) => (res.status === 200 ? null : `HTTP ${res.status} ${await res.text()}`),
          (err: Error) => `${err.name}: ${err.message}`,
        );
        if (what) watch.failures.push({ app, at: Date.now(), what });
      }),
    );
  };
  const loop = (async () => {
    while (running) {
      await round();
      await new Promise((r) => setTimeout(r, options.intervalMs ?? 1000));
    }
  })();
  watch.stop = async () => {
    running = false;
    await loop;
    await round();
  };
  return watch;
}

/** Counts of `values`, as `{ value: count }` sorted by value. */
export function tally<T extends string | number>(values: T[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const v of [...values].sort()) counts[String(v)] = (counts[String(v)] ?? 0) + 1;
  return counts;
}

/** A plain-text table: a header row, a rule, the rows; columns padded to fit. */
export function textTable(header: string[], rows: (string | number)[][]): string {
  const cells = [header, ...rows.map((r) => r.map(String))];
  const widths = header.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) =>
    r
      .map((c, i) => (c ?? '').padEnd(widths[i]))
      .join('  ')
      .trimEnd();
  return [line(cells[0]), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)].join(
    '\n',
  );
}
