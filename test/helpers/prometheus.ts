/** A sample of the Prometheus text exposition format: name, labels, value. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/**
 * Parses the Prometheus text format (version 0.0.4) as a scraper does: comments and
 * blank lines skipped, label values unescaped. Throws on a malformed line, so a test
 * also checks the exposition is valid.
 */
export function parsePrometheusText(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim() || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+\d+)?$/.exec(line);
    if (!match) throw new Error(`malformed metrics line: ${line}`);
    const labels: Record<string, string> = {};
    const labelText = match[3] ?? '';
    const labelRe = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)/g;
    let consumed = 0;
    for (let m = labelRe.exec(labelText); m; m = labelRe.exec(labelText)) {
      labels[m[1]!] = m[2]!.replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
      consumed = labelRe.lastIndex;
    }
    if (consumed !== labelText.length) throw new Error(`malformed labels: ${line}`);
    const value = match[4] === '+Inf' ? Infinity : match[4] === '-Inf' ? -Infinity : Number(match[4]);
    // prom-client writes a NaN gauge (the event-loop lag before its first sample) as "Nan".
    if (Number.isNaN(value) && !/^nan$/i.test(match[4]!)) throw new Error(`malformed value: ${line}`);
    samples.push({ name: match[1]!, labels, value });
  }
  return samples;
}

/** Sum of the samples named `name` whose labels include `labels`. */
export function metricValue(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  return samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
}
