import assert from "node:assert/strict";
import {
  formatBytes,
  formatCount,
  formatDuration,
  formatPercent,
  formatRate,
  formatTimestamp,
  formatWatermark,
  NO_WATERMARK,
} from "./format.ts";

Deno.test("formatDuration picks ms, s, minutes, hours and days", () => {
  assert.equal(formatDuration(0), "0 ms");
  assert.equal(formatDuration(850.4), "850 ms");
  assert.equal(formatDuration(1250), "1.25 s");
  assert.equal(formatDuration(12_340), "12.3 s");
  assert.equal(formatDuration(185_000), "3m 05s");
  assert.equal(formatDuration(7_380_000), "2h 03m");
  assert.equal(formatDuration(90_000_000), "1d 01h");
});

Deno.test("formatDuration answers a dash for -1, NaN and absent values", () => {
  assert.equal(formatDuration(-1), "-");
  assert.equal(formatDuration(NaN), "-");
  assert.equal(formatDuration(undefined), "-");
  assert.equal(formatDuration(null), "-");
});

Deno.test("formatBytes uses binary prefixes", () => {
  assert.equal(formatBytes(0), "0 B");
  assert.equal(formatBytes(1023), "1023 B");
  assert.equal(formatBytes(1536), "1.5 KiB");
  assert.equal(formatBytes(12.34 * 1024 * 1024), "12.3 MiB");
  assert.equal(formatBytes(300 * 1024 ** 3), "300 GiB");
  assert.equal(formatBytes(-1), "-");
});

Deno.test("formatCount and formatRate use SI suffixes", () => {
  assert.equal(formatCount(950), "950");
  assert.equal(formatCount(2.345), "2.35");
  assert.equal(formatCount(12_500), "12.5K");
  assert.equal(formatCount(3_210_000), "3.21M");
  assert.equal(formatCount(-4000), "-4K");
  assert.equal(formatRate(1500), "1.5K/s");
  assert.equal(formatRate(undefined), "-");
});

Deno.test("formatPercent rounds a ratio to a whole percentage", () => {
  assert.equal(formatPercent(0.237), "24%");
  assert.equal(formatPercent(1), "100%");
  assert.equal(formatPercent(undefined), "-");
});

Deno.test("formatTimestamp answers a dash for Flink's -1", () => {
  assert.equal(formatTimestamp(-1), "-");
  assert.match(formatTimestamp(Date.UTC(2026, 0, 2, 3, 4, 5)), /^2026-01-0\d \d\d:\d\d:05$/);
});

Deno.test("formatWatermark shows no watermark for Long.MIN_VALUE and UTC times otherwise", () => {
  assert.equal(formatWatermark(NO_WATERMARK), "No watermark");
  assert.equal(formatWatermark(undefined), "No watermark");
  assert.equal(formatWatermark("1767323045006"), "2026-01-02 03:04:05.006");
  assert.equal(formatWatermark("9223372036854775807"), "9223372036854775807");
});
