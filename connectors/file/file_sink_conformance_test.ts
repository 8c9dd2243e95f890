/**
 * The exactly-once sink conformance suite against the file sink (JSON
 * lines, the default rolling policy, part files rolled at every checkpoint),
 * in a temporary directory removed afterwards. What a reader sees is the
 * records of the finished part files; hidden (in-progress and pending)
 * files are not read.
 *
 * @module
 */

import {
  type ConformanceRecord,
  exactlyOnceSinkConformanceSuite,
} from "../testing/exactly_once_sink_conformance.ts";
import { FileSink } from "./file_sink.ts";
import { jsonLinesEncoder } from "./row_encoders.ts";

async function readFinished(dir: string): Promise<ConformanceRecord[]> {
  const records: ConformanceRecord[] = [];
  for await (const entry of Deno.readDir(dir)) {
    if (!entry.isFile || entry.name.startsWith(".")) continue;
    const text = await Deno.readTextFile(`${dir}/${entry.name}`);
    for (const line of text.split("\n")) {
      if (line !== "") records.push(JSON.parse(line) as ConformanceRecord);
    }
  }
  return records;
}

exactlyOnceSinkConformanceSuite("FileSink", async () => {
  const dir = await Deno.makeTempDir({ prefix: "weir_file_sink_conformance_" });
  return {
    createSink: () =>
      new FileSink<ConformanceRecord>({
        path: dir,
        encoder: jsonLinesEncoder<ConformanceRecord>(),
      }),
    readCommitted: () => readFinished(dir),
    cleanup: () => Deno.remove(dir, { recursive: true }),
  };
});
