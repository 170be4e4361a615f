import DOMPurify from 'dompurify';
import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import json from 'highlight.js/lib/languages/json';
import python from 'highlight.js/lib/languages/python';
import sql from 'highlight.js/lib/languages/sql';
import typescript from 'highlight.js/lib/languages/typescript';
import xml from 'highlight.js/lib/languages/xml';
import { Marked } from 'marked';
import { copyText } from './clipboard';
import { h } from './dom';
import { t } from './i18n';

/**
 * A settled reply's Markdown as HTML (SPEC 9, formatted replies): marked parses it, DOMPurify
 * removes every script, handler and unsafe URL, and highlight.js colours code in a few common
 * languages (the core alone). Loaded only once the switch is on: the client stays small without it.
 */
for (const [name, language] of Object.entries({ bash, json, python, sql, typescript, xml })) {
  hljs.registerLanguage(name, language);
}
hljs.registerAliases(['sh', 'shell'], { languageName: 'bash' });
hljs.registerAliases(['ts', 'js', 'javascript'], { languageName: 'typescript' });
hljs.registerAliases(['html'], { languageName: 'xml' });

const marked = new Marked({ gfm: true, breaks: false, async: false });

const purify = DOMPurify(window);
// Links leave the portal in a new tab that cannot reach back into it.
purify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A') {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer');
  }
});

/** Tags a reply has no use for: pictures and media would load from anywhere, forms would post. */
const FORBID_TAGS = [
  'img',
  'picture',
  'video',
  'audio',
  'source',
  'form',
  'input',
  'button',
  'style',
  'iframe',
  'svg',
  'math',
];

export function renderMarkdown(el: HTMLElement, markdown: string): void {
  const html = marked.parse(markdown) as string;
  const fragment = purify.sanitize(html, {
    RETURN_DOM_FRAGMENT: true,
    FORBID_TAGS,
    FORBID_ATTR: ['style'],
  });
  for (const code of Array.from(fragment.querySelectorAll('pre > code'))) {
    const lang = /language-([\w-]+)/.exec(code.className)?.[1];
    if (lang && hljs.getLanguage(lang)) {
      // highlight.js escapes what it is given: its HTML holds only its own spans.
      code.innerHTML = hljs.highlight(code.textContent ?? '', { language: lang }).value;
      code.classList.add('hljs');
    }
    const pre = code.parentElement!;
    const source = code.textContent ?? '';
    const copy = h('button', {
      type: 'button',
      class: 'copy-code',
      'aria-label': t('block.copyCode'),
      'data-label': t('block.copyCode'),
    });
    copy.addEventListener('click', () => void copyText(source, copy));
    const wrap = h('div', { class: 'code-block' }, copy);
    pre.replaceWith(wrap);
    wrap.append(pre);
  }
  el.replaceChildren(fragment);
  el.classList.add('formatted');
}
