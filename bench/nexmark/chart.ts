/**
 * A hand-written SVG bar chart of the Nexmark results: per query, the
 * engine's events per CPU second beside the hand-written baseline's, on a
 * linear scale, with the values written on the bars and the ratio under
 * the query's name.
 *
 * @module
 */

/** One query's bars. */
export interface ChartRow {
  /** The query's name (the group's label). */
  readonly query: string;
  /** Engine events per CPU second. */
  readonly engine: number;
  /** Baseline events per CPU second. */
  readonly baseline: number;
  /** Engine / baseline, as the harness computed it (a median of per-round ratios). */
  readonly ratio: number;
}

const escape = (s: string) =>
  s.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");

const millions = (v: number) => `${(v / 1e6).toFixed(2)}M`;

/**
 * The chart as an SVG document (width 120 px per query + margins, height
 * 335 px plus 16 px per title line after the first).
 * @param rows one group of bars each, left to right.
 * @param title the lines above the bars.
 * @throws {RangeError} when `rows` is empty.
 */
export function renderChart(rows: readonly ChartRow[], title: readonly string[]): string {
  if (rows.length === 0) throw new RangeError("renderChart needs at least one row: got none");
  const left = 60;
  const top = 24 + 16 * Math.max(title.length, 1);
  const plotH = 220;
  const group = 120;
  const bar = 40;
  const width = left + group * rows.length + 20;
  const height = top + plotH + 75;
  const max = Math.max(...rows.flatMap((r) => [r.engine, r.baseline]), 1);
  const y = (v: number) => top + plotH - (v / max) * plotH;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" ` +
    `viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    ...title.map((line, i) =>
      `<text x="${left}" y="${20 + 16 * i}" font-size="13">${escape(line)}</text>`
    ),
    `<line x1="${left}" y1="${top + plotH}" x2="${width - 10}" y2="${
      top + plotH
    }" stroke="black"/>`,
  ];
  for (let i = 0; i <= 4; i++) {
    const v = (max * i) / 4;
    parts.push(
      `<text x="${left - 6}" y="${y(v) + 4}" text-anchor="end">${millions(v)}</text>`,
      `<line x1="${left}" y1="${y(v)}" x2="${width - 10}" y2="${y(v)}" stroke="#ddd"/>`,
    );
  }
  rows.forEach((r, i) => {
    const x0 = left + i * group + 15;
    for (const [k, v, color] of [[0, r.engine, "#3b6ea5"], [1, r.baseline, "#c8a23c"]] as const) {
      const x = x0 + k * (bar + 5);
      parts.push(
        `<rect x="${x}" y="${y(v)}" width="${bar}" height="${
          top + plotH - y(v)
        }" fill="${color}"/>`,
        `<text x="${x + bar / 2}" y="${y(v) - 4}" text-anchor="middle">${millions(v)}</text>`,
      );
    }
    parts.push(
      `<text x="${x0 + bar + 2}" y="${top + plotH + 16}" text-anchor="middle">${escape(r.query)} (${
        (100 * r.ratio).toFixed(0)
      }%)</text>`,
    );
  });
  const ly = top + plotH + 36;
  parts.push(
    `<rect x="${left}" y="${ly}" width="12" height="12" fill="#3b6ea5"/>`,
    `<text x="${left + 16}" y="${
      ly + 10
    }">Weir engine, events per CPU second (exactly-once sink)</text>`,
    `<rect x="${left}" y="${ly + 14}" width="12" height="12" fill="#c8a23c"/>`,
    `<text x="${left + 16}" y="${ly + 24}">hand-written loop, events per CPU second; ` +
      `(n%): engine / loop, median of the rounds' ratios</text>`,
    `</svg>`,
  );
  return parts.join("\n") + "\n";
}
