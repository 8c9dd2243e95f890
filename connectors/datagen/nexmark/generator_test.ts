import assert from "node:assert/strict";
import { NexmarkGenerator } from "./generator.ts";
import type { Auction, Bid, NexmarkEvent, Person } from "./model.ts";

const N = 100_000;
const generator = new NexmarkGenerator();
const events: NexmarkEvent[] = Array.from({ length: N }, (_, n) => generator.event(n));
const people: Person[] = events.flatMap((e) => e.type === "person" ? [e.person] : []);
const auctions: Auction[] = events.flatMap((e) => e.type === "auction" ? [e.auction] : []);
const bids: Bid[] = events.flatMap((e) => e.type === "bid" ? [e.bid] : []);

/** Beam's `lastBase0PersonId` / `lastBase0AuctionId`, re-derived for the checks. */
const lastPerson = (n: number) => Math.floor(n / 50);
const lastAuction = (n: number) => {
  const r = n % 50;
  return r === 0 ? 3 * Math.floor(n / 50) - 1 : 3 * Math.floor(n / 50) + Math.min(r - 1, 2);
};

/**
 * The expected share of events that pick the hot id, and its standard error:
 * per event, `1 - 1/ratio` plus `1/ratio` times the chance that the uniform
 * pick among `size` ids lands on the hot one.
 */
function expectedShare(picks: { size: number; hotInRange: boolean }[], ratio: number) {
  let sum = 0;
  let variance = 0;
  for (const { size, hotInRange } of picks) {
    const p = 1 - 1 / ratio + (hotInRange ? 1 / ratio / size : 0);
    sum += p;
    variance += p * (1 - p);
  }
  return { share: sum / picks.length, sd: Math.sqrt(variance) / picks.length };
}

Deno.test("NexmarkGenerator mixes people, auctions and bids 1:3:46 by n % 50", () => {
  assert.equal(people.length, N * 0.02);
  assert.equal(auctions.length, N * 0.06);
  assert.equal(bids.length, N * 0.92);
  for (let n = 0; n < 200; n++) assert.equal(generator.kind(n), events[n]!.type, `event ${n}`);
  assert.deepEqual([0, 1, 3, 4, 49, 50].map((n) => generator.kind(n)), [
    "person",
    "auction",
    "auction",
    "bid",
    "bid",
    "person",
  ]);
});

Deno.test("NexmarkGenerator numbers people and auctions from 1000 in event order, categories 10..14", () => {
  assert.deepEqual(people.map((p) => p.id), people.map((_, i) => 1000 + i));
  assert.deepEqual(auctions.map((a) => a.id), auctions.map((_, i) => 1000 + i));
  assert.deepEqual([...new Set(auctions.map((a) => a.category))].sort(), [10, 11, 12, 13, 14]);
  events.forEach((e, n) => {
    if (e.type === "bid") {
      assert.ok(e.bid.auction >= 1000 && e.bid.auction <= 1000 + lastAuction(n) + 10, `bid ${n}`);
      assert.ok(e.bid.bidder >= 1000 && e.bid.bidder <= 1000 + lastPerson(n) + 10, `bid ${n}`);
    } else if (e.type === "auction") {
      assert.ok(e.auction.seller >= 1000 && e.auction.seller <= 1000 + lastPerson(n) + 10);
    }
  });
});

Deno.test("NexmarkGenerator picks hot auctions, bidders and sellers at Beam's rates", async (t) => {
  const bidEvents = events.flatMap((e, n) => e.type === "bid" ? [{ n, bid: e.bid }] : []);
  const auctionEvents = events.flatMap((e, n) => e.type === "auction" ? [{ n, a: e.auction }] : []);
  const check = (
    name: string,
    hits: number,
    total: number,
    expected: { share: number; sd: number },
  ) => {
    const share = hits / total;
    assert.ok(
      Math.abs(share - expected.share) <= 4 * expected.sd + 1e-3,
      `${name}: share ${share}, expected ${expected.share} ± ${4 * expected.sd}`,
    );
  };
  await t.step("bids on the hot auction (1 - 1/2)", () => {
    const hot = (n: number) => Math.floor(lastAuction(n) / 100) * 100;
    const hits = bidEvents.filter(({ n, bid }) => bid.auction - 1000 === hot(n)).length;
    const expected = expectedShare(
      bidEvents.map(({ n }) => {
        const max = lastAuction(n);
        const min = Math.max(max - 100, 0);
        return { size: max - min + 11, hotInRange: hot(n) >= min };
      }),
      2,
    );
    assert.ok(Math.abs(expected.share - 0.5045) < 0.002, `derived share ${expected.share}`);
    check("hot auctions", hits, bidEvents.length, expected);
  });
  const personPick = (n: number, hot: number) => {
    const numPeople = lastPerson(n) + 1;
    const active = Math.min(numPeople, 1000);
    return { size: active + 10, hotInRange: hot >= numPeople - active };
  };
  await t.step("bids by the hot bidder (1 - 1/4)", () => {
    const hot = (n: number) => Math.floor(lastPerson(n) / 100) * 100 + 1;
    const hits = bidEvents.filter(({ n, bid }) => bid.bidder - 1000 === hot(n)).length;
    check(
      "hot bidders",
      hits,
      bidEvents.length,
      expectedShare(bidEvents.map(({ n }) => personPick(n, hot(n))), 4),
    );
  });
  await t.step("auctions by the hot seller (1 - 1/4)", () => {
    const hot = (n: number) => Math.floor(lastPerson(n) / 100) * 100;
    const hits = auctionEvents.filter(({ n, a }) => a.seller - 1000 === hot(n)).length;
    check(
      "hot sellers",
      hits,
      auctionEvents.length,
      expectedShare(auctionEvents.map(({ n }) => personPick(n, hot(n))), 4),
    );
  });
  await t.step("with hotAuctionRatio 1, no bid goes to the hot auction by choice", () => {
    const cold = new NexmarkGenerator({ hotAuctionRatio: 1 });
    let hits = 0;
    let total = 0;
    for (let n = 10_000; n < 30_000; n++) {
      const e = cold.event(n);
      if (e.type !== "bid") continue;
      total++;
      if (e.bid.auction - 1000 === Math.floor(lastAuction(n) / 100) * 100) hits++;
    }
    assert.ok(hits / total < 0.02, `share ${hits / total}`);
  });
});

