/**
 * Nexmark's data model (the Beam/Flink Nexmark benchmark): people who sell
 * in auctions, auctions, and bids, as one stream of events. Field names and
 * meanings follow Beam's `org.apache.beam.sdk.nexmark.model` and Flink's
 * `nexmark` repository. Times are event times in ms since the epoch; prices
 * are in cents.
 *
 * @module
 */

/** A new person (a seller and/or bidder). */
export interface Person {
  /** Person id, from 1000 up. */
  readonly id: number;
  /** Full name. */
  readonly name: string;
  /** E-mail address. */
  readonly emailAddress: string;
  /** Credit card number (16 digits, spaced in fours). */
  readonly creditCard: string;
  /** City. */
  readonly city: string;
  /** US state, two letters (e.g. "OR"). */
  readonly state: string;
  /** Event time, ms since the epoch. */
  readonly dateTime: number;
  /** Padding so a person averages the configured size (Beam: 200 bytes). */
  readonly extra: string;
}

/** A new auction. */
export interface Auction {
  /** Auction id, from 1000 up. */
  readonly id: number;
  /** Item name. */
  readonly itemName: string;
  /** Description. */
  readonly description: string;
  /** Starting bid, cents. */
  readonly initialBid: number;
  /** Reserve price, cents. */
  readonly reserve: number;
  /** Event time, ms since the epoch. */
  readonly dateTime: number;
  /** When the auction closes, ms since the epoch. */
  readonly expires: number;
  /** The seller's person id. */
  readonly seller: number;
  /** Category id, from 10 up. */
  readonly category: number;
  /** Padding (Beam: 500 bytes on average). */
  readonly extra: string;
}

/** A bid on an auction. */
export interface Bid {
  /** The auction's id. */
  readonly auction: number;
  /** The bidder's person id. */
  readonly bidder: number;
  /** Price, cents. */
  readonly price: number;
  /** Channel the bid came through (e.g. "Google", "channel-1234"). */
  readonly channel: string;
  /** URL of the bid. */
  readonly url: string;
  /** Event time, ms since the epoch. */
  readonly dateTime: number;
  /** Padding (Beam: 100 bytes on average). */
  readonly extra: string;
}

/** One Nexmark event: exactly one of `person`, `auction`, `bid` is set, as `type` says. */
export type NexmarkEvent =
  | { readonly type: "person"; readonly person: Person }
  | { readonly type: "auction"; readonly auction: Auction }
  | { readonly type: "bid"; readonly bid: Bid };
