/**
 * The deterministic Nexmark event generator, after Beam's
 * `org.apache.beam.sdk.nexmark.sources.generator` (`GeneratorConfig`,
 * `NexmarkGenerator`, `model/PersonGenerator`, `AuctionGenerator`,
 * `BidGenerator`, `PriceGenerator`, `StringsGenerator`) and Flink's
 * `nexmark-flink` generator (bid channels and urls).
 *
 * ## Design
 *
 * Event *n* (0-based, Beam's event id with `firstEventId = 0`) is a pure
 * function of the config and *n*: its randomness comes from a small PRNG
 * (mulberry32) seeded with `hash(seed, n)`, as Beam seeds a
 * `java.util.Random` with the event id. So a replay after a restore, or any
 * split of the event numbers over subtasks, regenerates identical events.
 *
 * - Kind: `n % 50` < 1 is a person, < 4 an auction, else a bid (Beam's
 *   proportions 1:3:46).
 * - Ids: the person (auction) of epoch `n / 50` has base-0 id
 *   `epoch * 1 + offset` (`epoch * 3 + offset`), plus 1000 (Beam's
 *   `lastBase0PersonId`, `lastBase0AuctionId`, `FIRST_PERSON_ID`,
 *   `FIRST_AUCTION_ID`). Categories are 10..14.
 * - Hot keys: with probability `1 - 1/hotAuctionRatio` a bid goes to the
 *   first auction of the current batch of 100 auctions, else to a random
 *   auction among the last `numInFlightAuctions` (plus 10 ahead); likewise
 *   hot bidders (`hotBiddersRatio`, the second person of the current batch of
 *   100) and hot sellers (`hotSellersRatio`, the first person of it); other
 *   people are drawn among the last `numActivePeople` (plus 10 ahead).
 * - Prices: `round(10^(6u) * 100)` cents for uniform `u` in [0, 1): from
 *   $1 to $1M, log-uniform (Beam's `PriceGenerator`).
 * - Event time: `baseTimeMs + floor(n * interEventDelayUs / 1000)` ms.
 * - Sizes: `extra` pads an event to the configured average size, counted as
 *   Beam's `sizeInBytes` does: 8 bytes per number, 1 byte per character
 *   (all strings are ASCII). Bids' `channel` and `url` are Flink's addition
 *   to Beam's bid and, as in Flink's `BidGenerator`, are not counted (they
 *   add about 70 bytes).
 *
 * Speed: no allocation per event but the event and its strings; `extra`,
 * item names and descriptions are slices of pools of random letters built
 * once per generator; channels and urls are built once per generator.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { NexmarkGenerator } from "./generator.ts";
 *
 * const generator = new NexmarkGenerator({ seed: 7 });
 * assert.equal(generator.kind(0), "person");
 * assert.equal(generator.kind(1), "auction");
 * assert.equal(generator.kind(4), "bid");
 * const person = generator.event(50);
 * assert.ok(person.type === "person" && person.person.id === 1001);
 * assert.deepEqual(generator.event(123), new NexmarkGenerator({ seed: 7 }).event(123));
 * ```
 *
 * @module
 */

import type { Auction, Bid, NexmarkEvent, Person } from "./model.ts";

/** Beam's `personProportion`, `auctionProportion`, `bidProportion` and their sum. */
const PERSON_PROPORTION = 1;
const AUCTION_PROPORTION = 3;
const TOTAL_PROPORTION = 50;
/** Beam's `GeneratorConfig.FIRST_PERSON_ID`, `FIRST_AUCTION_ID`, `FIRST_CATEGORY_ID`. */
const FIRST_PERSON_ID = 1000;
const FIRST_AUCTION_ID = 1000;
const FIRST_CATEGORY_ID = 10;
/** Beam's `AuctionGenerator.NUM_CATEGORIES`. */
const NUM_CATEGORIES = 5;
/** Beam's `PERSON_ID_LEAD` and `AUCTION_ID_LEAD`: ids picked up to this far ahead. */
const PERSON_ID_LEAD = 10;
const AUCTION_ID_LEAD = 10;
/** Beam's `HOT_SELLER_RATIO`, `HOT_AUCTION_RATIO`, `HOT_BIDDER_RATIO`: the batch size of hot keys. */
const HOT_BATCH = 100;
/** Flink's `HOT_CHANNELS_RATIO` and `CHANNELS_NUMBER`. */
const HOT_CHANNELS_RATIO = 2;
const CHANNELS_NUMBER = 10_000;
const HOT_CHANNELS = ["Google", "Facebook", "Baidu", "Apple"] as const;
/** Beam's `StringsGenerator.MIN_STRING_LENGTH`. */
const MIN_STRING_LENGTH = 3;

