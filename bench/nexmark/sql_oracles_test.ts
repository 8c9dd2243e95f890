import assert from "node:assert/strict";
import type { NexmarkEvent } from "../../connectors/datagen/nexmark/model.ts";
import { batchResult } from "./sql_oracles.ts";

const bid = (auction: number, bidder: number, price: number, dateTime: number): NexmarkEvent => ({
  type: "bid",
  bid: { auction, bidder, price, channel: "c", url: "u", dateTime, extra: "x" },
});

const auction = (id: number, dateTime: number, expires: number): NexmarkEvent => ({
  type: "auction",
  auction: {
    id,
    itemName: "i",
    description: "d",
    initialBid: 1,
    reserve: 2,
    dateTime,
    expires,
    seller: 9,
    category: 10,
    extra: "a",
  },
});

Deno.test("batchResult's q18 keeps the latest bid per bidder and auction", () => {
  const rows = batchResult("q18", [bid(1, 7, 10, 100), bid(1, 7, 5, 200), bid(2, 7, 3, 150)]);
  assert.deepEqual(rows, [[1, 7, 5, "c", "u", 200, "x"], [2, 7, 3, "c", "u", 150, "x"]]);
});

Deno.test("batchResult's q19 ranks each auction's 10 highest bids", () => {
  const events = Array.from({ length: 12 }, (_, i) => bid(1, 7, 100 + i, i));
  const rows = batchResult("q19", events)!;
  assert.equal(rows.length, 10);
  assert.deepEqual(rows[0], [1, 7, 111, "c", "u", 11, "x", 1]);
  assert.deepEqual(rows[9], [1, 7, 102, "c", "u", 2, "x", 10]);
});

Deno.test("batchResult's q9 takes the highest bid in the auction's interval, the earliest of equal prices", () => {
  const rows = batchResult("q9", [
    auction(1, 10, 20),
    bid(1, 7, 50, 12),
    bid(1, 8, 50, 11),
    bid(1, 9, 99, 21), // after expires
  ]);
  assert.deepEqual(rows, [[1, "i", "d", 1, 2, 10, 20, 9, 10, "a", 1, 8, 50, 11, "x"]]);
});

Deno.test("batchResult's q15 counts bids and distinct bidders and auctions per day and price rank", () => {
  const day = Date.UTC(2026, 0, 1);
  const rows = batchResult("q15", [
    bid(1, 7, 500, day),
    bid(1, 7, 50_000, day + 1),
    bid(2, 8, 5_000_000, day + 2),
  ]);
  assert.deepEqual(rows, [["2026-01-01", 3, 1, 1, 1, 2, 1, 1, 1, 2, 1, 1, 1]]);
});

Deno.test("batchResult has none for q12 and the queries with a DataStream version", () => {
  assert.equal(batchResult("q12", []), undefined);
  assert.equal(batchResult("q5", []), undefined);
});
