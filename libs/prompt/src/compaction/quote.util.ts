/** Text as a Markdown block quote, line by line, as the summary prompt quotes what people wrote. */
export function quoteBlock(text: string): string {
  return text
    .split('\n')
    .map((line) => `> ${line}`)
    .join('\n');
}