const US_STATES = ["AZ", "CA", "ID", "OR", "WA", "WY"] as const;
const US_CITIES = [
  "Phoenix",
  "Los Angeles",
  "San Francisco",
  "Boise",
  "Portland",
  "Bend",
  "Redmond",
  "Seattle",
  "Kent",
  "Cheyenne",
] as const;
const FIRST_NAMES = [
  "Peter",
  "Paul",
  "Luke",
  "John",
  "Saul",
  "Vicky",
  "Kate",
  "Julie",
  "Sarah",
  "Deiter",
  "Walter",
] as const;
const LAST_NAMES = [
  "Shultz",
  "Abrams",
  "Spencer",
  "White",
  "Bartels",
  "Walton",
  "Smith",
  "Jones",
  "Noris",
] as const;
const FULL_NAMES: readonly string[] = FIRST_NAMES.flatMap((f) =>
  LAST_NAMES.map((l) => `${f} ${l}`)
);
const FOUR_DIGITS: readonly string[] = Array.from(
  { length: 10_000 },
  (_, i) => String(i).padStart(4, "0"),
);

const TWO_32 = 4294967296;
const TWO_53 = 9007199254740992;
/** Characters in each pool of random letters (at least twice the longest slice taken). */
const MIN_POOL = 1 << 16;
/** Salts that keep the per-event, per-channel and pool streams apart. */
const CHANNEL_SALT = 0x6a09e667;
const POOL_SALT = 0xbb67ae85;

/**
 * The generator's knobs, after Beam's `NexmarkConfiguration`. All optional;
 * the defaults are Beam's, but for the event time (see below).
 */
export interface NexmarkConfig {
  /** Seed of all randomness, an integer (default 0). */
  readonly seed?: number;
  /** Event time of event 0, ms since the epoch (default `Date.UTC(2026, 0, 1)`). */
  readonly baseTimeMs?: number;
  /** Event time between two events, µs (> 0, default 1: a million events per second of event time). */
  readonly interEventDelayUs?: number;
  /** A bid is on a hot auction with probability `1 - 1/hotAuctionRatio` (integer >= 1, default 2). */
  readonly hotAuctionRatio?: number;
  /** An auction is by a hot seller with probability `1 - 1/hotSellersRatio` (integer >= 1, default 4). */
  readonly hotSellersRatio?: number;
  /** A bid is by a hot bidder with probability `1 - 1/hotBiddersRatio` (integer >= 1, default 4). */
  readonly hotBiddersRatio?: number;
  /** Average size of a person, bytes (see the module docs for how it counts; default 200). */
  readonly avgPersonByteSize?: number;
  /** Average size of an auction, bytes (default 500). */
  readonly avgAuctionByteSize?: number;
  /** Average size of a bid, bytes, not counting `channel` and `url` (default 100). */
  readonly avgBidByteSize?: number;
  /** People that bids and auctions pick from: the last this many (integer >= 1, default 1000). */
  readonly numActivePeople?: number;
  /** Auctions that bids pick from: the last this many (integer >= 1, default 100). */
  readonly numInFlightAuctions?: number;
}

/** Beam's `lastBase0PersonId`: the base-0 id of the last person generated at or before event `n`. */
function lastBase0PersonId(n: number): number {
  const epoch = Math.floor(n / TOTAL_PROPORTION);
  let offset = n % TOTAL_PROPORTION;
  if (offset >= PERSON_PROPORTION) offset = PERSON_PROPORTION - 1;
  return epoch * PERSON_PROPORTION + offset;
}

/** Beam's `lastBase0AuctionId`: the base-0 id of the last auction at or before event `n` (-1: none). */
function lastBase0AuctionId(n: number): number {
  let epoch = Math.floor(n / TOTAL_PROPORTION);
  let offset = n % TOTAL_PROPORTION;
  if (offset < PERSON_PROPORTION) {
    epoch--;
    offset = AUCTION_PROPORTION - 1;
  } else if (offset >= PERSON_PROPORTION + AUCTION_PROPORTION) {
    offset = AUCTION_PROPORTION - 1;
  } else {
    offset -= PERSON_PROPORTION;
  }
  return epoch * AUCTION_PROPORTION + offset;
}

/** MurmurHash3's 32-bit finalizer. */
function mix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** A 32-bit hash of (`salt`, `n`) for a safe integer `n` >= 0. */
function hash(salt: number, n: number): number {
  const lo = n >>> 0;
  const hi = Math.floor(n / TWO_32) >>> 0;
  return mix32(Math.imul(lo ^ mix32(hi ^ salt), 0x9e3779b1) ^ salt);
}

