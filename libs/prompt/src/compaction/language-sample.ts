import type { Limits } from '../limits';
import { cutText } from '../text-cut';
import { parseLeadingSlugs } from '../skills.util';
import { SUMMARY_SECTIONS } from './compaction.types';

/** The paragraphs quoted so the summary is written in the conversation's language. */

const RUNTIME_NOTE = /^\[[^\]\n]*\](\s|$)/;
const SUMMARY_SECTION = new RegExp(
  `^(#+\\s*(${SUMMARY_SECTIONS.join('|')})\\b|\\[?Summary of (turns|earlier conversation)\\b)`,
  'i',
);
const WORDS = new Intl.Segmenter('und', { granularity: 'word' });

function wordCount(text: string): number {
  let n = 0;
  for (const s of WORDS.segment(text)) if (s.isWordLike) n += 1;
  return n;
}

/** A paragraph as the sample quotes it, or null when the sample leaves it out. */
function sampleParagraph(paragraph: string, limits: Limits): string | null {
  let p = paragraph.trim();
  if (RUNTIME_NOTE.test(p) || SUMMARY_SECTION.test(p)) return null;
  const slugs = parseLeadingSlugs(p);
  p = (slugs.isCompact ? (slugs.compactInstructions ?? '') : slugs.rest).trim();
  if (p === '' || /^\/\S+$/.test(p)) return null;
  if (wordCount(p) < 3) return null;
  return cutText(p, limits.SUMMARY_PARAGRAPH_CHARS);
}

/**
 * The person's latest paragraphs (SUMMARY_LANGUAGE_PARAGRAPHS, each cut to SUMMARY_PARAGRAPH_CHARS),
 * oldest first, leaving out runtime notes, replayed summary sections, slash commands (leading
 * `/slug` tokens are removed; a paragraph that is only a command is dropped) and paragraphs of
 * fewer than three words.
 */
export function languageSample(texts: readonly string[], limits: Limits): string[] {
  const kept: string[] = [];
  // Newest first, stopping once the sample is full: a long history is not segmented into words.
  for (let i = texts.length - 1; i >= 0; i--) {
    for (const paragraph of texts[i].split(/\n\s*\n/).reverse()) {
      if (kept.length >= limits.SUMMARY_LANGUAGE_PARAGRAPHS) return kept.reverse();
      const quoted = sampleParagraph(paragraph, limits);
      if (quoted !== null) kept.push(quoted);
    }
  }
  return kept.reverse();
}
