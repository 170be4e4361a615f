/**
 * Splits a text file into pages of at most `pageChars` characters. A page ends after the last
 * line break in its second half, else after the last white space there, else at the limit (never
 * inside a surrogate pair). The pages joined give the text back exactly.
 */
export function splitTextPages(text: string, pageChars: number): string[] {
  const pages: string[] = [];
  let rest = text;
  while (rest.length > pageChars) {
    const window = rest.slice(0, pageChars);
    const half = Math.floor(pageChars / 2);
    let cut = window.lastIndexOf('\n') + 1;
    if (cut <= half) cut = lastSpace(window) + 1;
    if (cut <= half) cut = isHighSurrogate(window.charCodeAt(pageChars - 1)) ? pageChars - 1 : pageChars;
    pages.push(rest.slice(0, cut));
    rest = rest.slice(cut);
  }
  if (rest.length > 0) pages.push(rest);
  return pages;
}

function lastSpace(text: string): number {
  for (let i = text.length - 1; i >= 0; i--) if (/\s/.test(text[i])) return i;
  return -1;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
