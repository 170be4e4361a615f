import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parser } from '@prometheus-io/lezer-promql';
import { GATEWAY_METRIC, METRIC } from '@portal/observability';
import { readYamlDocs, ROOT, type Doc } from './deploy.util';

const MONITORING = path.join(ROOT, 'k8s', 'components', 'monitoring');
const rule = readYamlDocs(path.join(MONITORING, 'prometheusrule.yaml'))[0];
const dashboard = JSON.parse(readFileSync(path.join(MONITORING, 'portal-dashboard.json'), 'utf8'));
const operations = readFileSync(path.join(ROOT, 'docs', 'operations.md'), 'utf8');

const alerts: Doc[] = rule.spec.groups.flatMap((g: Doc) => g.rules);
const panels: Doc[] = dashboard.panels.filter((p: Doc) => p.type !== 'row');
const queries: { where: string; expr: string }[] = [
  ...alerts.map((a) => ({ where: `alert ${a.alert}`, expr: a.expr as string })),
  ...panels.flatMap((p) =>
    p.targets.map((t: Doc) => ({ where: `panel "${p.title}"`, expr: t.expr as string })),
  ),
];

/** Where lezer's PromQL grammar could not parse the expression (empty: it parses). */
function syntaxErrors(expr: string): number[] {
  const errors: number[] = [];
  parser.parse(expr).iterate({
    enter: (node) => {
      if (node.type.isError) errors.push(node.from);
    },
  });
  return errors;
}

const SERIES_SUFFIX = /_(bucket|count|sum)$/;
const exported = new Set<string>([...Object.values(METRIC), ...Object.values(GATEWAY_METRIC)]);

/** The portal metrics an expression reads that no service exports. */
function unknownMetrics(expr: string): string[] {
  const names = expr.match(/\bportal_[a-z0-9_]+/g) ?? [];
  return names.filter((name) => !exported.has(name) && !exported.has(name.replace(SERIES_SUFFIX, '')));
}

/** GitHub's anchor of each heading in docs/operations.md. */
const anchors = new Set(
  [...operations.matchAll(/^#+\s+(.+)$/gm)].map((m) =>
    m[1]
      .toLowerCase()
      .replace(/[^a-z0-9 -]/g, '')
      .replace(/ /g, '-'),
  ),
);

describe('monitoring: alerts and dashboard', () => {
  it.each(queries.map((q) => [q.where, q.expr]))('%s is valid PromQL', (_where, expr) => {
    expect(syntaxErrors(expr)).toEqual([]);
  });

  it.each(queries.map((q) => [q.where, q.expr]))(
    '%s reads only metrics the services export',
    (_where, expr) => {
      expect(unknownMetrics(expr)).toEqual([]);
    },
  );

  it('the dashboard shows every metric the services export', () => {
    const shown = queries
      .filter((q) => q.where.startsWith('panel'))
      .map((q) => q.expr)
      .join('\n');
    expect([...exported].filter((name) => !shown.includes(name))).toEqual([]);
  });

  it('every alert has a severity, a summary, a description and a runbook section in docs/operations.md', () => {
    for (const alert of alerts) {
      expect(alert.labels?.severity).toMatch(/^(warning|critical)$/);
      expect(alert.annotations.summary).toBeTruthy();
      expect(alert.annotations.description).toBeTruthy();
      const [file, anchor] = String(alert.annotations.runbook).split('#');
      expect(file).toBe('docs/operations.md');
      expect([alert.alert, anchors.has(anchor)]).toEqual([alert.alert, true]);
    }
  });

  it('the dashboard reads its Prometheus from a variable, with unique panel ids', () => {
    expect(dashboard.templating.list).toContainEqual(
      expect.objectContaining({ name: 'datasource', type: 'datasource' }),
    );
    for (const panel of panels) expect(panel.datasource.uid).toBe('${datasource}');
    const ids = dashboard.panels.map((p: Doc) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('finds a broken expression and a misspelt metric', () => {
    expect(syntaxErrors('sum(rate(portal_turns_total[5m]) by')).not.toEqual([]);
    expect(unknownMetrics('rate(portal_turn_total[5m]) + rate(portal_job_wait_seconds_bucket[5m])')).toEqual([
      'portal_turn_total',
    ]);
  });
});
