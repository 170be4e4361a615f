/** A few lines instead of a framework: build an element, name things, ask about motion. */

type Attrs = Record<string, string | number | boolean | null | undefined | EventListener>;
type Child = Node | string | null | undefined | false;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (typeof value === 'function') el.addEventListener(name.replace(/^on/, ''), value);
    else if (name === 'class') el.className = String(value);
    else if (value === true) el.setAttribute(name, '');
    else el.setAttribute(name, String(value));
  }
  for (const child of children) {
    if (child !== null && child !== undefined && child !== false) el.append(child);
  }
  return el;
}

let ids = 0;
export function uid(prefix: string): string {
  return `${prefix}-${++ids}`;
}

let reducedMotion: MediaQueryList | null = null;

/** The reader asked for less motion: text shows as it arrives, nothing blurs or breathes. */
export function prefersReducedMotion(): boolean {
  reducedMotion ??= window.matchMedia('(prefers-reduced-motion: reduce)');
  return reducedMotion.matches;
}