/** Java's `Integer.reverse`, then `Math.abs`, as Flink's channel ids. */
function reversedBits(n: number): number {
  let r = 0;
  for (let i = 0; i < 32; i++) {
    r = (r << 1) | ((n >>> i) & 1);
  }
  return Math.abs(r | 0);
}

/**
 * Nexmark's events as a pure function of (config, event number): see the
 * module docs for the model.
 */
export class NexmarkGenerator {
  /** The seed. */
  readonly seed: number;
  /** Event time of event 0, ms since the epoch. */
  readonly baseTimeMs: number;
  /** Event time between two events, µs. */
  readonly interEventDelayUs: number;
  readonly #hotAuctionRatio: number;
  readonly #hotSellersRatio: number;
  readonly #hotBiddersRatio: number;
  readonly #avgPersonByteSize: number;
  readonly #avgAuctionByteSize: number;
  readonly #avgBidByteSize: number;
  readonly #numActivePeople: number;
  readonly #numInFlightAuctions: number;
  /** Beam's `numEventsForAuctions`: events until `numInFlightAuctions` more auctions exist. */
  readonly #eventsForAuctions: number;
  readonly #seedSalt: number;
  /** Random lowercase letters (Beam's `nextExactString`). */
  readonly #letters: string;
  /** Random lowercase letters and, one in 13, spaces (Beam's `nextString`). */
  readonly #spaced: string;
  readonly #channelNames: string[];
  readonly #channelUrls: string[];
  readonly #hotUrls: string[];
  /** The PRNG's state (mulberry32), a 32-bit integer. */
  #state = 0;

