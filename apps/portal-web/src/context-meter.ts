import { h } from './dom';
import { formatNumber, t } from './i18n';

/**
 * How full the model's context is: the latest call's input tokens against the model's window, with
 * the point where the conversation is summarised marked on the bar.
 */
export class ContextMeter {
  readonly el = h('div', { class: 'context', role: 'meter', 'aria-valuemin': 0, hidden: true });
  private readonly fill = h('span', { class: 'context-fill' });
  private readonly mark = h('span', { class: 'context-mark' });
  private readonly label = h('span', { class: 'context-label' });

  constructor() {
    this.el.append(
      h('span', { class: 'context-bar', 'aria-hidden': 'true' }, this.fill, this.mark),
      this.label,
    );
  }

  show(used: number, window: number, compactAt: number): void {
    const share = Math.min(1, used / window);
    const percent = Math.round(share * 100);
    const at = Math.round(compactAt * 100);
    this.el.hidden = false;
    this.el.setAttribute('aria-valuemax', String(window));
    this.el.setAttribute('aria-valuenow', String(used));
    this.el.setAttribute(
      'aria-valuetext',
      t('context.meter', { used: formatNumber(used), window: formatNumber(window), percent, at }),
    );
    this.el.setAttribute('aria-label', t('context.label'));
    this.el.dataset.used = String(used);
    this.el.dataset.window = String(window);
    this.el.classList.toggle('near', share >= compactAt * 0.9);
    // CSSOM properties, not a style attribute: the page's CSP allows no inline style.
    this.fill.style.setProperty('width', `${share * 100}%`);
    this.mark.style.setProperty('left', `${compactAt * 100}%`);
    this.label.textContent = `${t('context.label')} ${percent} %`;
  }
}