Deno.test("NexmarkGenerator prices are log-uniform cents in [100, 100_000_000]", () => {
  const prices = [...bids.map((b) => b.price), ...auctions.map((a) => a.initialBid)];
  for (const p of prices) assert.ok(Number.isInteger(p) && p >= 100 && p <= 100_000_000, `${p}`);
  for (let k = 1; k < 10; k++) {
    const below = prices.filter((p) => Math.log10(p / 100) < 0.6 * k).length / prices.length;
    assert.ok(Math.abs(below - k / 10) < 0.01, `decile ${k}: ${below}`);
  }
  for (const a of auctions) assert.ok(a.reserve > a.initialBid, `auction ${a.id}`);
});

Deno.test("NexmarkGenerator pads people, auctions and bids to 200, 500 and 100 bytes on average", () => {
  // Beam's sizeInBytes: 8 bytes per number, 1 per character; bids' channel and url not counted.
  const personSize = (p: Person) =>
    16 + p.name.length + p.emailAddress.length + p.creditCard.length + p.city.length +
    p.state.length + p.extra.length;
  const auctionSize = (a: Auction) =>
    56 + a.itemName.length + a.description.length + a.extra.length;
  const bidSize = (b: Bid) => 32 + b.extra.length;
  const mean = <T>(xs: T[], f: (x: T) => number) => xs.reduce((s, x) => s + f(x), 0) / xs.length;
  for (
    const [name, got, want] of [
      ["person", mean(people, personSize), 200],
      ["auction", mean(auctions, auctionSize), 500],
      ["bid", mean(bids, bidSize), 100],
    ] as const
  ) {
    assert.ok(Math.abs(got - want) / want < 0.05, `${name}: ${got} bytes on average`);
  }
  const small = new NexmarkGenerator({ avgBidByteSize: 10 }).event(4);
  assert.ok(small.type === "bid" && small.bid.extra === "");
});

Deno.test("NexmarkGenerator event times step by interEventDelayUs from baseTimeMs", () => {
  const base = Date.UTC(2026, 0, 1);
  assert.equal(events[0]!.type === "person" && events[0]!.person.dateTime, base);
  const timeOf = (e: NexmarkEvent) =>
    e.type === "person"
      ? e.person.dateTime
      : e.type === "auction"
      ? e.auction.dateTime
      : e.bid.dateTime;
  assert.equal(timeOf(events[999]!), base);
  assert.equal(timeOf(events[1000]!), base + 1);
  assert.equal(timeOf(events[99_999]!), base + 99);
  const slow = new NexmarkGenerator({ baseTimeMs: 5_000, interEventDelayUs: 250 });
  assert.deepEqual([0, 3, 4, 7, 8, 4000].map((n) => timeOf(slow.event(n))), [
    5000,
    5000,
    5001,
    5001,
    5002,
    6000,
  ]);
  for (const a of auctions) assert.ok(a.expires > a.dateTime, `auction ${a.id}`);
});

Deno.test("NexmarkGenerator.event(n) is a pure function of (config, n)", () => {
  const again = new NexmarkGenerator();
  for (const n of [99_999, 4, 0, 50_001, 12_345, 1, 3]) {
    assert.deepEqual(again.event(n), events[n], `event ${n}`);
    assert.deepEqual(generator.event(n), events[n], `event ${n} twice`);
  }
  const big = 2 ** 40 + 7;
  assert.deepEqual(again.event(big), generator.event(big));
  const other = new NexmarkGenerator({ seed: 1 });
  assert.notDeepEqual(other.event(4), events[4]);
  assert.notDeepEqual(events[4], events[5]);
});

Deno.test("NexmarkGenerator rejects bad knobs and event numbers", () => {
  assert.throws(
    () => new NexmarkGenerator({ hotAuctionRatio: 0 }),
    /'hotAuctionRatio' must be an integer >= 1: current value is 0/,
  );
  assert.throws(() => new NexmarkGenerator({ interEventDelayUs: 0 }), /interEventDelayUs/);
  assert.throws(() => new NexmarkGenerator({ seed: 0.5 }), /'seed'/);
  assert.throws(() => generator.event(-1), /event -1/);
  assert.throws(() => generator.event(1.5), RangeError);
});