  /**
   * Creates a generator.
   * @param config see {@linkcode NexmarkConfig}.
   * @throws {RangeError} when a knob is out of range (naming it and its value).
   */
  constructor(config: NexmarkConfig = {}) {
    const seed = config.seed ?? 0;
    if (!Number.isSafeInteger(seed)) {
      throw new RangeError(
        `Cannot create a NexmarkGenerator as 'seed' must be a safe integer: current value is ${seed}`,
      );
    }
    const baseTimeMs = config.baseTimeMs ?? Date.UTC(2026, 0, 1);
    if (!Number.isSafeInteger(baseTimeMs)) {
      throw new RangeError(
        `Cannot create a NexmarkGenerator as 'baseTimeMs' must be a safe integer: current value is ${baseTimeMs}`,
      );
    }
    const delay = config.interEventDelayUs ?? 1;
    if (!(delay > 0 && Number.isFinite(delay))) {
      throw new RangeError(
        `Cannot create a NexmarkGenerator as 'interEventDelayUs' must be a positive number: current value is ${delay}`,
      );
    }
    const positive = (name: keyof NexmarkConfig, fallback: number, min: number): number => {
      const value = config[name] ?? fallback;
      if (!Number.isSafeInteger(value) || value < min) {
        throw new RangeError(
          `Cannot create a NexmarkGenerator as '${name}' must be an integer >= ${min}: current value is ${value}`,
        );
      }
      return value;
    };
    this.seed = seed;
    this.baseTimeMs = baseTimeMs;
    this.interEventDelayUs = delay;
    this.#hotAuctionRatio = positive("hotAuctionRatio", 2, 1);
    this.#hotSellersRatio = positive("hotSellersRatio", 4, 1);
    this.#hotBiddersRatio = positive("hotBiddersRatio", 4, 1);
    this.#avgPersonByteSize = positive("avgPersonByteSize", 200, 0);
    this.#avgAuctionByteSize = positive("avgAuctionByteSize", 500, 0);
    this.#avgBidByteSize = positive("avgBidByteSize", 100, 0);
    this.#numActivePeople = positive("numActivePeople", 1000, 1);
    this.#numInFlightAuctions = positive("numInFlightAuctions", 100, 1);
    this.#eventsForAuctions = Math.floor(
      (this.#numInFlightAuctions * TOTAL_PROPORTION) / AUCTION_PROPORTION,
    );
    this.#seedSalt = mix32((seed >>> 0) ^ mix32(Math.floor(seed / TWO_32) >>> 0));

    const longest = Math.ceil(
      1.2 * Math.max(this.#avgPersonByteSize, this.#avgAuctionByteSize, this.#avgBidByteSize),
    );
    const poolSize = Math.max(MIN_POOL, 2 * longest);
    this.#state = hash(this.#seedSalt ^ POOL_SALT, 0);
    this.#letters = this.#pool(poolSize, 0);
    this.#spaced = this.#pool(poolSize, 13);

    this.#hotUrls = HOT_CHANNELS.map(() => this.#baseUrl());
    this.#channelNames = new Array<string>(CHANNELS_NUMBER);
    this.#channelUrls = new Array<string>(CHANNELS_NUMBER);
    for (let i = 0; i < CHANNELS_NUMBER; i++) {
      this.#state = hash(this.#seedSalt ^ CHANNEL_SALT, i);
      let url = this.#baseUrl();
      if (this.#int(10) > 0) url = `${url}&channel_id=${reversedBits(i)}`;
      this.#channelNames[i] = `channel-${i}`;
      this.#channelUrls[i] = url;
    }
  }

  /** Just the kind of event `n`, without building it (Beam: by `n % 50`). */
  kind(n: number): NexmarkEvent["type"] {
    const offset = n % TOTAL_PROPORTION;
    return offset < PERSON_PROPORTION
      ? "person"
      : offset < PERSON_PROPORTION + AUCTION_PROPORTION
      ? "auction"
      : "bid";
  }

  /** The event time of event `n`: `baseTimeMs + floor(n * interEventDelayUs / 1000)` ms. */
  timestampOf(n: number): number {
    return this.baseTimeMs + Math.floor((n * this.interEventDelayUs) / 1000);
  }

  /**
   * Event number `n` (0-based) of the stream; pure: the same (config, `n`)
   * always give deep-equal events.
   * @throws {RangeError} when `n` is not a safe integer >= 0.
   */
  event(n: number): NexmarkEvent {
    if (!(n >= 0 && Number.isSafeInteger(n))) {
      throw new RangeError(
        `Cannot generate Nexmark event ${n}: the event number must be a safe integer >= 0`,
      );
    }
    this.#state = hash(this.#seedSalt, n);
    const offset = n % TOTAL_PROPORTION;
    const timestamp = this.timestampOf(n);
    if (offset >= PERSON_PROPORTION + AUCTION_PROPORTION) {
      return { type: "bid", bid: this.#bid(n, timestamp) };
    }
    if (offset >= PERSON_PROPORTION) {
      return { type: "auction", auction: this.#auction(n, timestamp) };
    }
    return { type: "person", person: this.#person(n, timestamp) };
  }

  #person(n: number, dateTime: number): Person {
    const id = lastBase0PersonId(n) + FIRST_PERSON_ID;
    const name = FULL_NAMES[this.#int(FULL_NAMES.length)]!;
    const emailAddress = `${this.#string(7)}@${this.#string(5)}.com`;
    const creditCard = `${FOUR_DIGITS[this.#int(10_000)]} ${FOUR_DIGITS[this.#int(10_000)]} ${
      FOUR_DIGITS[this.#int(10_000)]
    } ${FOUR_DIGITS[this.#int(10_000)]}`;
    const city = US_CITIES[this.#int(US_CITIES.length)]!;
    const state = US_STATES[this.#int(US_STATES.length)]!;
    const size = 16 + name.length + emailAddress.length + creditCard.length + city.length +
      state.length;
    const extra = this.#extra(size, this.#avgPersonByteSize);
    return { id, name, emailAddress, creditCard, city, state, dateTime, extra };
  }

  #auction(n: number, dateTime: number): Auction {
    const last = lastBase0AuctionId(n);
    const id = last + FIRST_AUCTION_ID;
    let seller: number;
    if (this.#int(this.#hotSellersRatio) > 0) {
      seller = Math.floor(lastBase0PersonId(n) / HOT_BATCH) * HOT_BATCH;
    } else {
      seller = this.#personId(n);
    }
    seller += FIRST_PERSON_ID;
    const category = FIRST_CATEGORY_ID + this.#int(NUM_CATEGORIES);
    const initialBid = this.#price();
    const horizonMs = this.timestampOf(n + this.#eventsForAuctions) - dateTime;
    const expires = dateTime + 1 + this.#long(Math.max(horizonMs * 2, 1));
    const itemName = this.#string(20);
    const description = this.#string(100);
    const reserve = initialBid + this.#price();
    const size = 56 + itemName.length + description.length;
    const extra = this.#extra(size, this.#avgAuctionByteSize);
    return {
      id,
      itemName,
      description,
      initialBid,
      reserve,
      dateTime,
      expires,
      seller,
      category,
      extra,
    };
  }

  #bid(n: number, dateTime: number): Bid {
    let auction: number;
    if (this.#int(this.#hotAuctionRatio) > 0) {
      auction = Math.floor(lastBase0AuctionId(n) / HOT_BATCH) * HOT_BATCH;
    } else {
      const max = lastBase0AuctionId(n);
      const min = Math.max(max - this.#numInFlightAuctions, 0);
      auction = min + this.#long(max - min + 1 + AUCTION_ID_LEAD);
    }
    auction += FIRST_AUCTION_ID;
    let bidder: number;
    if (this.#int(this.#hotBiddersRatio) > 0) {
      bidder = Math.floor(lastBase0PersonId(n) / HOT_BATCH) * HOT_BATCH + 1;
    } else {
      bidder = this.#personId(n);
    }
    bidder += FIRST_PERSON_ID;
    const price = this.#price();
    let channel: string;
    let url: string;
    if (this.#int(HOT_CHANNELS_RATIO) > 0) {
      const i = this.#int(HOT_CHANNELS.length);
      channel = HOT_CHANNELS[i]!;
      url = this.#hotUrls[i]!;
    } else {
      const i = this.#int(CHANNELS_NUMBER);
      channel = this.#channelNames[i]!;
      url = this.#channelUrls[i]!;
    }
    const extra = this.#extra(32, this.#avgBidByteSize);
    return { auction, bidder, price, channel, url, dateTime, extra };
  }

  /** Beam's `nextBase0PersonId`: one of the last `numActivePeople`, or up to 10 ahead. */
  #personId(n: number): number {
    const numPeople = lastBase0PersonId(n) + 1;
    const active = Math.min(numPeople, this.#numActivePeople);
    return numPeople - active + this.#long(active + PERSON_ID_LEAD);
  }

  /** Beam's `PriceGenerator.nextPrice`: cents, log-uniform in [100, 100_000_000]. */
  #price(): number {
    return Math.round(Math.pow(10, this.#double() * 6) * 100);
  }

  /** Beam's `nextString(maxLength)`: 3 to `maxLength - 1` letters or spaces, trimmed. */
  #string(maxLength: number): string {
    const length = MIN_STRING_LENGTH + this.#int(maxLength - MIN_STRING_LENGTH);
    const start = this.#int(this.#spaced.length - length + 1);
    return this.#spaced.slice(start, start + length).trim();
  }

  /** Beam's `nextExtra`: letters so the size averages `average` (±20%), or "" when already over. */
  #extra(size: number, average: number): string {
    if (size > average) return "";
    const wanted = average - size;
    const delta = Math.round(wanted * 0.2);
    const length = wanted - delta + (delta === 0 ? 0 : this.#int(2 * delta));
    const start = this.#int(this.#letters.length - length + 1);
    return this.#letters.slice(start, start + length);
  }

  /** Flink's `getBaseUrl`: `https://www.nexmark.com/<a>/<b>/<c>/item.htm?query=1`. */
  #baseUrl(): string {
    return `https://www.nexmark.com/${this.#underscored()}/${this.#underscored()}/${this.#underscored()}/item.htm?query=1`;
  }

  /** Beam's `nextString(random, 5, '_')`: 3 or 4 letters or underscores. */
  #underscored(): string {
    let length = MIN_STRING_LENGTH + this.#int(5 - MIN_STRING_LENGTH);
    let s = "";
    while (length-- > 0) {
      s += this.#int(13) === 0 ? "_" : String.fromCharCode(97 + this.#int(26));
    }
    return s;
  }

  /** `size` random characters: letters, and with `spaceOneIn` > 0, one in that many a space. */
  #pool(size: number, spaceOneIn: number): string {
    const codes = new Uint8Array(size);
    for (let i = 0; i < size; i++) {
      codes[i] = spaceOneIn > 0 && this.#int(spaceOneIn) === 0 ? 32 : 97 + this.#int(26);
    }
    return new TextDecoder().decode(codes);
  }

  /** The next 32 random bits, as an unsigned integer (mulberry32). */
  #next(): number {
    const s = (this.#state = (this.#state + 0x6d2b79f5) | 0);
    let t = Math.imul(s ^ (s >>> 15), s | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  }

  /** A uniform integer in [0, `bound`), `bound` in [1, 2^32]. */
  #int(bound: number): number {
    return Math.floor((this.#next() * bound) / TWO_32);
  }

  /** A uniform integer in [0, `bound`) for any safe `bound` >= 1 (Beam's `nextLong`). */
  #long(bound: number): number {
    return bound <= TWO_32 ? this.#int(bound) : Math.floor(this.#double() * bound);
  }

  /** A uniform double in [0, 1), 53 random bits (as Java's `nextDouble`). */
  #double(): number {
    return ((this.#next() >>> 5) * 67108864 + (this.#next() >>> 6)) / TWO_53;
  }
}
