/** The Prometheus text format as series -> value (`name{labels}` as written -> its number): enough for tests that read a scrape. */
export function parseScrape(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    out.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return out;
}
